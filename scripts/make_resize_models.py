#!/usr/bin/env python3
"""Small ONNX models for every Resize, Upsample and ConvTranspose mode braid imports (issue 27).

  .venv/bin/python scripts/make_resize_models.py OUT_DIR     # write the models (test time)
  .venv/bin/python scripts/make_resize_models.py --check      # where ORT and onnx.reference differ

Each model is one node (a few two) on an input `x` whose spatial dims are dim_params, so braid
loads it only with --shape x=... or --dim NAME=...; tests/e2e/wild_models_test.cc runs each through
`braid run` and compares. For every model NAME this writes, under OUT_DIR:
  NAME.onnx            the model (weights and Resize's roi/scales/sizes are initializers)
  NAME.x.npy           the seeded input, at the shape the manifest fixes
  NAME.expected.npy    the oracle's output `y`: ONNX Runtime (one thread, optimizations off, as
                       scripts/ort_run.py runs it), or onnx.reference.ReferenceEvaluator where ORT
                       departs from the ONNX spec and braid follows the spec (`oracle` says which)
  manifest.json        [{name, flags, shape, oracle, why, known_issue, ops, atol, rtol}]: `flags` is
                       what `braid run` needs to fix the dynamic dims, `shape` the input's fixed
                       shape, `oracle` ort, reference or reference_pads and `why` the reason
Nothing is downloaded; every weight and input comes from a fixed seed.

Which oracle: ORT, except where ORT and onnx.reference disagree and braid follows onnx.reference:
Resize with a scale whose in * scale is not whole under align_corners (ONNX's node tests agree),
pytorch_half_pixel or downscaled asymmetric nearest (SCALE_NOT_SIZE), and ConvTranspose's
output_shape pads (REFERENCE_PADS). Where braid computes in * scale in float32, as ORT and ONNX's
shape inference do, the oracle is ORT (`ort_not_reference`). Resize-10 and Upsample have no
onnx.reference; braid follows ORT's nearest rounding there ("simple": floor when upscaling, ceil when downscaling). Writing the models fails
when a case's oracle no longer fits (ORT differs from onnx.reference on an `ort` case, or agrees on
a `reference` one); --check prints the comparison for every case.
"""
import argparse
import json
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

SEED = 27
# One-node float32 kernels: braid's reference and CPU kernels against ORT's, both in float32
# (braid accumulates Resize taps in double). Cubic and antialias filters sum more taps.
ATOL, RTOL = 1e-5, 1e-4


class Case:
    """One model: a graph on input x [N, C, h, w] (h, w dynamic) with output y."""

    def __init__(self, name, opset, channels=2, hw=(5, 7), by_dim=False, oracle="ort", why=""):
        self.name, self.opset = name, opset
        self.shape = [1, channels, hw[0], hw[1]]
        self.by_dim = by_dim  # fixed with --dim h=.. --dim w=.. instead of --shape x=...
        self.oracle, self.why = oracle, why
        self.nodes, self.inits = [], []

    def const(self, data, dtype=np.float32):
        name = f"c{len(self.inits)}"
        self.inits.append(numpy_helper.from_array(np.asarray(data, dtype=dtype), name))
        return name

    def model(self):
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, self.shape[:2] + ["h", "w"])
        y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
        graph = helper.make_graph(self.nodes, self.name, [x], [y], self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)])
        model.ir_version = 9 if self.opset >= 19 else 8 if self.opset >= 15 else 7
        # y's type and (symbolic) shape come from ONNX's shape inference.
        model = onnx.shape_inference.infer_shapes(model, strict_mode=True)
        onnx.checker.check_model(model, full_check=True)
        return model


def resize(name, opset=13, scales=None, sizes=None, roi=None, hw=(5, 7), oracle="ort", why="",
           by_dim=False, **attrs):
    """Resize (opset >= 11: X, roi, scales, sizes; opset 10: X, scales)."""
    c = Case(name, opset, hw=hw, by_dim=by_dim, oracle=oracle, why=why)
    if opset < 11:
        inputs = ["x", c.const(scales)]
    else:  # opsets 11-12 require roi and scales, empty when unused; 13 on may leave them out
        empty = "" if opset >= 13 else c.const([])
        inputs = ["x", c.const(roi) if roi is not None else empty,
                  c.const(scales) if scales is not None else empty,
                  c.const(sizes, np.int64) if sizes is not None else ""]
        while inputs[-1] == "":
            inputs.pop()
    c.nodes.append(helper.make_node("Resize", inputs, ["y"], **attrs))
    return c


