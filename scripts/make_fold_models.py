#!/usr/bin/env python3
"""Small ONNX models whose constant subgraphs braid folds at import, with ONNX Runtime's values.

    make_fold_models.py OUT_DIR      # writes OUT_DIR/<case>.onnx and OUT_DIR/cases.json
                                     # and OUT_DIR/run_<name>.onnx


Each case is a subgraph computing a tensor `c` from constants and static shapes (Shape of the
graph input `x0`). The model written for braid ends with cf = Cast(c, FLOAT) (when c is not
float) and y = Add(x, cf), so that braid's importer folds everything up to cf and turns cf into
a parameter whose data the test compares with ORT's value of c, computed from the same subgraph
with c as the graph output. Used by src/models/onnx_fold_test.cc.

The run_*.onnx models are whole models that run after folding (a ShuffleNetV2 channel shuffle
with its exported shape arithmetic, a ConstantOfShape-built weight, an opset-11 Softmax over an
inner axis); tests/e2e/ort_oracle_test.cc runs them on braid and on ONNX Runtime.
"""
import json
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

I64 = TensorProto.INT64


def const(name, values, dtype=np.int64):
    return helper.make_node("Constant", [], [name],
                            value=numpy_helper.from_array(np.array(values, dtype=dtype), name))


def shape_of_x0():
    return [helper.make_node("Shape", ["x0"], ["s"])]


X0_SHAPE = [2, 3, 4, 5]

