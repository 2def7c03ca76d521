#!/usr/bin/env python3
"""ONNX Runtime as the oracle: runs MODEL.onnx on raw float32 inputs, writes raw float32 outputs.

int64 and bool inputs are read as float32 values and converted; outputs of any dtype are
written as float32 values.

  .venv/bin/python scripts/ort_run.py MODEL.onnx OUT_DIR IN0.bin [IN1.bin ...]

Inputs are given in the graph's input order; outputs are written as OUT_DIR/output_<i>.bin in
the graph's output order. ORT runs sequentially, one thread, all graph optimizations off, so it
computes the graph as written.
"""
import os
import sys

import numpy as np
import onnxruntime as ort


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
    # int64 and bool inputs arrive as float32 values too (braid converts the same way).
    dtypes = {"tensor(float)": np.float32, "tensor(int64)": np.int64, "tensor(bool)": np.bool_}
    feeds = {}
    for info, path in zip(declared, inputs):
        data = np.fromfile(path, dtype=np.float32)
        if info.type == "tensor(int64)":
            data = np.rint(data)
        feeds[info.name] = data.reshape(info.shape).astype(dtypes.get(info.type, np.float32))
    os.makedirs(out_dir, exist_ok=True)
    for i, value in enumerate(session.run(None, feeds)):
        np.asarray(value, dtype=np.float32).tofile(os.path.join(out_dir, f"output_{i}.bin"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
