#!/usr/bin/env python3
"""FP16 and BF16 ONNX models of one small CNN, with ONNX Runtime's outputs (issue 29).

    make_fp16_models.py OUT_DIR      # writes OUT_DIR/*.onnx, inputs, references, manifest.json

The float32 model (fp32.onnx) is Conv+Relu, Conv, Add (residual), Mul by a Constant, Sigmoid
(the output `features` [1,8,16,16]) and Relu, MaxPool, GlobalAveragePool, Flatten, MatMul+Add,
then Tanh (`scores` [1,10]) and Softmax (`probs` [1,10]), with seeded random weights. No output
feeds another node: with keep_io_types, onnxconverter-common 1.16 gives such a node the float32
output as its input, a model ONNX Runtime refuses. From it:

  half.onnx            every float tensor FLOAT16, inputs and outputs too: what a `.half()`
                       torch export writes (converted here with numpy, no converter needed)
  converter.onnx       onnxconverter-common's float16.convert_float_to_float16(keep_io_types=False)
  converter_io32.onnx  ... with keep_io_types=True: float32 inputs and outputs, Casts inside
  bf16.onnx            every float tensor BFLOAT16 (ml_dtypes' round to nearest even), inputs and
                       outputs too; biases as int32_data, the rest raw_data
  bf16_weights.onnx    fp32.onnx with bf16.onnx's weights, as float32: ONNX Runtime has no CPU
                       kernels for BF16 Conv or MatMul, so this is the BF16 model's oracle

Inputs: x.npy (float32), x.f16.npy (float16, for the FLOAT16-input models), x.bf16.npy (the
bfloat16-rounded values as float32: numpy has no bfloat16 .npy). References, as float32 .npy:
<model>.<output>.npy, ONNX Runtime on that model and its input (bf16.onnx: bf16_weights.onnx on
x.bf16.npy), and fp32.<output>.npy. manifest.json lists the cases, each with its input file, the
element types the model declares and the oracles to compare braid's outputs with (tolerance in
units of each output's largest |value|). The converter models are left out, with the reason in
manifest.json's "skipped", when onnxconverter-common is not installed.
Used by tests/e2e/fp16_models_test.cc.
"""
import json
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

OUTPUTS = ["features", "scores", "probs"]


