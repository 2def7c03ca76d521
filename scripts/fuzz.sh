#!/usr/bin/env bash
# Builds the parser fuzzers (libFuzzer + AddressSanitizer, clang) in build-fuzz/ and runs each on
# a seed corpus: onnx_import_fuzz (small valid and broken models), dag_json_fuzz (.dag.json; the
# golden DAGs), schedule_json_fuzz (schedule JSON on the golden diamond; its schedules) and
# protocol_fuzz (inference request bodies, JSON and binary; a few valid requests) and
# cli_flags_fuzz (numbers, cuda:N and --model NAME:FPS in user text; a few flags) and
# user_files_fuzz (.npy inputs, device files, TOP scenarios, config.pbtxt, calibration series; the
# repo's own).
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]   # SECONDS per target, default 60; default all six;
#                                           # exits non-zero when a fuzzer finds a crash
#
# Environment: BRAID_FUZZ_BUILD_DIR (default build-fuzz), CXX_FUZZ (default clang++),
# BRAID_PYTHON (default .venv/bin/python; used only to write the seeds), BRAID_FUZZ_SANITIZE
# (default address; address,undefined adds UBSan, fatal on its first report: a cast of a number
# past its type, a signed overflow; use another BRAID_FUZZ_BUILD_DIR, every library rebuilds).
# Crashing inputs land in $BUILD/fuzz/TARGET/crash-*; replay one with
#   $BUILD/src/models/onnx_import_fuzz $BUILD/fuzz/onnx_import_fuzz/crash-<hash>
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${BRAID_FUZZ_BUILD_DIR:-$root/build-fuzz}
seconds=${1:-60}
sanitize=${BRAID_FUZZ_SANITIZE:-address}
shift || true
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] ||
  targets=(onnx_import_fuzz dag_json_fuzz schedule_json_fuzz protocol_fuzz cli_flags_fuzz
    user_files_fuzz)
cxx=${CXX_FUZZ:-clang++}
python=${BRAID_PYTHON:-$root/.venv/bin/python}

# Every braid library is instrumented for coverage (fuzzer-no-link); the fuzz target itself links
# libFuzzer's main (-fsanitize=fuzzer, in the CMakeLists.txt beside each target).
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER="$cxx" -DBRAID_BUILD_FUZZERS=ON -DBRAID_BUILD_TESTS=OFF \
  -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,$sanitize -fno-sanitize-recover=all -fno-omit-frame-pointer" >/dev/null
ninja -C "$build" -j2 "${targets[@]}"

# Seeds, regenerated each run; each target's corpus (fuzz/TARGET/corpus) grows as it finds coverage.
seeds=$build/fuzz/seeds
mkdir -p "$seeds/onnx_import_fuzz" "$seeds/dag_json_fuzz" "$seeds/schedule_json_fuzz" \
  "$seeds/protocol_fuzz" "$seeds/cli_flags_fuzz" "$seeds/user_files_fuzz"
