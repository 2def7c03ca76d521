#!/usr/bin/env python3
"""ONNX Runtime as the oracle: runs MODEL.onnx on given inputs, writes raw outputs.

  .venv/bin/python scripts/ort_run.py MODEL.onnx OUT_DIR IN0 [IN1 ...]

Inputs are given in the graph's input order, each a .npy file or a raw .bin file in the input's
declared element type (float32, int64 or bool); an input with dynamic dims must be a .npy file,
whose shape it keeps. The script writes, in OUT_DIR:
  input_<i>.bin, input_<i>.dtype   what it fed (raw, C order) and its numpy dtype name
  output_<i>.bin                   each output as raw float32, in the graph's output order
ORT runs sequentially, one thread, all graph optimizations off, so it computes the graph as
written.
"""
import os
import sys

import numpy as np
import onnxruntime as ort

DTYPES = {"tensor(float)": np.float32, "tensor(int64)": np.int64, "tensor(bool)": np.bool_}


def load_input(info, path):
    dtype = DTYPES.get(info.type)
    if dtype is None:
        raise ValueError(f"input '{info.name}' is {info.type}; this script feeds {', '.join(DTYPES)}")
    data = np.load(path) if path.endswith(".npy") else np.fromfile(path, dtype=dtype)
    if data.dtype != dtype:
        raise ValueError(f"input '{info.name}' is {info.type}, {path} holds {data.dtype}")
    # A dynamic dim (a name, or None) takes the .npy's own shape: how a test runs a model with
    # dynamic dims at the shape it fixed in braid.
    if all(isinstance(d, int) and d > 0 for d in info.shape) or not path.endswith(".npy"):
        data = data.reshape(info.shape)
    return np.ascontiguousarray(data)


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    model, out_dir, inputs = sys.argv[1], sys.argv[2], sys.argv[3:]
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    declared = session.get_inputs()
    if len(declared) != len(inputs):
        print(f"{model}: {len(declared)} inputs, {len(inputs)} given", file=sys.stderr)
        return 2
    os.makedirs(out_dir, exist_ok=True)
    feeds = {}
    for i, (info, path) in enumerate(zip(declared, inputs)):
        try:
            feeds[info.name] = load_input(info, path)
        except ValueError as e:
            print(f"{model}: {e}", file=sys.stderr)
            return 2
        feeds[info.name].tofile(os.path.join(out_dir, f"input_{i}.bin"))
        with open(os.path.join(out_dir, f"input_{i}.dtype"), "w") as f:
            f.write(str(feeds[info.name].dtype))
    for i, value in enumerate(session.run(None, feeds)):
        np.asarray(value, dtype=np.float32).tofile(os.path.join(out_dir, f"output_{i}.bin"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