def upsample(name, opset, scales, mode="nearest"):
    c = Case(name, opset)
    if opset < 9:
        c.nodes.append(helper.make_node("Upsample", ["x"], ["y"], mode=mode, scales=scales))
    else:
        c.nodes.append(helper.make_node("Upsample", ["x", c.const(scales)], ["y"], mode=mode))
    return c


def conv_transpose(name, rng, channels=4, out_channels=6, kernel=(3, 3), group=1, bias=True,
                   hw=(5, 7), oracle="ort", why="", by_dim=False, **attrs):
    c = Case(name, 13, channels=channels, hw=hw, by_dim=by_dim, oracle=oracle, why=why)
    w = rng.uniform(-0.5, 0.5, (channels, out_channels // group) + tuple(kernel))
    inputs = ["x", c.const(w)]
    if bias:
        inputs.append(c.const(rng.uniform(-0.5, 0.5, out_channels)))
    c.nodes.append(helper.make_node("ConvTranspose", inputs, ["y"], group=group, **attrs))
    return c


# Why a case's oracle is onnx.reference rather than ORT (see the module docstring).
SCALE_NOT_SIZE = ("ORT maps coordinates with the rounded output size (out/in), onnx.reference and "
                  "braid with the given scale; they differ where in * scale is not whole")
# ConvTranspose output_shape without auto_pad: onnx.reference keeps the begin pads at 0 and ends
# where output_shape says (braid does the same); ORT splits the total as the spec's text does
# (begin total - total/2). onnx.reference's own evaluator fails when output_shape is below the
# natural size (col2im shape error), so the expected output is ORT's on the same node with
# onnx.reference's pads written out.
REFERENCE_PADS = ("onnx.reference's pads (begin 0, end natural - output_shape), computed as ORT's "
                  "output for those explicit pads; ORT itself splits them as the spec's text does")


def cases():
    rng = np.random.default_rng(SEED)
    out = []
    # Nearest: every nearest_mode under the coordinate transforms torch, TF and ONNX use; x2 on H
    # (asymmetric lands on .5 ties, where prefer_floor and prefer_ceil differ) and x1.5 on W.
    for mode in ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]:
        for ct in ["half_pixel", "asymmetric", "align_corners"]:
            # 7 * 1.5 = 10.5: align_corners maps with (7-1)/(10.5-1) in onnx.reference, with
            # (7-1)/(10-1) in ORT; ceil happens to round both the same way.
            differ = ct == "align_corners" and mode != "ceil"
            out.append(resize(f"nearest_{mode}_{ct}", scales=[1, 1, 2.0, 1.5], mode="nearest",
                              nearest_mode=mode, coordinate_transformation_mode=ct,
                              by_dim=ct == "asymmetric",
                              oracle="reference" if differ else "ort",
                              why=SCALE_NOT_SIZE if differ else ""))
    out.append(resize("nearest_align_corners_sizes", sizes=[1, 2, 9, 13], mode="nearest",
                      nearest_mode="round_prefer_ceil", coordinate_transformation_mode="align_corners"))
    out.append(resize("nearest_floor_pytorch_half_pixel", scales=[1, 1, 1.6, 0.6], mode="nearest",
                      nearest_mode="floor", coordinate_transformation_mode="pytorch_half_pixel",
                      oracle="reference", why=SCALE_NOT_SIZE))
    out.append(resize("nearest_floor_pytorch_half_pixel_x2", scales=[1, 1, 2.0, 0.5], hw=(5, 8),
                      mode="nearest", nearest_mode="floor",
                      coordinate_transformation_mode="pytorch_half_pixel"))
    # tf_half_pixel_for_nn exists in opsets 11-12 only (onnx.reference does not implement it).
    out.append(resize("nearest_tf_half_pixel_for_nn", opset=11, scales=[1, 1, 2.4, 1.3],
                      mode="nearest", coordinate_transformation_mode="tf_half_pixel_for_nn"))
    out.append(resize("nearest_down_asymmetric", scales=[1, 1, 0.6, 0.5], hw=(9, 11),
                      mode="nearest", nearest_mode="floor",
                      coordinate_transformation_mode="asymmetric", oracle="reference",
                      why=SCALE_NOT_SIZE))
    out.append(resize("nearest_down_asymmetric_x05", scales=[1, 1, 0.5, 0.25], hw=(10, 12),
                      mode="nearest", nearest_mode="floor",
                      coordinate_transformation_mode="asymmetric"))
    out.append(resize("nearest_sizes", sizes=[1, 2, 12, 4], mode="nearest"))
    # Linear: every coordinate transform, up and down, and pytorch_half_pixel's one-pixel output.
    for ct in ["half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"]:
        differ = ct == "align_corners"  # 7 * 1.75 and 9 * 0.6 are not whole
        out.append(resize(f"linear_{ct}", scales=[1, 1, 2.0, 1.75], mode="linear",
                          coordinate_transformation_mode=ct,
                          oracle="reference" if differ else "ort",
                          why=SCALE_NOT_SIZE if differ else ""))
        out.append(resize(f"linear_down_{ct}", scales=[1, 1, 0.5, 0.6], hw=(10, 9), mode="linear",
                          coordinate_transformation_mode=ct,
                          oracle="reference" if differ else "ort",
                          why=SCALE_NOT_SIZE if differ else ""))
    # torch's F.interpolate(size=..., mode="bilinear", align_corners=True) exports sizes.
    out.append(resize("linear_align_corners_sizes", sizes=[1, 2, 9, 13], mode="linear",
                      coordinate_transformation_mode="align_corners"))
    out.append(resize("linear_pytorch_half_pixel_size1", sizes=[1, 2, 3, 1], mode="linear",
                      coordinate_transformation_mode="pytorch_half_pixel"))
    # Cubic: both common coefficients, exclude_outside, downscaling.
    out.append(resize("cubic_half_pixel", scales=[1, 1, 2.0, 1.5], mode="cubic"))
    out.append(resize("cubic_a05_asymmetric", scales=[1, 1, 1.6, 2.0], mode="cubic",
                      cubic_coeff_a=-0.5, coordinate_transformation_mode="asymmetric"))
    out.append(resize("cubic_exclude_outside_align_corners", scales=[1, 1, 2.0, 1.5], mode="cubic",
                      exclude_outside=1, coordinate_transformation_mode="align_corners",
                      oracle="reference", why=SCALE_NOT_SIZE))
    out.append(resize("cubic_align_corners_sizes", sizes=[1, 2, 9, 13], mode="cubic",
                      coordinate_transformation_mode="align_corners"))
    out.append(resize("cubic_down", scales=[1, 1, 0.6, 0.7], hw=(10, 9), mode="cubic",
                      exclude_outside=1))
    # tf_crop_and_resize: a roi reaching past the input on two sides, extrapolation_value.
    roi = [0, 0, 0.2, -0.25, 1, 1, 1.1, 0.95]
    out.append(resize("tf_crop_and_resize_linear", roi=roi, sizes=[1, 2, 6, 8], mode="linear",
                      coordinate_transformation_mode="tf_crop_and_resize",
                      extrapolation_value=7.5))
    out.append(resize("tf_crop_and_resize_nearest", roi=roi, sizes=[1, 2, 7, 5], mode="nearest",
                      coordinate_transformation_mode="tf_crop_and_resize",
                      extrapolation_value=-2.0))
    out.append(resize("tf_crop_and_resize_cubic", roi=roi, sizes=[1, 2, 6, 6], mode="cubic",
                      coordinate_transformation_mode="tf_crop_and_resize"))
    # Opset 11: roi and scales are required inputs (empty when unused).
    out.append(resize("opset11_scales_align_corners", opset=11, scales=[1, 1, 2.0, 1.5],
                      mode="linear", coordinate_transformation_mode="align_corners",
                      oracle="reference", why=SCALE_NOT_SIZE))
    out.append(resize("opset11_sizes_cubic", opset=11, sizes=[1, 2, 8, 10], mode="cubic"))
    # Opset 18: axes, keep_aspect_ratio_policy, antialias.
    out.append(resize("opset18_axes_scales", opset=18, scales=[2.0, 1.5], axes=[2, 3],
                      mode="linear"))
    out.append(resize("opset18_axes_sizes", opset=18, sizes=[9, 4], axes=[3, 2], mode="nearest"))
    out.append(resize("opset18_not_larger", opset=18, sizes=[12, 12], axes=[2, 3], mode="linear",
                      keep_aspect_ratio_policy="not_larger"))
    out.append(resize("opset18_not_smaller", opset=18, sizes=[8, 8], axes=[2, 3], mode="nearest",
                      keep_aspect_ratio_policy="not_smaller"))
    out.append(resize("opset18_antialias_linear", opset=18, scales=[1, 1, 0.5, 0.4], hw=(12, 15),
                      mode="linear", antialias=1))
    out.append(resize("opset18_antialias_cubic", opset=18, scales=[1, 1, 0.6, 0.35], hw=(12, 15),
                      mode="cubic", antialias=1))
    # Opset 19: half_pixel_symmetric.
    out.append(resize("opset19_half_pixel_symmetric", opset=19, scales=[1, 1, 1.7, 0.6],
                      mode="linear", coordinate_transformation_mode="half_pixel_symmetric"))
    # Resize-10 and Upsample: asymmetric coordinates, ORT's "simple" nearest rounding (floor when
    # upscaling, ceil when downscaling; onnx.reference implements neither op at these opsets).
    out.append(resize("opset10_nearest_up", opset=10, scales=[1, 1, 2.0, 1.5], mode="nearest"))
    out.append(resize("opset10_nearest_down", opset=10, scales=[1, 1, 0.6, 0.5], hw=(9, 11),
                      mode="nearest"))
    out.append(resize("opset10_linear", opset=10, scales=[1, 1, 1.5, 2.0], mode="linear"))
    out.append(upsample("upsample9_nearest", 9, [1, 1, 2.0, 3.0]))
    out.append(upsample("upsample9_linear", 9, [1, 1, 2.0, 1.5], mode="linear"))
    out.append(upsample("upsample7_nearest", 7, [1.0, 1.0, 3.0, 2.0]))
    # ConvTranspose.
    out.append(conv_transpose("convt_basic", rng))
    out.append(conv_transpose("convt_stride2_pads_output_padding", rng, strides=[2, 2],
                              pads=[1, 1, 1, 1], output_padding=[1, 1]))
    out.append(conv_transpose("convt_groups", rng, channels=4, out_channels=6, group=2,
                              strides=[2, 1], by_dim=True))
    out.append(conv_transpose("convt_depthwise", rng, channels=3, out_channels=3, group=3,
                              kernel=(4, 4), strides=[2, 2], pads=[1, 1, 1, 1], bias=False))
    out.append(conv_transpose("convt_dilations_asymmetric_pads", rng, kernel=(2, 3),
                              strides=[3, 2], dilations=[2, 3], pads=[0, 1, 2, 0]))
    out.append(conv_transpose("convt_same_upper", rng, strides=[2, 2], auto_pad="SAME_UPPER"))
    out.append(conv_transpose("convt_same_lower", rng, kernel=(4, 4), strides=[2, 3],
                              auto_pad="SAME_LOWER"))
    out.append(conv_transpose("convt_output_shape", rng, strides=[2, 2], output_shape=[10, 13],
                              oracle="reference_pads", why=REFERENCE_PADS))
    out.append(conv_transpose("convt_output_shape_larger", rng, strides=[2, 2],
                              output_shape=[12, 15]))
    out.append(conv_transpose("convt_output_shape_same_upper", rng, strides=[2, 2],
                              output_shape=[9, 13], auto_pad="SAME_UPPER"))
    out.append(conv_transpose("convt_output_shape_same_lower", rng, strides=[2, 2],
                              output_shape=[9, 13], auto_pad="SAME_LOWER"))
    # A decoder block as FCN and text detectors (DB, EAST) end: ConvTranspose x2, then Resize x2.
    c = conv_transpose("convt_then_resize", rng, channels=4, out_channels=2, kernel=(2, 2),
                       strides=[2, 2])
    c.nodes[-1].output[0] = "t"
    c.nodes.append(helper.make_node("Resize", ["t", "", c.const([1, 1, 2.0, 2.0])], ["y"],
                                    mode="linear"))
    out.append(c)
    return out


# Cases that once departed from both oracles (issue 27's review): kept as regular cases.
SCALE_IN_FLOAT = ("braid, ORT and ONNX's shape inference compute in * scale in float32 (1.8f * 5 "
                  "is 9); onnx.reference in double (8)")


def fixed_issues():
    return [
        # Opset 18 keep_aspect_ratio_policy on every axis: libonnx 1.12's shape inference, which
        # braid cross-checks, ignores the policy; braid leaves such a Resize out of the check.
        resize("opset18_not_larger_all_axes", opset=18, sizes=[1, 2, 12, 12], mode="linear",
               keep_aspect_ratio_policy="not_larger", axes=[0, 1, 2, 3]),
        resize("scale_rounding_float", scales=[1, 1, 1.8, 2.0], mode="linear",
               oracle="ort_not_reference", why=SCALE_IN_FLOAT),
        # A roi edge at -0.3 of 7 pixels: x_original is 0 in float32, -1e-7 in double.
        resize("tf_crop_and_resize_edge", roi=[0, 0, 0.2, -0.3, 1, 1, 1.1, 0.9],
               sizes=[1, 2, 7, 5], mode="nearest",
               coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=-2.0),
    ]


# Where braid and both oracles part ways: written like the others, with `known_issue` set in the
# manifest; the test runs them and prints what it sees without failing. None today.
def known_issues():
    return []


def ort_output(model, x):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})[0]


