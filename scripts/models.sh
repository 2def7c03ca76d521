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
# Idempotent: models already written are kept. Uses Debian's CPU-only torch under
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

/usr/bin/python3 scripts/export_torchvision.py --out models/ "$@"
