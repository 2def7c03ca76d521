#!/usr/bin/env bash
# `make models`: exports real torchvision models to models/<name>.onnx with random
# weights, for the framework-form tests (zoo_framework_test.cc). Idempotent: files
# that exist are kept. Uses Debian's CPU-only torch under /usr/bin/python3; PyPI's
# torch pulls gigabytes of CUDA wheels we do not need to trace four CNNs.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! /usr/bin/python3 -c 'import torch, torchvision' 2>/dev/null; then
  echo "models: installing Debian's python3-torch and python3-torchvision (a few minutes)"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    python3-torch python3-torchvision
fi

/usr/bin/python3 scripts/export_torchvision.py --out models/ "$@"
