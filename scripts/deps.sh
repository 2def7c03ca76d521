#!/usr/bin/env bash
# Installs what braid needs on Debian 12, skipping what is present (idempotent):
# the Debian -dev packages, then .venv with scripts/requirements.txt from PyPI (which brings
# oneDNN: CMake finds it in .venv).
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  cmake ninja-build g++ clang pkg-config
  libonnx-dev libprotobuf-dev protobuf-compiler        # ONNX import/export
  nlohmann-json3-dev libcli11-dev libspdlog-dev libfmt-dev libboost-graph-dev
  libssl-dev                                           # SHA-256 of outputs (braid run --json)
  libcpp-httplib-dev                                   # braid serve, braid load (HTTP)
  libgrpc++-dev protobuf-compiler-grpc                 # braid serve (gRPC)
  libopenmpi-dev openmpi-bin                           # the multi-device executor (mpirun)
  libgtest-dev libgmock-dev libbenchmark-dev
  libonnx-testdata                                     # ONNX's backend node tests
  python3 python3-venv python3-pip python3-dev          # python3-dev: `import braid`
  # braid train (issue 30): PyTorch on OpenBLAS (Debian's torch calls the libblas.so.3
  # alternative: the reference BLAS unless OpenBLAS is installed), with Debian's own NumPy, pytest
  # and matplotlib under /usr/bin/python3 (the venv's NumPy 2 does not fit torch 1.13's ABI).
  python3-torch libopenblas0-pthread python3-pytest python3-matplotlib
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "deps: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

stamp=.venv/.requirements
if [ ! -f "$stamp" ] || ! cmp -s scripts/requirements.txt "$stamp"; then
  echo "deps: creating .venv (scripts/requirements.txt)"
  [ -x .venv/bin/python ] || python3 -m venv .venv
  .venv/bin/pip install -q --disable-pip-version-check -r scripts/requirements.txt
  cp scripts/requirements.txt "$stamp"
fi