cp "$root"/tests/golden/*.dag.json "$seeds/dag_json_fuzz/"
cp "$root"/tests/golden/diamond.*.schedule.json "$seeds/schedule_json_fuzz/"

# protocol_fuzz: 2 bytes of Inference-Header-Content-Length (little-endian; ff ff: none), then the
# body, for its model x FP32 [-1,3], ids INT64 [2] (protocol_fuzz.cc).
protocol_seed() {  # FILE JSON [BINARY_PAYLOAD as printf %b escapes]
  local file=$1 header=$2 payload=${3:-} len
  if [[ -z $payload ]]; then
    printf '\xff\xff%s' "$header" >"$file"
  else
    len=${#header}
    printf '%b%s%b' "\\x$(printf %02x $((len & 255)))\\x$(printf %02x $((len >> 8)))" "$header" \
      "$payload" >"$file"
  fi
}
# cli_flags_fuzz: a selector byte (parser: % 5; limits: / 5; cli_flags_fuzz.cc), then the text.
printf '\x00%s' 64 >"$seeds/cli_flags_fuzz/batch"
printf '\x00%s' 99999999999999999999 >"$seeds/cli_flags_fuzz/huge"
printf '\x01%s' 1.5e3 >"$seeds/cli_flags_fuzz/rate"
printf '\x06%s' 0.25 >"$seeds/cli_flags_fuzz/duration"  # 6 % 5: a double, 6 / 5: limits [1]
printf '\x02%s' cuda:3 >"$seeds/cli_flags_fuzz/device"
printf '\x02%s' cuda:99999999999 >"$seeds/cli_flags_fuzz/device_huge"
printf '\x03%s' squeezenet:240:stages >"$seeds/cli_flags_fuzz/model"
printf '\x03%s' squeezenet:1e9 >"$seeds/cli_flags_fuzz/model_huge"
printf '\x04%s' sim:a40x2 >"$seeds/cli_flags_fuzz/cost"
# user_files_fuzz: a selector byte (0 .npy, 1 device file, 2 scenario, 3 config.pbtxt,
# 4 calibration series), then the file.
for f in "$root"/devices/*.json; do { printf '\x01'; cat "$f"; } >"$seeds/user_files_fuzz/device_$(basename "$f")"; done
for f in "$root"/docs/top/*.json; do
  grep -q braid.top/1 "$f" && { printf '\x02'; cat "$f"; } >"$seeds/user_files_fuzz/scenario_$(basename "$f")"
done
printf '\x03%s' 'name: "m"
platform: "onnxruntime_onnx"
max_batch_size: 4
input [ { name: "x" data_type: TYPE_FP32 dims: [ 3, 224, 224 ] } ]
output [ { name: "y" data_type: TYPE_FP16 dims: [ -1 ] } ]
dynamic_batching { max_queue_delay_microseconds: 100 default_queue_policy { max_queue_size: 8 } }' \
  >"$seeds/user_files_fuzz/config"
for f in "$root"/devices/measured/*/calibration.json; do
  { printf '\x04'; cat "$f"; } >"$seeds/user_files_fuzz/calibration_$(basename "$(dirname "$f")")"
done
x_json='{"name":"x","datatype":"FP32","shape":[1,3],"data":[1.5,-2,3e-8]}'
ids_json='{"name":"ids","datatype":"INT64","shape":[2],"data":[7,-9]}'
protocol_seed "$seeds/protocol_fuzz/json" "{\"id\":\"a\",\"inputs\":[$ids_json,$x_json]}"
protocol_seed "$seeds/protocol_fuzz/nested" \
  "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[2,3],\"data\":[[1,2,3],[4,5,6]]},$ids_json],\"outputs\":[{\"name\":\"y\",\"parameters\":{\"binary_data\":true}}]}"
protocol_seed "$seeds/protocol_fuzz/binary" \
  "{\"parameters\":{\"binary_data_output\":true,\"timeout\":100},\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[1,3],\"parameters\":{\"binary_data_size\":12}},{\"name\":\"ids\",\"datatype\":\"INT64\",\"shape\":[2],\"parameters\":{\"binary_data_size\":16}}]}" \
  '\x00\x00\x80\x3f\x00\x00\x00\x40\x00\x00\x40\x40\x05\x00\x00\x00\x00\x00\x00\x00\xfb\xff\xff\xff\xff\xff\xff\xff'
if [[ -x "$python" ]]; then
  "$python" "$root/scripts/make_bad_onnx.py" "$seeds/onnx_import_fuzz"
  "$python" - "$seeds/onnx_import_fuzz" <<'PY'
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
def vi(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)
def w(name, shape):
    return numpy_helper.from_array(np.full(shape, 0.5, np.float32), name)
def i64(name, values):
    return numpy_helper.from_array(np.array(values, np.int64), name)
