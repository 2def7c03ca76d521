#!/bin/bash
# Packs the conformance suite for a GPU machine, beside ../shared/tools/gpu-bundle.sh's bundle
# (which holds braid, the *cuda*test programs and their libraries, but not this test or its data):
# the ONNX backend node tests' binary (tests/conformance) and Debian's libonnx-testdata node cases
# into .gpu/conformance.tar.xz. `scripts/gpu_check.sh OUT precision` runs it on every cuda:0
# backend when the file is there. Run from the project root after gpu-bundle.sh (same BUILD):
#   bash scripts/gpu_conformance_bundle.sh
set -euo pipefail
BUILD=${BUILD:-build-cuda}
DATA=${BRAID_ONNX_NODE_TEST_DIR:-/usr/share/libonnx-testdata/data/node}
cmake --build "$BUILD" -j "${JOBS:-2}" --target onnx_node_test
T=$(mktemp -d)
mkdir -p "$T/bin"
cp "$BUILD/tests/conformance/onnx_node_test" "$T/bin/"
strip "$T/bin/onnx_node_test"
cp -r "$DATA" "$T/node"
mkdir -p .gpu
tar -C "$T" -cJf .gpu/conformance.tar.xz bin node
rm -rf "$T"
du -h .gpu/conformance.tar.xz