# name -> (opset, nodes computing "c")
CASES = {
    # ShuffleNetV2's channel shuffle: batch, channels // groups, ... from Shape/Gather/Div.
    "shape_gather_div_concat": (13, shape_of_x0() + [
        const("i1", 1), helper.make_node("Gather", ["s", "i1"], ["ch"], axis=0),
        const("g", 3), helper.make_node("Div", ["ch", "g"], ["cpg"]),
        const("ax0", [0]), helper.make_node("Unsqueeze", ["cpg", "ax0"], ["cpg1"]),
        const("m1", [-1]), helper.make_node("Concat", ["m1", "cpg1", "m1"], ["c"], axis=0)]),
    "slice_shape_tail": (13, shape_of_x0() + [
        const("st", [-2]), const("en", [2**62]),
        helper.make_node("Slice", ["s", "st", "en"], ["c"])]),
    "slice_negative_step": (13, [
        const("d", [[1, 2, 3, 4, 5], [6, 7, 8, 9, 10]]), const("st", [-1, 4]), const("en", [-3, 0]),
        const("ax", [0, 1]), const("sp", [-1, -2]),
        helper.make_node("Slice", ["d", "st", "en", "ax", "sp"], ["c"])]),
    "slice_opset9_attrs": (9, shape_of_x0() + [
        helper.make_node("Slice", ["s"], ["c"], starts=[1], ends=[3], axes=[0])]),
    "int_arith": (13, [
        const("a", [7, -7, 9, 100]), const("b", [2, 2, -4, 7]),
        helper.make_node("Div", ["a", "b"], ["q"]), helper.make_node("Mul", ["q", "b"], ["m"]),
        helper.make_node("Sub", ["a", "m"], ["r"]), helper.make_node("Add", ["r", "q"], ["c"])]),
    "float_arith_broadcast": (13, [
        const("a", [[1.5], [2.5]], np.float32), const("b", [4.0, -8.0, 0.5], np.float32),
        helper.make_node("Div", ["a", "b"], ["q"]), helper.make_node("Sub", ["q", "a"], ["c"])]),
    "constant_of_shape": (13, shape_of_x0() + [
        const("i", [1, 3]), helper.make_node("Gather", ["s", "i"], ["hw"]),
        helper.make_node("ConstantOfShape", ["hw"], ["c"],
                         value=numpy_helper.from_array(np.array([0.25], np.float32)))]),
    "constant_of_shape_int": (13, [
        const("sh", [2, 2]),
        helper.make_node("ConstantOfShape", ["sh"], ["c"],
                         value=numpy_helper.from_array(np.array([7], np.int64)))]),
    "range_equal_where": (13, [
        const("r0", 0), const("r1", 10), const("r2", 3),
        helper.make_node("Range", ["r0", "r1", "r2"], ["r"]),
        const("three", 3), helper.make_node("Equal", ["r", "three"], ["eq"]),
        const("zero", 0), helper.make_node("Where", ["eq", "r", "zero"], ["c"])]),
    "range_float": (13, [
        const("r0", 0.5, np.float32), const("r1", 2.2, np.float32), const("r2", 0.5, np.float32),
        helper.make_node("Range", ["r0", "r1", "r2"], ["c"])]),
    "expand": (13, [
        const("v", [[1.0, 2.0, 3.0]], np.float32), const("sh", [2, 1, 3]),
        helper.make_node("Expand", ["v", "sh"], ["c"])]),
    "unsqueeze_squeeze_opset11": (11, [
        const("v", [[4, 5, 6]]),
        helper.make_node("Unsqueeze", ["v"], ["u"], axes=[0, -1]),
        helper.make_node("Squeeze", ["u"], ["c"], axes=[1])]),
    "squeeze_all_opset13": (13, [
        const("v", [[[4], [5]]]), helper.make_node("Squeeze", ["v"], ["c"])]),
    "reshape_zero_minus_one": (13, [
        const("v", np.arange(24).reshape(2, 3, 4).tolist()), const("sh", [0, -1]),
        helper.make_node("Reshape", ["v", "sh"], ["c"])]),
    "cast_chain": (13, [
        const("v", [-2.7, 0.0, 3.9, 0.4], np.float32),
        helper.make_node("Cast", ["v"], ["i"], to=TensorProto.INT64),
        helper.make_node("Cast", ["v"], ["bl"], to=TensorProto.BOOL),
        helper.make_node("Cast", ["bl"], ["bi"], to=TensorProto.INT32),
        helper.make_node("Cast", ["i"], ["i32"], to=TensorProto.INT32),
        helper.make_node("Add", ["i32", "bi"], ["c"])]),
    "gather_2d_negative": (13, [
        const("d", [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], np.float32), const("ix", [[-1, 0], [1, 1]]),
        helper.make_node("Gather", ["d", "ix"], ["c"], axis=1)]),
    # Swin's shifted-window mask: ScatterND into ConstantOfShape, Mod for the padding, Not/Less.
    "mod_scatter_compare": (13, [
        const("a", [7, -7, 7, -7]), const("b", [3, 3, -3, -3]),
        helper.make_node("Mod", ["a", "b"], ["m"]),
        const("sh", [3, 4]),
        helper.make_node("ConstantOfShape", ["sh"], ["z"],
                         value=numpy_helper.from_array(np.array([0], np.int64))),
        const("ix", [[2], [0]]), const("up", [[1, 2, 3, 4], [5, 6, 7, 8]]),
        helper.make_node("ScatterND", ["z", "ix", "up"], ["sc"]),
        helper.make_node("Add", ["sc", "m"], ["s2"]),
        const("two", 2), helper.make_node("Less", ["s2", "two"], ["lt"]),
        helper.make_node("Not", ["lt"], ["nl"]),
        helper.make_node("Greater", ["s2", "two"], ["gt"]),
        helper.make_node("Cast", ["nl"], ["nli"], to=TensorProto.INT64),
        helper.make_node("Cast", ["gt"], ["gti"], to=TensorProto.INT64),
        helper.make_node("Mul", ["nli", "gti"], ["p"]),
        helper.make_node("Add", ["p", "s2"], ["c"])]),
    # torch F.pad's pads as Swin exports them: reversed by Slice, Transpose [1, 0], Reshape.
    "pads_transpose": (13, [
        const("p", [[0, 0], [0, 0], [0, 3], [0, 1]]), const("st", [-1]), const("en", [-2**62]),
        const("ax", [0]), const("sp", [-1]),
        helper.make_node("Slice", ["p", "st", "en", "ax", "sp"], ["r"]),
        helper.make_node("Transpose", ["r"], ["t"], perm=[1, 0]), const("m1", [-1]),
        helper.make_node("Reshape", ["t", "m1"], ["c"])]),
    "transpose_3d_default_perm": (13, [
        const("v", np.arange(24).reshape(2, 3, 4).astype(np.float32).tolist(), np.float32),
        helper.make_node("Transpose", ["v"], ["a"], perm=[1, 2, 0]),
        helper.make_node("Transpose", ["a"], ["c"])]),
    "size_and_shape_start": (15, [
        helper.make_node("Shape", ["x0"], ["s"], start=1, end=-1),
        helper.make_node("Size", ["x0"], ["n"]), const("ax0", [0]),
        helper.make_node("Unsqueeze", ["n", "ax0"], ["n1"]),
        helper.make_node("Concat", ["s", "n1"], ["c"], axis=0)]),
}