def save(name, nodes, inputs, outputs, inits, opset=17, meta=None):
    m = helper.make_model(helper.make_graph(nodes, name, inputs, outputs, inits),
                          opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    for k, v in (meta or {}).items():
        m.metadata_props.add(key=k, value=v)
    onnx.save(m, f"{out}/{name}.onnx")

# A braid-style CNN: a Conv with its fused activation, pools, Concat, head, unit hints.
save("cnn", [
    helper.make_node("Pad", ["x", "pads"], ["p"], name="pad", mode="constant"),
    helper.make_node("Conv", ["p", "c1.w", "c1.b"], ["c1.preact"], name="c1", kernel_shape=[3, 3],
                     strides=[1, 1], pads=[0, 0, 0, 0], dilations=[1, 1], group=1),
    helper.make_node("Relu", ["c1.preact"], ["c1"], name="c1.relu"),
    helper.make_node("MaxPool", ["c1"], ["mp"], name="mp", kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1),
    helper.make_node("AveragePool", ["c1"], ["ap"], name="ap", kernel_shape=[2, 2], strides=[2, 2],
                     pads=[0, 0, 0, 0], count_include_pad=1),
    helper.make_node("Concat", ["mp", "ap"], ["cat"], name="cat", axis=1),
    helper.make_node("GlobalAveragePool", ["cat"], ["gap"], name="gap"),
    helper.make_node("Flatten", ["gap"], ["flat"], name="flat", axis=1),
    helper.make_node("Gemm", ["flat", "fc.w", "fc.b"], ["fc"], name="fc", transB=1),
    helper.make_node("Softmax", ["fc"], ["y"], name="softmax", axis=-1),
], [vi("x", ["N", 2, 6, 6])], [vi("y", ["N", 3])],
   [i64("pads", [0, 0, 1, 1, 0, 0, 1, 1]), w("c1.w", [4, 2, 3, 3]), w("c1.b", [4]), w("fc.w", [3, 8]),
    w("fc.b", [3])],
   meta={"braid.unit_hints": '[["mp", "cat"]]', "braid.fused_activations": '["c1.relu"]'})
# Transformer-ish ops, unsorted nodes, constants and aliases.
save("block", [
    helper.make_node("Split", ["t", "split"], ["s0", "s1"], name="split", axis=-1),
    helper.make_node("LayerNormalization", ["x", "g", "b"], ["ln"], name="ln", axis=-1, epsilon=1e-5),
    helper.make_node("MatMul", ["ln", "w"], ["mm"], name="mm"),
    helper.make_node("Constant", [], ["shape"], name="shape", value=i64("v", [0, 2, 2, 2])),
    helper.make_node("Reshape", ["mm", "shape"], ["r"], name="reshape"),
    helper.make_node("Transpose", ["r"], ["t"], name="transpose", perm=[0, 2, 1, 3]),
    helper.make_node("Gelu", ["s0"], ["g0"], name="gelu", approximate="tanh"),
    helper.make_node("Dropout", ["s1"], ["d1"], name="drop"),
    helper.make_node("Identity", ["b"], ["b2"], name="alias"),
    helper.make_node("Mul", ["g0", "d1"], ["m"], name="mul"),
    helper.make_node("Sum", ["m", "g0"], ["y"], name="sum"),
], [vi("x", [1, 2, 4])], [vi("y", [1, 2, 2, 1])],
   [w("g", [4]), w("b", [4]), w("w", [4, 8]), i64("split", [1, 1])], opset=20)
PY
  # .npy seeds as numpy writes them, each after user_files_fuzz's selector byte 0.
  "$python" - "$seeds/user_files_fuzz" <<'PY'
import io, sys
import numpy as np
out = sys.argv[1]
arrays = {"f32": np.arange(6, dtype=np.float32).reshape(2, 3), "f16": np.ones((1, 4), np.float16),
          "i64": np.array([7, -9], np.int64), "bool": np.array([True, False]),
          "scalar": np.float64(2.5), "empty": np.zeros((0, 3), np.int32)}
for name, a in arrays.items():
    b = io.BytesIO()
    np.save(b, a)
    open(f"{out}/npy_{name}", "wb").write(b"\x00" + b.getvalue())
PY
else
  echo "fuzz.sh: $python not found; the ONNX fuzzer starts from an empty corpus" >&2
fi

status=0
for target in "${targets[@]}"; do
  binary=$(find "$build/src" "$build/tools" -name "$target" -type f -perm -u+x | head -n 1)
  corpus=$build/fuzz/$target/corpus
  mkdir -p "$corpus"
  # A dictionary beside the target's source (src/*/TARGET.dict), where there is one.
  dict=$(find "$root/src" -name "$target.dict" | head -n 1)
  echo "== $target: $seconds s"
  "$binary" "$corpus" "$seeds/$target" -max_total_time="$seconds" -max_len=65536 -timeout=10 \
    -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix="$build/fuzz/$target/" \
    ${dict:+-dict="$dict"} || status=1
done
exit $status