def fp32_model(rng):
    def he(*shape):
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
        return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)

    inits = [
        numpy_helper.from_array(he(8, 3, 3, 3), "w1"),
        numpy_helper.from_array((rng.standard_normal(8) * 0.1).astype(np.float32), "b1"),
        numpy_helper.from_array(he(8, 8, 3, 3), "w2"),
        numpy_helper.from_array((rng.standard_normal(8) * 0.1).astype(np.float32), "b2"),
        numpy_helper.from_array((rng.standard_normal((8, 10)) * 0.5).astype(np.float32), "w3"),
        numpy_helper.from_array((rng.standard_normal(10) * 0.1).astype(np.float32), "b3"),
    ]
    scale = numpy_helper.from_array(np.array([1.5], dtype=np.float32), "scale")
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], name="conv2"),
        helper.make_node("Add", ["c2", "r1"], ["a"], name="residual"),
        helper.make_node("Constant", [], ["s"], value=scale, name="scale"),
        helper.make_node("Mul", ["a", "s"], ["m"], name="mul"),
        helper.make_node("Sigmoid", ["m"], ["features"], name="sigmoid"),
        helper.make_node("Relu", ["m"], ["r2"], name="relu2"),
        helper.make_node("MaxPool", ["r2"], ["p"], kernel_shape=[2, 2], strides=[2, 2],
                         name="pool"),
        helper.make_node("GlobalAveragePool", ["p"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["f"], name="flatten"),
        helper.make_node("MatMul", ["f", "w3"], ["mm"], name="fc"),
        helper.make_node("Add", ["mm", "b3"], ["z"], name="fc_bias"),
        helper.make_node("Tanh", ["z"], ["scores"], name="tanh"),
        helper.make_node("Softmax", ["z"], ["probs"], axis=-1, name="softmax"),
    ]
    f = TensorProto.FLOAT
    graph = helper.make_graph(
        nodes, "fp16_cnn", [helper.make_tensor_value_info("x", f, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("features", f, [1, 8, 16, 16]),
         helper.make_tensor_value_info("scores", f, [1, 10]),
         helper.make_tensor_value_info("probs", f, [1, 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def retyped(model, elem_type, convert):
    """`model` with every float tensor converted by `convert` (float32 array -> TensorProto) and
    every float value type set to `elem_type`."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    for i, t in enumerate(g.initializer):
        g.initializer[i].CopyFrom(convert(numpy_helper.to_array(t), t.name))
    for n in g.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.TENSOR and a.t.data_type == TensorProto.FLOAT:
                a.t.CopyFrom(convert(numpy_helper.to_array(a.t), a.t.name))
    for v in list(g.input) + list(g.output) + list(g.value_info):
        if v.type.tensor_type.elem_type == TensorProto.FLOAT:
            v.type.tensor_type.elem_type = elem_type
    return m


def float16_tensor(a, name):
    return numpy_helper.from_array(a.astype(np.float16), name)


def bfloat16_bits(a):
    return np.asarray(a, dtype=np.float32).astype(ml_dtypes.bfloat16).view(np.uint16)


def bfloat16_tensor(a, name):
    t = TensorProto()
    t.name = name
    t.data_type = TensorProto.BFLOAT16
    t.dims.extend(a.shape)
    bits = bfloat16_bits(a).ravel()
    if a.ndim == 1:  # biases as int32_data: the bit patterns, one per int32
        t.int32_data.extend(int(b) for b in bits)
    else:
        t.raw_data = bits.astype("<u2").tobytes()
    return t


def bfloat16_rounded(a):
    return np.asarray(a, dtype=np.float32).astype(ml_dtypes.bfloat16).astype(np.float32)


def run_ort(path, x):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(29)
    base = fp32_model(rng)
    x = rng.uniform(-1, 1, (1, 3, 16, 16)).astype(np.float32)
    x16 = x.astype(np.float16)
    xbf = bfloat16_rounded(x)
    np.save(out / "x.npy", x)
    np.save(out / "x.f16.npy", x16)
    np.save(out / "x.bf16.npy", xbf)

    models = {"fp32": base,
              "half": retyped(base, TensorProto.FLOAT16, float16_tensor),
              "bf16": retyped(base, TensorProto.BFLOAT16, bfloat16_tensor),
              "bf16_weights": retyped(base, TensorProto.FLOAT,
                                      lambda a, n: numpy_helper.from_array(bfloat16_rounded(a), n))}
    skipped = {}
    try:
        from onnxconverter_common import float16
        models["converter"] = float16.convert_float_to_float16(base, keep_io_types=False)
        models["converter_io32"] = float16.convert_float_to_float16(base, keep_io_types=True)
    except ImportError as e:
        skipped["converter"] = skipped["converter_io32"] = (
            f"onnxconverter-common is not installed ({e}); make deps installs it")
    for name, model in models.items():
        onnx.checker.check_model(model)
        onnx.save(model, out / f"{name}.onnx")

    def save_outputs(name, values):
        for o, v in zip(OUTPUTS, values):
            np.save(out / f"{name}.{o}.npy", np.asarray(v, dtype=np.float32))

    save_outputs("fp32", run_ort(out / "fp32.onnx", x))
    fp16_oracle = {"atol": 1e-2, "rtol": 1e-2}  # one fp16 rounding per op in ORT, none in braid
    # bf16 weights and input against float32 ones: 2^-9 relative per value.
    bf16_vs_fp32 = {"atol": 2e-2, "rtol": 2e-2}
    exact_fp32 = {"atol": 1e-4, "rtol": 1e-3}  # the same float32 arithmetic (ort_oracle.h kFp32)
    cases = []
    for name, x_file, x_fed in (("half", "x.f16.npy", x16), ("converter", "x.f16.npy", x16),
                                ("converter_io32", "x.npy", x)):
        if name in skipped:
            continue
        save_outputs(name, run_ort(out / f"{name}.onnx", x_fed))
        io = "float32" if name.endswith("io32") else "float16"
        cases.append({"name": name, "input": x_file, "floats": "float16", "inputs": [io],
                      "outputs": [io] * 3,
                      "oracles": [dict(reference=name, **fp16_oracle),
                                  dict(reference="fp32", **fp16_oracle)]})
    save_outputs("bf16", run_ort(out / "bf16_weights.onnx", xbf))
    cases.append({"name": "bf16", "input": "x.bf16.npy", "floats": "bfloat16",
                  "inputs": ["bfloat16"], "outputs": ["bfloat16"] * 3,
                  "oracles": [dict(reference="bf16", **exact_fp32),
                              dict(reference="fp32", **bf16_vs_fp32)]})
    with open(out / "manifest.json", "w") as f:
        json.dump({"outputs": OUTPUTS, "cases": cases, "skipped": skipped}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