def reference_output(model, x):
    """onnx.reference's output, or the exception where it cannot run the model."""
    try:
        return ReferenceEvaluator(model).run(None, {"x": x})[0]
    except Exception as e:  # noqa: BLE001 -- any failure means "no reference answer"
        return e


def reference_pads_output(model, x):
    """ORT's output for the one ConvTranspose with output_shape replaced by onnx.reference's pads."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    node = model.graph.node[0]
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    w = next(numpy_helper.to_array(t) for t in model.graph.initializer if t.name == node.input[1])
    strides = attrs.get("strides", [1, 1])
    dilations = attrs.get("dilations", [1, 1])
    output_padding = attrs.get("output_padding", [0, 0])
    end = []
    for i in range(2):
        natural = (strides[i] * (x.shape[2 + i] - 1) + output_padding[i]
                   + dilations[i] * (w.shape[2 + i] - 1) + 1)
        end.append(natural - attrs["output_shape"][i])
    kept = [a for a in node.attribute if a.name != "output_shape"]
    del node.attribute[:]
    node.attribute.extend(kept + [helper.make_attribute("pads", [0, 0] + end)])
    del model.graph.output[0].type.tensor_type.shape.dim[:]
    return ort_output(model, x)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", nargs="?", help="directory to write the models into")
    ap.add_argument("--check", action="store_true",
                    help="print where ORT and onnx.reference disagree; write nothing")
    args = ap.parse_args()
    if not args.out and not args.check:
        ap.error("give OUT_DIR or --check")
    rng = np.random.default_rng(SEED + 1)
    manifest, stale = [], []
    if args.out:
        os.makedirs(args.out, exist_ok=True)
    known = known_issues()
    for c in cases() + fixed_issues() + known:
        model = c.model()
        x = rng.uniform(-1, 1, c.shape).astype(np.float32)
        ours = ort_output(model, x)
        spec = reference_output(model, x)
        if isinstance(spec, Exception):
            agree, diff = None, f"onnx.reference fails: {str(spec).splitlines()[0][:80]}"
        elif ours.shape != spec.shape:
            agree, diff = False, f"shapes {ours.shape} vs {spec.shape}"
        else:
            agree = bool(np.allclose(ours, spec, atol=ATOL, rtol=RTOL))
            diff = f"max |ort - reference| {np.abs(ours - spec).max():.3g}"
        if args.check:
            print(f"{c.name:42s} {c.oracle:15s} {'agree' if agree else diff}")
            continue
        # Keep `oracle` honest: ORT only where onnx.reference agrees or cannot answer, and
        # onnx.reference only where ORT differs.
        if c not in known and ((c.oracle == "ort" and agree is False) or
                               (c.oracle in ("reference", "ort_not_reference") and agree)):
            stale.append(f"{c.name}: oracle {c.oracle}, but {diff if agree is False else 'they agree'}")
        if c.oracle == "reference":
            expected = spec
        elif c.oracle == "reference_pads":
            expected = reference_pads_output(model, x)
        else:
            expected = ours
        onnx.save(model, os.path.join(args.out, f"{c.name}.onnx"))
        np.save(os.path.join(args.out, f"{c.name}.x.npy"), x)
        np.save(os.path.join(args.out, f"{c.name}.expected.npy"), expected.astype(np.float32))
        h, w = c.shape[2:]
        flags = (["--dim", f"h={h}", "--dim", f"w={w}"] if c.by_dim
                 else ["--shape", "x=" + "x".join(map(str, c.shape))])
        manifest.append({"name": c.name, "flags": flags, "shape": c.shape, "oracle": c.oracle,
                         "why": c.why, "known_issue": c in known,
                         "ops": sorted({n.op_type for n in model.graph.node}),
                         "atol": ATOL, "rtol": RTOL})
    if stale:
        print("make_resize_models: the oracle of these no longer fits:\n  " + "\n  ".join(stale),
              file=sys.stderr)
        return 1
    if args.out:
        with open(os.path.join(args.out, "manifest.json"), "w") as f:
            json.dump(manifest, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
