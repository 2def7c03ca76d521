#!/usr/bin/env python3
"""ONNX models that ship inside public packages, as a new user meets them (issue 27).

  .venv/bin/python scripts/fetch_package_models.py --out models/wild     # `make models` runs this

PaddleOCR's text detector (DB, PP-OCRv4: Resize and ConvTranspose), recognizer (SVTR, PP-OCRv4)
and direction classifier (mobile v2.0), exported by paddle2onnx at opsets 11-12, come inside the
`rapidocr-onnxruntime` wheel from PyPI. This downloads that wheel (no dependencies, nothing
installed), copies the three .onnx files out as wild/paddleocr_{det,rec,cls}.onnx, and writes for
each, like scripts/export_torchvision.py does for the torchvision dense-prediction models:
  NAME.input.npy   one seeded input at a fixed size (the detector: a synthetic page of dark bars on
                   light paper, normalized as ImageNet, so that its text map is not all zeros)
  NAME.shape       that size as braid's flag takes it (`x=1x3x320x320`), written last
Every dim but the channels is dynamic in these files (`p2o.DynamicDimension.N`, '?', -1), so braid
loads them only with --shape. tests/e2e/wild_models_test.cc runs them against ONNX Runtime.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import zipfile

import numpy as np

PACKAGE = "rapidocr-onnxruntime==1.4.4"
MODELS = {  # name -> (file in the wheel, input shape)
    "paddleocr_det": ("rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx", (1, 3, 320, 320)),
    "paddleocr_rec": ("rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx", (1, 3, 48, 320)),
    "paddleocr_cls": ("rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx",
                      (1, 3, 48, 192)),
}
SEED = 27


def page(shape, rng):
    """Dark bars (words) on light paper with a little noise, ImageNet-normalized, NCHW."""
    _, _, h, w = shape
    img = np.full((h, w, 3), 0.95, np.float32)
    for row in range(max(1, (h - 20) // 36)):
        y, x = 20 + row * 36, int(rng.integers(10, 60))
        while x < w - 30:
            width = int(rng.integers(8, 20))
            img[y:y + 18, x:x + width] = 0.1
            x += width + int(rng.integers(3, 8))
    img += rng.normal(0, 0.02, img.shape).astype(np.float32)
    mean, std = np.array([0.485, 0.456, 0.406]), np.array([0.229, 0.224, 0.225])
    return ((img - mean) / std).transpose(2, 0, 1)[None].astype(np.float32)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="directory for NAME.onnx, .input.npy, .shape")
    ap.add_argument("names", nargs="*", help="which models (default: all)")
    args = ap.parse_args()
    names = args.names or list(MODELS)
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        ap.error(f"unknown models {unknown}; known: {', '.join(MODELS)}")
    todo = [n for n in names if not os.path.exists(os.path.join(args.out, n + ".shape"))]
    if not todo:
        return 0
    os.makedirs(args.out, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", tmp,
                        PACKAGE], check=True)
        wheel = next(os.path.join(tmp, f) for f in os.listdir(tmp) if f.endswith(".whl"))
        with zipfile.ZipFile(wheel) as z:
            for name in todo:
                member, shape = MODELS[name]
                with open(os.path.join(args.out, name + ".onnx"), "wb") as f:
                    f.write(z.read(member))
                rng = np.random.default_rng(SEED)
                x = page(shape, rng) if name == "paddleocr_det" else \
                    rng.uniform(-1, 1, shape).astype(np.float32)
                np.save(os.path.join(args.out, name + ".input.npy"), x)
                with open(os.path.join(args.out, name + ".shape"), "w") as f:
                    f.write("x=" + "x".join(map(str, shape)) + "\n")
                print(f"fetch_package_models: {name} ({member} of {PACKAGE})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
