#!/usr/bin/env python3
"""Exports every torchvision classifier, a BERT-base and dense-prediction models to ONNX with random weights (`make models`).

For each model NAME this writes, under --out:
  NAME.onnx             batch 1, opset 14, eval mode (BatchNorm folded into Conv, Dropout gone);
                        BatchNorm statistics are those of a random batch (calibrate_batchnorm)
  NAME.INPUT.npy        one seeded input per graph input, named after it (`input` for the CNNs;
                        `input_ids`, `token_type_ids`, `attention_mask` for BERT), so braid and
                        ONNX Runtime run on the same data (`braid run NAME.onnx --input
                        input=NAME.input.npy`, tests/e2e/exported_models_test.cc)
  skipped.txt           the models not written, one per line, with the reason

The classifiers are torchvision 0.14's list_models(module=torchvision.models): 80 models, ViT-B/16
and Swin-T among them, built with weights=None (nothing is downloaded). Debian bookworm packages
no transformers, so BERT-base (Devlin et al. 2019; HuggingFace's BertModel layout) is written here
in plain torch: bert_base at opset 14 (GELU as Erf, LayerNorm decomposed into ReduceMean/Sub/Pow/
Sqrt/Div) and bert_base_opset17 (LayerNorm as one LayerNormalization node).

Dense-prediction models (issue 27, "models from the wild": Resize, dynamic dims) go under
--out/wild/, with their height and width exported as dynamic axes, so braid loads them only with
`--shape input=1x3xHxW`:
  wild/NAME.onnx, wild/NAME.input.npy   as above, opset 17; the input at a fixed size
  wild/NAME.shape                       that size as braid's flag takes it: `input=1x3x224x224`
They are the segmentation models fcn_resnet50, deeplabv3_mobilenet_v3_large and
lraspp_mobilenet_v3_large (output `out`: the 'out' entry of torchvision's dict; bilinear Resize to
the input's size) and two detection backbones with an FPN, resnet18_fpn and
mobilenet_v3_large_fpn (torchvision.models.detection.backbone_utils; outputs the FPN levels
p0... and `pool`; nearest Resize between levels), with BatchNorm2d in place of the detection
backbones' FrozenBatchNorm2d so that calibrate_batchnorm gives them working statistics. They sit
apart from the classifiers so that tests/e2e/exported_models_test.cc, which loads every
models/*.onnx without --shape, does not see them; tests/e2e/wild_models_test.cc runs them.
`scripts/models.sh fcn_resnet50 resnet18_fpn ...` exports only those (a few minutes).

Models whose weights pass protobuf's 2 GiB limit (vit_h_14, regnet_y_128gf) need ONNX external
data, which braid's importer does not read; they are listed in skipped.txt instead.

Idempotent: a model whose .onnx and inputs exist is skipped; files are written to a temporary name
and renamed, so an interrupted run never leaves a file that looks finished.

Needs Debian's python3-torch 1.13 and python3-torchvision 0.14 under /usr/bin/python3.
"""
import argparse
import collections
import inspect
import math
import os
import sys

import numpy as np
import torch
import torchvision

OPSET = 14
SEED = 0
CALIBRATION_BATCH = 4  # random images whose statistics become the BatchNorm running stats
PROTOBUF_LIMIT_BYTES = 2**31  # a serialized ModelProto must stay under 2 GiB


# ------------------------------------------------------------------------------------------------
# BERT-base, random weights: the architecture of HuggingFace's BertModel (embeddings, 12 encoder
# layers, pooler), written with torch.nn so that no transformers package is needed.

class BertConfig:
    vocab_size = 30522
    hidden = 768
    layers = 12
    heads = 12
    intermediate = 3072
    max_positions = 512
    type_vocab_size = 2
    layer_norm_eps = 1e-12
    seq_len = 128  # the exported input length
    padding = 16   # trailing positions masked out in the saved attention_mask


