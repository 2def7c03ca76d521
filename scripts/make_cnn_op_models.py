#!/usr/bin/env python3
"""Small ONNX models for the CNN ops torchvision classifiers and the ONNX model zoo export:
Clip (ReLU6, attributes before opset 11, inputs after), HardSigmoid, HardSwish, ReduceMean
(axes attribute before opset 18, input from 18), LRN, and the blocks they come in
(MobileNetV3's squeeze-excite, MNASNet's mean head, AlexNet's LRN after a conv).

  .venv/bin/python scripts/make_cnn_op_models.py OUT_DIR [NAME ...]

Writes OUT_DIR/<name>.onnx for each model (all of them when no NAME is given), seeded random
weights, checked with onnx.checker. The ORT oracle test (tests/e2e/ort_oracle_test.cc) runs
each on braid and on ONNX Runtime.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

RNG = np.random.default_rng(15)


def const(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def weight(name, shape, scale=0.3):
    return const(name, (RNG.standard_normal(shape) * scale).astype(np.float32))


def model(name, nodes, inputs, outputs, initializers, opset):
    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
        [helper.make_value_info(n, helper.make_tensor_type_proto(TensorProto.FLOAT, None))
         for n in outputs],
        initializers)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                          producer_name="braid-test")
    m.ir_version = 8 if opset < 19 else 9
    m = onnx.shape_inference.infer_shapes(m, strict_mode=True)  # fills the outputs' shapes
    onnx.checker.check_model(m)
    return m


def conv(x, w, out, c_in, c_out, k=3, groups=1, inits=None):
    inits.append(weight(w + ".w", (c_out, c_in // groups, k, k)))
    inits.append(weight(w + ".b", (c_out,), 0.1))
    return helper.make_node("Conv", [x, w + ".w", w + ".b"], [out], name=w, kernel_shape=[k, k],
                            pads=[k // 2] * 4, group=groups)


def clip_models():
    x = [("x", [1, 8, 6, 6])]
    yield model("clip_opset6", [helper.make_node("Clip", ["x"], ["y"], min=0.0, max=6.0)],
                x, ["y"], [], 6)
    # Opset 13 as torch exports ReLU6: constant min and max inputs.
    yield model("clip_opset13",
                [helper.make_node("Clip", ["x", "lo", "hi"], ["y"])],
                x, ["y"], [const("lo", np.float32(0.0)), const("hi", np.float32(6.0))], 13)
    # Only a max (min omitted), then only a min, both from Constant nodes.
    yield model("clip_opset13_one_sided",
                [helper.make_node("Constant", [], ["hi"], value=const("v", np.float32(0.5))),
                 helper.make_node("Clip", ["x", "", "hi"], ["a"]),
                 helper.make_node("Constant", [], ["lo"], value=const("v", np.float32(-0.25))),
                 helper.make_node("Clip", ["a", "lo"], ["y"])],
                x, ["y"], [], 13)
    # MobileNetV2's Conv-BN(folded)-ReLU6: a Conv with a Clip after it, twice.
    inits = []
    yield model("conv_relu6_opset13",
                [conv("x", "c1", "t1", 8, 16, inits=inits),
                 helper.make_node("Clip", ["t1", "lo", "hi"], ["a1"]),
                 conv("a1", "c2", "t2", 16, 16, groups=16, inits=inits),
                 helper.make_node("Clip", ["t2", "lo", "hi"], ["y"])],
                x, ["y"], inits + [const("lo", np.float32(0.0)), const("hi", np.float32(6.0))], 13)


def hard_models():
    x = [("x", [1, 16, 5, 5])]
    yield model("hardsigmoid_opset13",
                [helper.make_node("HardSigmoid", ["x"], ["y"], alpha=0.3, beta=0.4)],
                x, ["y"], [], 13)
    yield model("hardswish_opset14", [helper.make_node("HardSwish", ["x"], ["y"])],
                x, ["y"], [], 14)
    # MobileNetV3's squeeze-excite: GAP -> conv 1x1 -> Relu -> conv 1x1 -> HardSigmoid (torch
    # exports alpha 1/6, beta 0.5) -> Mul(x, scale) broadcast, then a conv -> HardSwish.
    inits = []
    yield model("mobilenetv3_se_block_opset14",
                [conv("x", "dw", "d", 16, 16, groups=16, inits=inits),
                 helper.make_node("HardSwish", ["d"], ["h"]),
                 helper.make_node("GlobalAveragePool", ["h"], ["p"]),
                 conv("p", "fc1", "s1", 16, 8, k=1, inits=inits),
                 helper.make_node("Relu", ["s1"], ["r"]),
                 conv("r", "fc2", "s2", 8, 16, k=1, inits=inits),
                 helper.make_node("HardSigmoid", ["s2"], ["s"], alpha=1.0 / 6, beta=0.5),
                 helper.make_node("Mul", ["s", "h"], ["m"]),
                 conv("m", "proj", "y", 16, 16, k=1, inits=inits)],
                x, ["y"], inits, 14)


def reduce_models():
    x = [("x", [2, 8, 5, 5])]
    yield model("reduce_mean_opset13_keepdims",
                [helper.make_node("ReduceMean", ["x"], ["y"], axes=[-2, -1])], x, ["y"], [], 13)
    yield model("reduce_mean_opset13_all_axes",
                [helper.make_node("ReduceMean", ["x"], ["y"], keepdims=0)], x, ["y"], [], 13)
    yield model("reduce_mean_opset18_axes_input",
                [helper.make_node("ReduceMean", ["x", "axes"], ["y"], keepdims=0)],
                x, ["y"], [const("axes", np.array([1, 3], dtype=np.int64))], 18)
    # MNASNet's head: conv -> Relu -> mean over [2, 3] without keepdims -> Gemm.
    inits = [weight("fc.w", (10, 16)), weight("fc.b", (10,), 0.1)]
    yield model("mnasnet_head_opset13",
                [conv("x", "c", "t", 8, 16, k=1, inits=inits),
                 helper.make_node("Relu", ["t"], ["r"]),
                 helper.make_node("ReduceMean", ["r"], ["m"], axes=[2, 3], keepdims=0),
                 helper.make_node("Gemm", ["m", "fc.w", "fc.b"], ["y"], transB=1)],
                x, ["y"], inits, 13)


def lrn_models():
    x = [("x", [1, 16, 7, 7])]
    yield model("lrn_opset13",
                [helper.make_node("LRN", ["x"], ["y"], size=5, alpha=1e-2, beta=0.75, bias=2.0)],
                x, ["y"], [], 13)
    # AlexNet / GoogLeNet-v1 (ONNX zoo): Conv -> Relu -> LRN(size 5) -> MaxPool.
    inits = []
    yield model("alexnet_lrn_block_opset13",
                [conv("x", "c", "t", 16, 16, inits=inits),
                 helper.make_node("Relu", ["t"], ["r"]),
                 helper.make_node("LRN", ["r"], ["n"], size=5, alpha=1e-4, beta=0.75, bias=1.0),
                 helper.make_node("MaxPool", ["n"], ["y"], kernel_shape=[3, 3], strides=[2, 2])],
                x, ["y"], inits, 13)


def all_models():
    for make in (clip_models, hard_models, reduce_models, lrn_models):
        yield from make()


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    out_dir, wanted = sys.argv[1], set(sys.argv[2:])
    os.makedirs(out_dir, exist_ok=True)
    written = 0
    for m in all_models():
        if wanted and m.graph.name not in wanted:
            continue
        onnx.save(m, os.path.join(out_dir, m.graph.name + ".onnx"))
        written += 1
    if wanted and written != len(wanted):
        print(f"unknown model names among {sorted(wanted)}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
