#!/usr/bin/env python3
"""Writes small broken .onnx files that braid must reject with a clear one-line message.

  .venv/bin/python scripts/make_bad_onnx.py OUT_DIR

Files (and what braid's importer reports for each):
  truncated.onnx            a valid model cut in half         -> kInvalidModel "not a valid ONNX model"
  not_onnx.onnx             a text file                       -> kInvalidModel "not a valid ONNX model"
  unsupported_op.onnx       node 'lstm' of type LSTM          -> kUnsupported "node 'lstm': unsupported op type 'LSTM'"
  cycle.onnx                add1 -> relu1 -> add1             -> kInvalidModel "cycle through node ..."
  shape_mismatch.onnx       Conv weights for 4 channels, input has 3 -> kInvalidModel "node 'conv' (Conv): ..."
  missing_initializer.onnx  Conv reads 'conv.w', never defined -> kInvalidModel "node 'conv': input 'conv.w' is not defined ..."
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 8


def model(nodes, inputs, outputs, initializers=(), name="bad"):
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=list(initializers))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    m.ir_version = IR_VERSION
    return m


def tensor(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def weights(name, shape, seed=0):
    data = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return numpy_helper.from_array(data, name)


def conv_model(in_channels, with_weights=True):
    conv = helper.make_node("Conv", ["x", "conv.w"], ["y"], name="conv", kernel_shape=[3, 3])
    relu = helper.make_node("Relu", ["y"], ["z"], name="relu")
    inits = [weights("conv.w", [8, 4, 3, 3])] if with_weights else []
    return model([conv, relu], [tensor("x", [1, in_channels, 8, 8])], [tensor("z", [1, 8, 6, 6])], inits)


def main():
    if len(sys.argv) != 2:
        print("usage: make_bad_onnx.py OUT_DIR", file=sys.stderr)
        return 2
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)

    def write(name, data):
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)

    good = conv_model(4).SerializeToString()
    write("truncated.onnx", good[: len(good) // 2])
    write("not_onnx.onnx", b"this is not an ONNX model\n")

    lstm = helper.make_node("LSTM", ["x", "W", "R"], ["y"], name="lstm", hidden_size=4)
    write("unsupported_op.onnx", model(
        [lstm], [tensor("x", [2, 1, 4])], [tensor("y", [2, 1, 1, 4])],
        [weights("W", [1, 16, 4]), weights("R", [1, 16, 4], 1)]).SerializeToString())

    add = helper.make_node("Add", ["x", "r"], ["a"], name="add1")
    relu = helper.make_node("Relu", ["a"], ["r"], name="relu1")
    write("cycle.onnx", model([add, relu], [tensor("x", [1, 4])], [tensor("a", [1, 4])]).SerializeToString())

    write("shape_mismatch.onnx", conv_model(3).SerializeToString())
    write("missing_initializer.onnx", conv_model(4, with_weights=False).SerializeToString())
    return 0


if __name__ == "__main__":
    sys.exit(main())
