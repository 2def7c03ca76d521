#!/usr/bin/env python3
"""Small ONNX models with Einsum in the forms braid imports (a batched matrix product, up to a
transpose of either operand or of the output), and ONNX's own Einsum node tests in float32.

  .venv/bin/python scripts/make_einsum_models.py OUT_DIR [NODE_TEST_DIR]

Writes to OUT_DIR:
  einsum_maxvit_attention.onnx   torchvision MaxViT's attention at rank 5: Q K^T, + relative
                                 position bias, Softmax, P V (the two equations MaxViT exports)
  einsum_maxvit_equations.onnx   the same two Einsums alone, both results as outputs
  einsum_forms.onnx              other accepted forms: operands swapped, output transposed, a
                                 transposed constant operand, rank 2
  node_<test>.onnx, node_<test>.input_<k>.bin, node_<test>.output_0.bin
                                 for each test_einsum_* under NODE_TEST_DIR (default: Debian's
                                 libonnx-testdata), converted from float64 to float32: braid runs
                                 float32 only, and the expected outputs are ONNX's (numpy's)
Seeded random weights, checked with onnx.checker. tests/e2e/einsum_test.cc runs them on braid
against ONNX Runtime and against the node tests' expected outputs.
"""
import glob
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from make_cnn_op_models import model  # float32 inputs and outputs, shapes inferred, checked

RNG = np.random.default_rng(12)
QK = "B G H I D, B G H J D -> B G H I J"
PV = "B G H I J, B G H J D -> B G H I D"


def weight(name, shape):
    return numpy_helper.from_array(RNG.standard_normal(shape).astype(np.float32), name)


def einsum(equation, inputs, output):
    return helper.make_node("Einsum", inputs, [output], name=output, equation=equation)


def maxvit_models():
    # MaxViT-T's window attention: batch 1, 64 windows (4 here), 2 heads, 49 tokens (7), 32 dims.
    qkv = [(n, [1, 4, 2, 7, 8]) for n in ("q", "k", "v")]
    yield model("einsum_maxvit_attention",
                [einsum(QK, ["q", "k"], "scores"),
                 helper.make_node("Add", ["scores", "bias"], ["biased"]),  # relative positions
                 helper.make_node("Softmax", ["biased"], ["probs"], axis=-1),
                 einsum(PV, ["probs", "v"], "out")],
                qkv, ["out"], [weight("bias", [2, 7, 7])], opset=14)
    yield model("einsum_maxvit_equations",
                [einsum(QK, ["q", "k"], "scores"), einsum(PV, ["scores", "v"], "out")],
                qkv, ["scores", "out"], [], opset=14)


def form_models():
    yield model("einsum_forms",
                [einsum("abji,abkj->abki", ["x", "y"], "swapped"),       # (y x) without transposes
                 einsum("abik,abkj->abji", ["x2", "y2"], "out_t"),       # output transposed
                 einsum("bki,bkj->bij", ["a", "w"], "const_t"),          # constant B, A transposed
                 einsum("ik,jk->ij", ["m", "n"], "rank2")],              # B transposed, no batch
                [("x", [2, 3, 4, 5]), ("y", [2, 3, 6, 4]), ("x2", [2, 3, 4, 5]),
                 ("y2", [2, 3, 5, 6]), ("a", [3, 4, 5]), ("m", [5, 7]), ("n", [6, 7])],
                ["swapped", "out_t", "const_t", "rank2"], [weight("w", [3, 4, 6])], opset=12)


def write_float32(array, path):
    np.ascontiguousarray(array, dtype=np.float32).tofile(path)


def node_tests(node_dir, out_dir):
    for test in sorted(glob.glob(os.path.join(node_dir, "test_einsum_*"))):
        name = "node_" + os.path.basename(test)[len("test_"):]
        m = onnx.load(os.path.join(test, "model.onnx"))
        for v in list(m.graph.input) + list(m.graph.output):
            if v.type.tensor_type.elem_type == TensorProto.DOUBLE:
                v.type.tensor_type.elem_type = TensorProto.FLOAT
        onnx.save(m, os.path.join(out_dir, name + ".onnx"))
        data = os.path.join(test, "test_data_set_0")
        for kind in ("input", "output"):
            for k, pb in enumerate(sorted(glob.glob(os.path.join(data, kind + "_*.pb")))):
                t = onnx.TensorProto()
                with open(pb, "rb") as f:
                    t.ParseFromString(f.read())
                write_float32(numpy_helper.to_array(t),
                              os.path.join(out_dir, f"{name}.{kind}_{k}.bin"))


def main():
    if len(sys.argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    out_dir = sys.argv[1]
    node_dir = sys.argv[2] if len(sys.argv) == 3 else "/usr/share/libonnx-testdata/data/node"
    os.makedirs(out_dir, exist_ok=True)
    for make in (maxvit_models, form_models):
        for m in make():
            onnx.save(m, os.path.join(out_dir, m.graph.name + ".onnx"))
    if os.path.isdir(node_dir):
        node_tests(node_dir, out_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