class BertEmbeddings(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.word = torch.nn.Embedding(c.vocab_size, c.hidden)
        self.position = torch.nn.Embedding(c.max_positions, c.hidden)
        self.token_type = torch.nn.Embedding(c.type_vocab_size, c.hidden)
        self.norm = torch.nn.LayerNorm(c.hidden, eps=c.layer_norm_eps)
        self.register_buffer("position_ids", torch.arange(c.max_positions).unsqueeze(0))

    def forward(self, input_ids, token_type_ids):
        positions = self.position_ids[:, : input_ids.shape[1]]
        x = self.word(input_ids) + self.token_type(token_type_ids) + self.position(positions)
        return self.norm(x)


class BertLayer(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.heads, self.head_size = c.heads, c.hidden // c.heads
        self.query = torch.nn.Linear(c.hidden, c.hidden)
        self.key = torch.nn.Linear(c.hidden, c.hidden)
        self.value = torch.nn.Linear(c.hidden, c.hidden)
        self.attention_out = torch.nn.Linear(c.hidden, c.hidden)
        self.attention_norm = torch.nn.LayerNorm(c.hidden, eps=c.layer_norm_eps)
        self.intermediate = torch.nn.Linear(c.hidden, c.intermediate)
        self.gelu = torch.nn.GELU()  # the erf form, as BERT defines it
        self.out = torch.nn.Linear(c.intermediate, c.hidden)
        self.out_norm = torch.nn.LayerNorm(c.hidden, eps=c.layer_norm_eps)

    def split_heads(self, x):
        b, s, _ = x.shape
        return x.view(b, s, self.heads, self.head_size).permute(0, 2, 1, 3)

    def forward(self, x, mask_bias):
        q = self.split_heads(self.query(x))
        k = self.split_heads(self.key(x))
        v = self.split_heads(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_size) + mask_bias
        context = torch.matmul(torch.softmax(scores, dim=-1), v)
        b, _, s, _ = context.shape
        context = context.permute(0, 2, 1, 3).reshape(b, s, self.heads * self.head_size)
        x = self.attention_norm(self.attention_out(context) + x)
        return self.out_norm(self.out(self.gelu(self.intermediate(x))) + x)


class BertModel(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embeddings = BertEmbeddings(c)
        self.layers = torch.nn.ModuleList(BertLayer(c) for _ in range(c.layers))
        self.pooler = torch.nn.Linear(c.hidden, c.hidden)
        for m in self.modules():  # BERT's initializer: N(0, 0.02), zero biases
            if isinstance(m, (torch.nn.Linear, torch.nn.Embedding)):
                torch.nn.init.normal_(m.weight, std=0.02)
            if isinstance(m, torch.nn.Linear):
                torch.nn.init.zeros_(m.bias)

    def forward(self, input_ids, token_type_ids, attention_mask):
        # 0 where attended, -10000 where masked, broadcast over heads and query positions.
        mask_bias = (1.0 - attention_mask[:, None, None, :].to(torch.float32)) * -10000.0
        x = self.embeddings(input_ids, token_type_ids)
        for layer in self.layers:
            x = layer(x, mask_bias)
        pooled = torch.tanh(self.pooler(x[:, 0]))
        return x, pooled


def bert_inputs(c):
    g = torch.Generator().manual_seed(SEED)
    input_ids = torch.randint(0, c.vocab_size, (1, c.seq_len), generator=g, dtype=torch.int64)
    token_type_ids = torch.zeros(1, c.seq_len, dtype=torch.int64)
    token_type_ids[:, c.seq_len // 2:] = 1  # two segments, as in next-sentence pairs
    attention_mask = torch.ones(1, c.seq_len, dtype=torch.int64)
    attention_mask[:, c.seq_len - c.padding:] = 0
    return {"input_ids": input_ids, "token_type_ids": token_type_ids,
            "attention_mask": attention_mask}


# ------------------------------------------------------------------------------------------------
# The list of models: name -> Spec. dynamic_axes is torch.onnx.export's (None: every dim static);
# subdir is where under --out the model goes ("" for the classifiers and BERT).

Spec = collections.namedtuple("Spec", "build inputs outputs opset dynamic_axes subdir",
                              defaults=(None, ""))
WILD_DIR = "wild"
WILD_OPSET = 17
SEGMENTATION_SIZE = 224
FPN_SIZE = 256

def classifier_spec(name):
    kwargs = {"weights": None}
    size = 224
    if name == "googlenet":
        # aux_logits=False: the aux heads only run in training mode anyway.
        kwargs.update(aux_logits=False, init_weights=True, transform_input=False)
    if name == "inception_v3":
        kwargs.update(aux_logits=False, init_weights=True, transform_input=False)
        size = 299

    def build():
        return torchvision.models.get_model(name, **kwargs)

    def inputs():
        g = torch.Generator().manual_seed(SEED)
        return {"input": torch.randn(1, 3, size, size, generator=g)}

    return Spec(build, inputs, ["output"], OPSET)


def bert_spec(opset):
    c = BertConfig()
    return Spec(lambda: BertModel(c), lambda: bert_inputs(c),
                ["last_hidden_state", "pooler_output"], opset)


class OutEntry(torch.nn.Module):
    """torchvision's segmentation models return {'out': ..., 'aux': ...}; this returns 'out'."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)["out"]


class FpnLevels(torch.nn.Module):
    """A BackboneWithFPN returns an OrderedDict of levels; this returns them as a tuple."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return tuple(self.model(x).values())


def image_input(size):
    def inputs():
        g = torch.Generator().manual_seed(SEED)
        return {"input": torch.randn(1, 3, size, size, generator=g)}
    return inputs


def spatial_axes(names):
    """Height and width of the input and of every output dynamic (dims 2 and 3)."""
    return {n: {2: f"{n}_height", 3: f"{n}_width"} for n in ["input"] + names}


def segmentation_spec(name):
    def build():
        return OutEntry(torchvision.models.get_model(name, weights=None, weights_backbone=None,
                                                     aux_loss=False))
    return Spec(build, image_input(SEGMENTATION_SIZE), ["out"], WILD_OPSET, spatial_axes(["out"]),
                WILD_DIR)


def fpn_spec(backbone, levels):
    from torchvision.models.detection import backbone_utils

    outputs = [f"p{i}" for i in range(levels)] + ["pool"]

    def build():
        # BatchNorm2d instead of the default FrozenBatchNorm2d: calibrate_batchnorm sets its
        # statistics (FrozenBatchNorm2d's are fixed at mean 0, variance 1). trainable_layers only
        # sets requires_grad.
        if backbone.startswith("resnet"):
            m = backbone_utils.resnet_fpn_backbone(backbone_name=backbone, weights=None,
                                                   norm_layer=torch.nn.BatchNorm2d,
                                                   trainable_layers=5)
        else:
            # Stages 2-5 (strides 8, 16, 32, 32): the default, the last two, are both at
            # stride 32, so the FPN would only ever resize by 1.
            m = backbone_utils.mobilenet_backbone(backbone_name=backbone, weights=None, fpn=True,
                                                  norm_layer=torch.nn.BatchNorm2d,
                                                  trainable_layers=6, returned_layers=[2, 3, 4, 5])
        return FpnLevels(m)
    return Spec(build, image_input(FPN_SIZE), outputs, WILD_OPSET, spatial_axes(outputs), WILD_DIR)


def wild_specs():
    specs = {name: segmentation_spec(name)
             for name in ["fcn_resnet50", "deeplabv3_mobilenet_v3_large", "lraspp_mobilenet_v3_large"]}
    specs["resnet18_fpn"] = fpn_spec("resnet18", 4)            # levels of strides 4, 8, 16, 32
    specs["mobilenet_v3_large_fpn"] = fpn_spec("mobilenet_v3_large", 4)  # strides 8, 16, 32, 32
    return specs


def all_specs():
    specs = {name: classifier_spec(name)
             for name in sorted(torchvision.models.list_models(module=torchvision.models))}
    specs["bert_base"] = bert_spec(OPSET)
    specs["bert_base_opset17"] = bert_spec(17)  # LayerNorm exports as LayerNormalization from 17
    specs.update(wild_specs())
    return specs


# ------------------------------------------------------------------------------------------------

def calibrate_batchnorm(model, inputs):
    """Sets every BatchNorm's running statistics to those of a random batch.

    Fresh BatchNorm layers hold mean 0 and variance 1, so in eval mode they pass activations
    through unscaled, and with random weights the signal vanishes or explodes with depth:
    GoogLeNet's logits then depend on its input by 2e-12 of their scale (the FC bias is all that
    is left), EfficientNet-B0's are 4e-14 in size. A test comparing such outputs checks almost
    nothing. Statistics of a random batch make every BatchNorm normalize as it would after
    training, so outputs are O(1) and depend on the input. Returns False if there is no BatchNorm.
    """
    norms = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not norms:
        return False
    for m in norms:
        m.reset_running_stats()
        m.momentum = None  # a cumulative average: one batch sets the statistics exactly
    g = torch.Generator().manual_seed(SEED + 1)
    batch = [torch.randn((CALIBRATION_BATCH,) + tuple(x.shape[1:]), generator=g) for x in inputs.values()]
    model.train()
    with torch.no_grad():
        model(*batch)
    model.eval()
    return True


def randomize_zero_linears(model):
    """Gives every Linear whose weight is all zeros seeded N(0, 0.02) weights.

    torchvision initialises some classification heads to zero (ViT's `heads.head`), so with
    random weights the logits are exactly the bias, 0, whatever the input, and a comparison with
    ONNX Runtime has nothing to check. Returns how many layers it changed.
    """
    g = torch.Generator().manual_seed(SEED + 2)
    changed = 0
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.Linear) and not m.weight.any():
                m.weight.copy_(torch.randn(m.weight.shape, generator=g) * 0.02)
                changed += 1
    return changed


def input_path(out_dir, name, input_name):
    return os.path.join(out_dir, f"{name}.{input_name}.npy")


def export(name, spec, out_dir):
    """Returns None when the model is written or present, else the reason it was skipped."""
    build, make_inputs, output_names, opset, dynamic_axes, subdir = spec
    out_dir = os.path.join(out_dir, subdir)
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, f"{name}.onnx")
    torch.manual_seed(SEED)
    inputs = make_inputs()
    shape_path = os.path.join(out_dir, f"{name}.shape") if dynamic_axes else None
    written = [path] + [input_path(out_dir, name, k) for k in inputs] + ([shape_path] if shape_path else [])
    if all(os.path.exists(p) for p in written):
        print(f"models: {path} exists, skipped", flush=True)
        return None
    model = build()
    model.eval()
    randomize_zero_linears(model)
    if any(v.dtype.is_floating_point for v in inputs.values()):
        calibrate_batchnorm(model, inputs)
    weight_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    if weight_bytes >= PROTOBUF_LIMIT_BYTES:
        return (f"{weight_bytes / 2**30:.2f} GiB of weights: past protobuf's 2 GiB limit, the model "
                "needs ONNX external data, which braid's importer does not read")
    for k, v in inputs.items():
        tmp = input_path(out_dir, name, k) + ".tmp.npy"
        np.save(tmp, v.numpy())
        os.replace(tmp, input_path(out_dir, name, k))
    tmp = path + ".tmp"
    # Not under torch.no_grad(): there, torch 1.13's MultiheadAttention takes its fused fast path
    # (aten::_native_multi_head_attention), which has no ONNX export (ViT).
    # Newer PyTorch (a GPU machine's) defaults to the dynamo exporter; this is the TorchScript one.
    legacy = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
    torch.onnx.export(model, tuple(inputs.values()), tmp, opset_version=opset,
                      input_names=list(inputs), output_names=output_names,
                      dynamic_axes=dynamic_axes,
                      do_constant_folding=True, training=torch.onnx.TrainingMode.EVAL, **legacy)
    os.replace(tmp, path)  # never leave a half-written file that would be skipped next time
    if shape_path:  # last: its presence says the model and its input are complete
        with open(shape_path + ".tmp", "w") as f:
            f.writelines(f"{k}={'x'.join(map(str, v.shape))}\n" for k, v in inputs.items())
        os.replace(shape_path + ".tmp", shape_path)
    print(f"models: wrote {path}", flush=True)
    return None


def allow_export_without_onnx():
    """PyTorch >= 2.0's TorchScript exporter imports the `onnx` package at the end of every export
    only to splice in onnx-script custom functions (onnx_proto_utils._add_onnxscript_fn), and
    fails when it is absent. These models define none, and the function then returns the model's
    bytes unchanged: where `onnx` is missing (a GPU machine's pip PyTorch does not bring it),
    that step is made the identity it would have been."""
    try:
        import onnx  # noqa: F401
        return
    except ImportError:
        pass
    import importlib
    for name in ("torch.onnx._internal.torchscript_exporter.onnx_proto_utils",  # 2.9+
                 "torch.onnx._internal.onnx_proto_utils"):  # 2.0-2.8
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        if hasattr(module, "_add_onnxscript_fn"):
            module._add_onnxscript_fn = lambda model_bytes, custom_opsets: model_bytes
            print(f"models: no onnx package: {name}._add_onnxscript_fn is the identity",
                  flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="models/")
    ap.add_argument("--list", action="store_true", help="print the model names and exit")
    ap.add_argument("names", nargs="*", metavar="NAME", help="models to export (default: all)")
    args = ap.parse_args()
    specs = all_specs()
    if args.list:
        print("\n".join(specs))
        return 0
    for name in args.names:
        if name not in specs:
            ap.error(f"unknown model '{name}' (--list prints the {len(specs)} names)")
    os.makedirs(args.out, exist_ok=True)
    allow_export_without_onnx()
    skipped_path = os.path.join(args.out, "skipped.txt")
    skipped = {}
    if os.path.exists(skipped_path):
        with open(skipped_path) as f:
            skipped = dict(line.rstrip("\n").split(": ", 1) for line in f if ": " in line)
    failed = 0
    for name in args.names or specs:
        if name in skipped:
            print(f"models: {name} skipped: {skipped[name]}", flush=True)
            continue
        try:
            reason = export(name, specs[name], args.out)
        except Exception as e:  # one model's exporter failure must not stop the other 82
            failed += 1
            print(f"models: {name} failed to export: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
            continue
        if reason:
            print(f"models: {name} skipped: {reason}", flush=True)
            skipped[name] = reason
            with open(skipped_path, "w") as f:
                f.writelines(f"{k}: {v}\n" for k, v in sorted(skipped.items()))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
