#!/usr/bin/env bash
# Builds braid's wheel from this checkout (scikit-build-core; build-py/ keeps the build between
# runs), installs it into a scratch directory and imports it from there, away from the checkout:
# what `pip install .` gives a user. The check behind CTest's python_wheel.
#
#   scripts/wheel_check.sh [OUT_DIR]     (default build/wheel)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
python=$src/.venv/bin/python
out=${1:-$src/build/wheel}
rm -rf "$out"
"$python" -m pip wheel "$src" --no-deps --no-build-isolation -q -w "$out"
wheel=$(ls "$out"/braid-*.whl)
target=$(mktemp -d)
trap 'rm -rf "$target"' EXIT
"$python" -m pip install -q --no-deps --target "$target" "$wheel"
cd "$target"
PYTHONPATH=$target "$python" - <<'PY'
import braid, numpy as np
assert braid.__file__.startswith(__import__("os").getcwd()), braid.__file__  # the installed one
s = braid.InferenceSession("squeezenet", scheduler="sequential", cost="roofline",
                           options={"image_size": 64})
x = np.zeros(s.get_inputs()[0].shape, np.float32)
(y,) = s.run(None, {s.get_inputs()[0].name: x})
print("wheel ok:", braid.__file__, s.get_inputs()[0].shape, "->", list(y.shape))
PY
echo "built $(basename "$wheel")"
