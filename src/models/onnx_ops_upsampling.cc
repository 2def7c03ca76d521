// ONNX import, the upsampling ops' rows of the op table (onnx_ops.cc): ConvTranspose, Resize and
// Upsample, as detectors, segmentation and text-detection models export them.
#include <algorithm>
#include <cmath>
#include <utility>

#include "base/error.h"
#include "models/onnx_ops.h"

namespace braid::models::onnx_detail {
namespace {

using ir::OpKind;
constexpr auto kBad = ErrorCode::kInvalidModel;
constexpr auto kUnsupported = ErrorCode::kUnsupported;

}  // namespace

// Pads as ONNX's reference resolves them: explicit pads; auto_pad SAME_* splits the padding
// that gives output_shape (default in * stride), the odd one at the end (UPPER) or begin
// (LOWER); output_shape without auto_pad keeps the begin at 0 and ends where output_shape says
// (a negative end pad: rows past the natural size hold the bias).
ir::OpAttrs import_conv_transpose(const OpContext& c) {
  BRAID_CHECK(c.inputs.size() >= 2, kBad, c.who(), " (ConvTranspose): needs input and weights");
  const ir::Shape& x = c.inputs[0].shape;
  const ir::Shape& w = c.inputs[1].shape;
  BRAID_CHECK(x.size() == 4 && w.size() == 4, kUnsupported, c.who(),
              ": only 2-D ConvTranspose is supported (input ", ir::to_string(x), ", weights ",
              ir::to_string(w), ")");
  ir::ConvTransposeAttrs a;
  a.kernel = c.attrs.get_array<2>("kernel_shape", {w[2], w[3]}, true);
  a.stride = c.attrs.get_array<2>("strides", {1, 1}, true);
  a.dilation = c.attrs.get_array<2>("dilations", {1, 1}, true);
  a.output_padding = c.attrs.get_array<2>("output_padding", {0, 0}, false);
  a.groups = c.attrs.get_int("group", 1);
  BRAID_CHECK(a.groups >= 1 && a.groups <= kMaxSize, kBad, c.who(), ": bad group ", a.groups);
  const std::string mode = c.attrs.get_string("auto_pad", "NOTSET");
  BRAID_CHECK(mode == "NOTSET" || mode == "VALID" || mode == "SAME_UPPER" || mode == "SAME_LOWER",
              kUnsupported, c.who(), ": auto_pad '", mode, "' is not supported");
  std::optional<std::vector<int64_t>> shape = c.attrs.get_ints("output_shape");
  if (shape) {
    BRAID_CHECK(shape->size() == 2 || shape->size() == 4, kBad, c.who(), ": output_shape has ",
                shape->size(), " entries, expected 2");
    if (shape->size() == 4) shape->erase(shape->begin(), shape->begin() + 2);
    for (int64_t d : c.attrs.bounded("output_shape", *shape))
      BRAID_CHECK(d > 0, kBad, c.who(), ": output_shape entry ", d, " is not positive");
  }
  const bool same = mode == "SAME_UPPER" || mode == "SAME_LOWER";
  if (!same && !shape) {
    if (mode == "NOTSET") a.pads = c.attrs.get_array<4>("pads", {0, 0, 0, 0}, false);
    return a;
  }
  BRAID_CHECK(!c.attrs.get_ints("pads") || !same, kBad, c.who(), ": both pads and auto_pad=", mode,
              " are set");
  for (int i = 0; i < 2; ++i) {
    const int64_t natural =
        a.stride[i] * (x[2 + i] - 1) + a.output_padding[i] + a.dilation[i] * (a.kernel[i] - 1) + 1;
    const int64_t out = shape ? (*shape)[i] : x[2 + i] * a.stride[i];
    const int64_t total = natural - out;
    if (!same) {
      a.pads[i] = 0;
      a.pads[2 + i] = total;
      continue;
    }
    BRAID_CHECK(total >= 0, kUnsupported, c.who(), ": auto_pad=", mode, " asks for output ", out,
                " past the natural size ", natural);
    a.pads[i] = mode == "SAME_UPPER" ? total / 2 : total - total / 2;
    a.pads[2 + i] = total - a.pads[i];
  }
  return a;
}

namespace {

// Resize-18's `axes`, normalized and checked (each once); every dim when absent.
std::vector<int64_t> resize_axes(const OpContext& c) {
  const auto rank = static_cast<int64_t>(c.inputs[0].shape.size());
  std::vector<int64_t> axes;
  if (auto listed = c.attrs.get_ints("axes")) {
    std::vector<bool> seen(rank, false);
    for (int64_t axis : *listed) {
      const int64_t k = c.checked_axis(axis, rank);
      BRAID_CHECK(!seen[k], kBad, c.who(), ": Resize axis ", axis, " repeats");
      seen[k] = true;
      axes.push_back(k);
    }
  } else {
    for (int64_t k = 0; k < rank; ++k) axes.push_back(k);
  }
  return axes;
}

// Scales or sizes (of all dims, or of `axes` from opset 18) -> one scale and one output size
// per dim, as ONNX's reference computes them.
void resolve_resize_shape(const OpContext& c, std::optional<std::vector<double>> scales,
                          std::optional<std::vector<int64_t>> sizes, ir::ResizeAttrs* a) {
  const ir::Shape& x = c.inputs[0].shape;
  const auto rank = static_cast<int64_t>(x.size());
  const std::vector<int64_t> axes = resize_axes(c);
  a->sizes.assign(x.begin(), x.end());
  a->scales.assign(rank, 1.0);
  if (sizes) {
    BRAID_CHECK(sizes->size() == axes.size(), kBad, c.who(), ": Resize has ", sizes->size(),
                " sizes for ", axes.size(), " axes");
    for (size_t i = 0; i < axes.size(); ++i) {
      const int64_t d = (*sizes)[i];
      BRAID_CHECK(d > 0 && d <= kMaxSize, d > 0 ? kUnsupported : kBad, c.who(),
                  ": Resize output size ", d, " of dim ", axes[i], " is out of range");
      a->scales[axes[i]] = static_cast<double>(d) / static_cast<double>(x[axes[i]]);
      a->sizes[axes[i]] = d;
    }
    const std::string policy = c.attrs.get_string("keep_aspect_ratio_policy", "stretch");
    if (policy == "stretch") return;
    BRAID_CHECK(policy == "not_larger" || policy == "not_smaller", kBad, c.who(),
                ": keep_aspect_ratio_policy '", policy,
                "' is not one of stretch, not_larger, "
                "not_smaller");
    double scale = a->scales[axes[0]];
    for (int64_t k : axes)
      scale =
          policy == "not_larger" ? std::min(scale, a->scales[k]) : std::max(scale, a->scales[k]);
    for (int64_t k : axes) {
      a->scales[k] = scale;
      a->sizes[k] = static_cast<int64_t>(scale * static_cast<double>(x[k]) + 0.5);
      BRAID_CHECK(a->sizes[k] > 0, kUnsupported, c.who(), ": Resize output dim ", k, " is 0");
    }
    return;
  }
  BRAID_CHECK(scales.has_value(), kBad, c.who(), ": Resize needs scales or sizes");
  BRAID_CHECK(scales->size() == axes.size(), kBad, c.who(), ": Resize has ", scales->size(),
              " scales for ", axes.size(), " axes");
  for (size_t i = 0; i < axes.size(); ++i) {
    const double s = (*scales)[i];
    // In float, as ONNX's shape inference and ONNX Runtime compute it (1.8f * 5 is 9 there,
    // 8.99999976 in double).
    const double out = static_cast<float>(s) * static_cast<float>(x[axes[i]]);
    BRAID_CHECK(std::isfinite(s) && s > 0 && out <= static_cast<double>(kMaxSize), kBad, c.who(),
                ": Resize scale ", s, " of dim ", axes[i], " is out of range");
    a->scales[axes[i]] = s;
    a->sizes[axes[i]] = static_cast<int64_t>(out);
    BRAID_CHECK(a->sizes[axes[i]] > 0, kUnsupported, c.who(), ": Resize scale ", s, " of dim ",
                axes[i], " leaves it empty; braid does not support zero-size tensors");
  }
}

// A float input as doubles; nullopt when omitted or empty (exporters write an empty scales
// tensor when they give sizes).
std::optional<std::vector<double>> float_input(const OpContext& c, int k, std::string_view role) {
  auto t = c.const_input(k, role, ir::DType::kFloat32);
  if (!t || t->elements() == 0) return std::nullopt;
  return std::vector<double>(t->floats.begin(), t->floats.end());
}

ir::ResizeMode resize_mode(const OpContext& c) {
  const std::string mode = c.attrs.get_string("mode", "nearest");
  if (mode == "nearest") return ir::ResizeMode::kNearest;
  if (mode == "linear" || (c.opset < 11 && mode == "bilinear")) return ir::ResizeMode::kLinear;
  BRAID_CHECK(mode == "cubic" && c.opset >= 11, kBad, c.who(), ": mode '", mode,
              "' is not one of nearest, linear", c.opset >= 11 ? ", cubic" : "");
  return ir::ResizeMode::kCubic;
}

// Upsample (opsets 7-9) and Resize-10: scales only, asymmetric coordinates, ONNX Runtime's
// nearest rounding of those opsets.
ir::ResizeAttrs legacy_resize(const OpContext& c, std::optional<std::vector<double>> scales) {
  ir::ResizeAttrs a;
  a.mode = resize_mode(c);
  a.coordinates = ir::ResizeCoordinates::kAsymmetric;
  a.nearest = ir::NearestRounding::kSimple;
  resolve_resize_shape(c, std::move(scales), std::nullopt, &a);
  return a;
}

}  // namespace

std::vector<RewriteStep> import_upsample(const OpContext& c) {
  std::optional<std::vector<double>> scales;
  if (c.opset < 9) {
    const auto* attr = c.attrs.find("scales", onnx::AttributeProto::FLOATS);
    BRAID_CHECK(attr != nullptr, kBad, c.who(), ": Upsample needs scales");
    scales.emplace(attr->floats().begin(), attr->floats().end());
  } else {
    scales = float_input(c, 1, "scales");
  }
  return {{OpKind::Resize, legacy_resize(c, std::move(scales)), {0}, ""}};
}

ir::OpAttrs import_resize(const OpContext& c) {
  if (c.opset < 11) return legacy_resize(c, float_input(c, 1, "scales"));
  ir::ResizeAttrs a;
  a.mode = resize_mode(c);
  const std::string coordinates =
      c.attrs.get_string("coordinate_transformation_mode", "half_pixel");
  using Coordinates = ir::ResizeCoordinates;
  static constexpr std::pair<std::string_view, Coordinates> kCoordinates[] = {
      {"half_pixel", Coordinates::kHalfPixel},
      {"half_pixel_symmetric", Coordinates::kHalfPixelSymmetric},
      {"pytorch_half_pixel", Coordinates::kPytorchHalfPixel},
      {"align_corners", Coordinates::kAlignCorners},
      {"asymmetric", Coordinates::kAsymmetric},
      {"tf_half_pixel_for_nn", Coordinates::kTfHalfPixelForNn},
      {"tf_crop_and_resize", Coordinates::kTfCropAndResize},
  };
  const auto* found = std::find_if(std::begin(kCoordinates), std::end(kCoordinates),
                                   [&](const auto& e) { return e.first == coordinates; });
  BRAID_CHECK(found != std::end(kCoordinates), kBad, c.who(), ": coordinate_transformation_mode '",
              coordinates, "' is not one ONNX defines");
  a.coordinates = found->second;
  const std::string nearest = c.attrs.get_string("nearest_mode", "round_prefer_floor");
  using Rounding = ir::NearestRounding;
  static constexpr std::pair<std::string_view, Rounding> kRoundings[] = {
      {"round_prefer_floor", Rounding::kRoundPreferFloor},
      {"round_prefer_ceil", Rounding::kRoundPreferCeil},
      {"floor", Rounding::kFloor},
      {"ceil", Rounding::kCeil},
  };
  const auto* rounding = std::find_if(std::begin(kRoundings), std::end(kRoundings),
                                      [&](const auto& e) { return e.first == nearest; });
  BRAID_CHECK(rounding != std::end(kRoundings), kBad, c.who(), ": nearest_mode '", nearest,
              "' is not one ONNX defines");
  a.nearest = rounding->second;
  a.cubic_coeff_a = c.attrs.get_float("cubic_coeff_a", -0.75f);
  a.exclude_outside = c.attrs.get_int("exclude_outside", 0) != 0;
  a.extrapolation_value = c.attrs.get_float("extrapolation_value", 0.0f);
  a.antialias = a.mode != ir::ResizeMode::kNearest && c.attrs.get_int("antialias", 0) != 0;
  std::optional<std::vector<int64_t>> sizes;
  if (auto t = c.const_input(3, "sizes", ir::DType::kInt64); t && t->elements() > 0)
    sizes = t->ints;
  resolve_resize_shape(c, sizes ? std::nullopt : float_input(c, 2, "scales"), sizes, &a);
  if (a.coordinates == Coordinates::kTfCropAndResize) {
    const size_t rank = a.sizes.size();
    a.roi.assign(2 * rank, 0.0);
    std::fill(a.roi.begin() + static_cast<std::ptrdiff_t>(rank), a.roi.end(), 1.0);
    if (std::optional<std::vector<double>> roi = float_input(c, 1, "roi")) {
      const std::vector<int64_t> axes = resize_axes(c);
      BRAID_CHECK(roi->size() == 2 * axes.size(), kBad, c.who(), ": roi has ", roi->size(),
                  " values for ", axes.size(), " axes");
      for (size_t i = 0; i < axes.size(); ++i) {
        a.roi[axes[i]] = (*roi)[i];
        a.roi[rank + axes[i]] = (*roi)[axes.size() + i];
      }
    }
  }
  return a;
}

}  // namespace braid::models::onnx_detail
