#!/usr/bin/env python3
"""Exports torchvision models to ONNX with random weights (run by `make models`).

Each model is built with weights=None, put in eval mode (so the exporter folds
BatchNorm into Conv and drops Dropout), traced at batch 1 and written to
<out>/<name>.onnx. Files that exist are skipped, so the script is idempotent.
braid's framework-form builders (src/models/zoo/{googlenet,resnet50,
tv_inception_v3,tv_squeezenet}.cc) mirror these graphs; zoo_framework_test.cc
checks that both fuse to the same units and edges.

Needs torch and torchvision (Debian's python3-torch 1.13 under /usr/bin/python3).
"""
import argparse
import os
import sys

import torch
import torchvision

# Opset 13: what torch 1.13 exports most completely; all ops used here exist there.
OPSET = 13


def make_model(name):
    m = torchvision.models
    if name == "googlenet":
        # aux_logits=False: the aux heads only run in training mode anyway.
        return m.googlenet(weights=None, aux_logits=False, init_weights=True,
                           transform_input=False), 224
    if name == "inception_v3":
        return m.inception_v3(weights=None, aux_logits=False, init_weights=True,
                              transform_input=False), 299
    if name == "squeezenet1_0":
        return m.squeezenet1_0(weights=None), 224
    if name == "resnet50":
        return m.resnet50(weights=None), 224
    raise ValueError(f"unknown model {name}")


MODELS = ["googlenet", "inception_v3", "squeezenet1_0", "resnet50"]


def export(name, out_dir):
    path = os.path.join(out_dir, f"{name}.onnx")
    if os.path.exists(path):
        print(f"models: {path} exists, skipped")
        return
    torch.manual_seed(0)
    model, size = make_model(name)
    model.eval()
    x = torch.randn(1, 3, size, size)
    tmp = path + ".tmp"
    with torch.no_grad():
        torch.onnx.export(model, x, tmp, opset_version=OPSET,
                          input_names=["input"], output_names=["output"],
                          do_constant_folding=True,
                          training=torch.onnx.TrainingMode.EVAL)
    os.replace(tmp, path)  # never leave a half-written file that would be skipped next time
    print(f"models: wrote {path}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="models/")
    ap.add_argument("names", nargs="*", metavar="NAME",
                    help="models to export (default: all of " + ", ".join(MODELS) + ")")
    args = ap.parse_args()
    for name in args.names:
        if name not in MODELS:
            ap.error(f"unknown model '{name}' (choose from {', '.join(MODELS)})")
    os.makedirs(args.out, exist_ok=True)
    for name in args.names or MODELS:
        export(name, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
