#!/usr/bin/env python3
"""Checks one .onnx file the way a consumer would use it.

  .venv/bin/python scripts/onnx_check.py model.onnx

1. onnx.checker.check_model(full_check=True) (includes ONNX shape inference, strict);
2. an ONNX Runtime InferenceSession on the CPU provider;
3. one run on random inputs of the declared (static) shapes; each output's shape must equal the
   shape the model declares for it.
Prints one JSON line ({"ok": true, ...} or {"ok": false, "error": "..."}). Exits 0 only if every
step passes; otherwise 1, with a one-line reason on stderr (2 for a usage error).
"""
import json
import sys


def first_line(e):
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}"


def check(path, result):
    import numpy as np
    import onnx
    import onnxruntime as ort

    stage = "checker"
    try:
        onnx.checker.check_model(path, full_check=True)
        stage = "session"
        options = ort.SessionOptions()
        options.log_severity_level = 3
        session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        stage = "inputs"
        rng = np.random.default_rng(0)
        feeds = {}
        for i in session.get_inputs():
            if not all(isinstance(d, int) and d > 0 for d in i.shape):
                raise ValueError(f"input '{i.name}' has a dynamic shape {i.shape}")
            if i.type == "tensor(float)":
                feeds[i.name] = rng.standard_normal(i.shape, dtype=np.float32)
            elif i.type == "tensor(int64)":
                feeds[i.name] = rng.integers(0, 2, size=i.shape, dtype=np.int64)
            elif i.type == "tensor(bool)":
                feeds[i.name] = rng.integers(0, 2, size=i.shape) == 1
            else:
                raise ValueError(f"input '{i.name}' has unsupported type {i.type}")
        stage = "run"
        outputs = session.run(None, feeds)
        stage = "outputs"
        shapes = {}
        nonfinite = 0
        for o, v in zip(session.get_outputs(), outputs):
            declared = list(o.shape)
            if all(isinstance(d, int) for d in declared) and list(v.shape) != declared:
                raise ValueError(f"output '{o.name}' has shape {list(v.shape)}, declared {declared}")
            shapes[o.name] = list(v.shape)
            if v.dtype.kind == "f":
                nonfinite += int(np.size(v) - np.count_nonzero(np.isfinite(v)))
        result.update(
            ok=True,
            inputs={k: list(v.shape) for k, v in feeds.items()},
            outputs=shapes,
            nonfinite_outputs=nonfinite,  # reported, not failed: random weights may overflow
        )
    except Exception as e:  # noqa: BLE001 - every failure becomes the one-line reason
        result["error"] = f"{stage}: {first_line(e)}"


def main():
    if len(sys.argv) != 2:
        print("usage: onnx_check.py MODEL.onnx", file=sys.stderr)
        return 2
    result = {"model": sys.argv[1], "ok": False}
    try:
        check(sys.argv[1], result)
    except ImportError as e:
        result["error"] = f"import: {first_line(e)}"
    print(json.dumps(result))
    if not result["ok"]:
        print(f"{sys.argv[1]}: {result['error']}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