def model(nodes, opset, inputs, outputs):
    g = helper.make_graph(nodes, "fold", inputs, outputs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def run_models():
    f = TensorProto.FLOAT
    x = helper.make_tensor_value_info("x", f, [2, 6, 3, 3])
    shuffle = model(shape_of_x0_named("x") + [
        const("i0", 0), helper.make_node("Gather", ["s", "i0"], ["b"], axis=0),
        const("i1", 1), helper.make_node("Gather", ["s", "i1"], ["ch"], axis=0),
        const("g", 2), helper.make_node("Div", ["ch", "g"], ["cpg"]),
        const("ax0", [0]),
        helper.make_node("Unsqueeze", ["b", "ax0"], ["b1"]),
        helper.make_node("Unsqueeze", ["cpg", "ax0"], ["cpg1"]),
        const("g1", [2]), const("hw", [3, 3]), const("m1", [-1]),
        helper.make_node("Concat", ["b1", "g1", "cpg1", "hw"], ["t1"], axis=0),
        helper.make_node("Reshape", ["x", "t1"], ["r1"]),
        helper.make_node("Transpose", ["r1"], ["tr"], perm=[0, 2, 1, 3, 4]),
        helper.make_node("Concat", ["b1", "m1", "hw"], ["t2"], axis=0),
        helper.make_node("Reshape", ["tr", "t2"], ["y"])],
        13, [x], [helper.make_tensor_value_info("y", f, [2, 6, 3, 3])])
    cos = model([
        const("sh", [1, 6, 1, 1]),
        helper.make_node("ConstantOfShape", ["sh"], ["w"],
                         value=numpy_helper.from_array(np.array([0.75], np.float32))),
        helper.make_node("Mul", ["x", "w"], ["y"])],
        13, [x], [helper.make_tensor_value_info("y", f, [2, 6, 3, 3])])
    softmax = model([helper.make_node("Softmax", ["x"], ["y"], axis=1)], 11, [x],
                    [helper.make_tensor_value_info("y", f, [2, 6, 3, 3])])
    return {"shuffle": shuffle, "constant_of_shape_weight": cos, "softmax_opset11_axis1": softmax}


def shape_of_x0_named(name):
    return [helper.make_node("Shape", [name], ["s"])]


def main():
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    x0 = helper.make_tensor_value_info("x0", TensorProto.FLOAT, X0_SHAPE)
    cases = []
    for name, (opset, nodes) in CASES.items():
        oracle = model(nodes, opset, [x0], [helper.make_empty_tensor_value_info("c")])
        sess = ort.InferenceSession(oracle.SerializeToString(), providers=["CPUExecutionProvider"])
        c = sess.run(None, {"x0": np.zeros(X0_SHAPE, np.float32)})[0]
        tail = []
        if c.dtype != np.float32:
            tail.append(helper.make_node("Cast", ["c"], ["cf"], to=TensorProto.FLOAT))
        else:
            tail.append(helper.make_node("Identity", ["c"], ["cf"]))
        shape = list(c.shape) or [1]
        tail.append(helper.make_node("Add", ["x", "cf"], ["y"]))
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)
        y = helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)
        onnx.save(model(nodes + tail, opset, [x0, x], [y]), out / f"{name}.onnx")
        cases.append({"name": name, "shape": list(c.shape),
                      "values": c.astype(np.float64).reshape(-1).tolist()})
    (out / "cases.json").write_text(json.dumps(cases, indent=1))
    for name, m in run_models().items():
        onnx.checker.check_model(m)
        onnx.save(m, out / f"run_{name}.onnx")


if __name__ == "__main__":
    main()
