// Operators: a closed enum (op_kinds.inc) with typed attribute structs. Strings appear only at
// the ONNX edge (op_kind_from_onnx / to_onnx_name).
//
//   ConvAttrs conv{.kernel = {3, 3}, .pads = {1, 1, 1, 1}, .activation = Activation::kRelu};
//   NodeId c = builder.add_node(OpKind::Conv, conv, {x, w, b}, "conv1");
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>
#include <variant>
#include <vector>

#include "ir/tensor_type.h"

namespace braid::ir {

enum class OpKind : uint16_t {
#define BRAID_OP(kind, onnx_name) kind,
#include "ir/op_kinds.inc"
#undef BRAID_OP
};

inline constexpr int kNumOpKinds = 0
#define BRAID_OP(kind, onnx_name) +1
#include "ir/op_kinds.inc"
#undef BRAID_OP
    ;

std::string_view to_string(OpKind);
std::string_view to_onnx_name(OpKind);
std::optional<OpKind> op_kind_from_onnx(std::string_view op_type);  // the only string -> op place

// An activation fused into the op that produces it (Conv-Relu as one kernel).
enum class Activation : uint8_t { kNone, kRelu, kSigmoid, kTanh, kGelu };
std::string_view to_string(Activation);
std::optional<OpKind> activation_op(Activation);  // Relu for kRelu, nullopt for kNone

// Conv: inputs {src, weights [OC, IC/groups, KH, KW], optional bias [OC]}.
struct ConvAttrs {
  std::array<int64_t, 2> kernel{1, 1};
  std::array<int64_t, 2> stride{1, 1};
  std::array<int64_t, 2> dilation{1, 1};
  std::array<int64_t, 4> pads{0, 0, 0, 0};  // top, left, bottom, right (ONNX order: t, l, b, r)
  int64_t groups = 1;
  Activation activation = Activation::kNone;
  bool operator==(const ConvAttrs&) const = default;
};

// MaxPool / AveragePool: inputs {src}.
struct PoolAttrs {
  std::array<int64_t, 2> kernel{1, 1};
  std::array<int64_t, 2> stride{1, 1};
  std::array<int64_t, 4> pads{0, 0, 0, 0};  // top, left, bottom, right
  bool ceil_mode = false;
  bool count_include_pad = false;  // AveragePool only
  bool operator==(const PoolAttrs&) const = default;
};

struct AxisAttrs {  // Concat, Softmax, Flatten
  int64_t axis = 1;
  bool operator==(const AxisAttrs&) const = default;
};

// Gemm: Y = alpha * A' * B' + beta * C, inputs {A, B, optional C}.
struct GemmAttrs {
  float alpha = 1.0f;
  float beta = 1.0f;
  bool trans_a = false;
  bool trans_b = false;
  bool operator==(const GemmAttrs&) const = default;
};

// BatchNormalization (inference): inputs {src, scale, bias, mean, var}.
struct BatchNormAttrs {
  float epsilon = 1e-5f;
  bool operator==(const BatchNormAttrs&) const = default;
};

// LayerNormalization over axes [axis, rank): inputs {src, scale, optional bias}.
struct LayerNormAttrs {
  int64_t axis = -1;
  float epsilon = 1e-5f;
  bool operator==(const LayerNormAttrs&) const = default;
};

// Reshape: the target shape is static (ONNX's shape input must be a constant). 0 copies the
// input dim, -1 is inferred.
struct ReshapeAttrs {
  std::vector<int64_t> shape;
  bool operator==(const ReshapeAttrs&) const = default;
};

struct TransposeAttrs {
  std::vector<int64_t> perm;  // empty = reverse the dims
  bool operator==(const TransposeAttrs&) const = default;
};

struct SplitAttrs {
  int64_t axis = 0;
  std::vector<int64_t> sizes;  // one per output
  bool operator==(const SplitAttrs&) const = default;
};

// Pad (constant mode only): pads in ONNX order [x1_begin, x2_begin, ..., x1_end, x2_end, ...].
struct PadAttrs {
  std::vector<int64_t> pads;
  float value = 0.0f;
  bool operator==(const PadAttrs&) const = default;
};

struct GeluAttrs {
  bool tanh_approximation = false;
  bool operator==(const GeluAttrs&) const = default;
};

// Clip: y = min(max(x, min), max). ONNX's min/max inputs (opset >= 11) must be constants.
struct ClipAttrs {
  float min = -std::numeric_limits<float>::infinity();
  float max = std::numeric_limits<float>::infinity();
  bool operator==(const ClipAttrs&) const = default;
};

// HardSigmoid: y = max(0, min(1, alpha * x + beta)). (HardSwish has no attributes:
// y = x * HardSigmoid(x) with alpha = 1/6, beta = 1/2.)
struct HardSigmoidAttrs {
  float alpha = 0.2f;
  float beta = 0.5f;
  bool operator==(const HardSigmoidAttrs&) const = default;
};

// ReduceMean: the mean over `axes` (normalized to [0, rank), sorted, unique; never empty: ONNX's
// "no axes" is stored as every axis). keepdims keeps each reduced dim as a 1.
struct ReduceAttrs {
  std::vector<int64_t> axes;
  bool keepdims = true;
  bool operator==(const ReduceAttrs&) const = default;
};

// LRN across channels (ONNX): y = x / (bias + alpha / size * sum of x^2 over the channels
// [c - floor((size - 1) / 2), c + ceil((size - 1) / 2)])^beta.
struct LrnAttrs {
  int64_t size = 1;
  float alpha = 1e-4f;
  float beta = 0.75f;
  float bias = 1.0f;
  bool operator==(const LrnAttrs&) const = default;
};

// Expand: numpy-broadcasts the input to `shape` (ONNX's shape input must be a constant).
struct ExpandAttrs {
  std::vector<int64_t> shape;
  bool operator==(const ExpandAttrs&) const = default;
};

// Gather along `axis`. With two node inputs the indices are the second (an int64 tensor, e.g.
// a graph input of token ids); with one, they are the constant `indices` of `indices_shape`
// (ViT's class-token select). Negative indices count from the end, as in ONNX.
struct GatherAttrs {
  int64_t axis = 0;
  std::vector<int64_t> indices;
  std::vector<int64_t> indices_shape;
  bool operator==(const GatherAttrs&) const = default;
};

// Cast to `to` (float32, int64 or bool); float -> int64 truncates toward zero, as ONNX does.
struct CastAttrs {
  DType to = DType::kFloat32;
  bool operator==(const CastAttrs&) const = default;
};

// Slice with ONNX semantics (opset 10+): for each listed axis, start/end clamp to the dim and
// negative values count from the end; steps may be negative. Empty axes = 0..n-1, empty steps
// = 1. ir::slice_dims (shape_inference.h) resolves them against a shape.
struct SliceAttrs {
  std::vector<int64_t> starts, ends, axes, steps;
  bool operator==(const SliceAttrs&) const = default;
};

// ConvTranspose (2-D): inputs {src, weights [IC, OC/groups, KH, KW], optional bias [OC]}.
// Output size per axis: stride * (in - 1) + output_padding + dilation * (kernel - 1) + 1 -
// pad_begin - pad_end. The importer resolves output_shape and auto_pad into pads; an end pad may
// be negative (output_shape past the natural size: the extra rows hold the bias).
struct ConvTransposeAttrs {
  std::array<int64_t, 2> kernel{1, 1};
  std::array<int64_t, 2> stride{1, 1};
  std::array<int64_t, 2> dilation{1, 1};
  std::array<int64_t, 4> pads{0, 0, 0, 0};  // top, left, bottom, right
  std::array<int64_t, 2> output_padding{0, 0};
  int64_t groups = 1;
  bool operator==(const ConvTransposeAttrs&) const = default;
};

enum class ResizeMode : uint8_t { kNearest, kLinear, kCubic };
// ONNX's coordinate_transformation_mode: how an output index maps to an input coordinate.
enum class ResizeCoordinates : uint8_t {
  kHalfPixel,
  kHalfPixelSymmetric,
  kPytorchHalfPixel,
  kAlignCorners,
  kAsymmetric,
  kTfHalfPixelForNn,
  kTfCropAndResize,
};
// kSimple: floor when upscaling, ceil when downscaling (ONNX Runtime's Resize-10 and Upsample).
enum class NearestRounding : uint8_t {
  kRoundPreferFloor,
  kRoundPreferCeil,
  kFloor,
  kCeil,
  kSimple
};
std::string_view to_string(ResizeMode);
std::string_view to_string(ResizeCoordinates);
std::string_view to_string(NearestRounding);

// Resize (and Upsample) over any axes: inputs {src}. The importer resolves ONNX's scales or
// sizes (axes, keep_aspect_ratio_policy) into one scale and one output size per dim; the scale,
// not output/input, is what maps coordinates (ONNX: a 0.6 scale of 5 gives 3 outputs read at
// x / 0.6). ir::resize_taps (ir/resize.h) turns these into the input indices and weights every
// backend reads.
struct ResizeAttrs {
  ResizeMode mode = ResizeMode::kNearest;
  ResizeCoordinates coordinates = ResizeCoordinates::kHalfPixel;
  NearestRounding nearest = NearestRounding::kRoundPreferFloor;
  float cubic_coeff_a = -0.75f;
  bool exclude_outside = false;
  bool antialias = false;         // linear/cubic only: widen the filter when downscaling
  float extrapolation_value = 0;  // tf_crop_and_resize, outside the input
  std::vector<int64_t> sizes;     // output shape, one per dim
  std::vector<double> scales;     // one per dim
  std::vector<double> roi;        // tf_crop_and_resize: starts then ends (2 * rank); else empty
  bool operator==(const ResizeAttrs&) const = default;
};

using OpAttrs =
    std::variant<std::monostate, ConvAttrs, PoolAttrs, AxisAttrs, GemmAttrs, BatchNormAttrs,
                 LayerNormAttrs, ReshapeAttrs, TransposeAttrs, SplitAttrs, PadAttrs, GeluAttrs,
                 ClipAttrs, HardSigmoidAttrs, ReduceAttrs, LrnAttrs, ExpandAttrs, GatherAttrs,
                 CastAttrs, SliceAttrs, ConvTransposeAttrs, ResizeAttrs>;

// True for ops that only relabel their input's memory (no arithmetic).
bool is_view(OpKind);
// True for ops applied element by element with one activation input (Relu, Sigmoid, Clip,
// HardSigmoid, HardSwish, ...): they fuse as post-ops into the op before them.
bool is_activation(OpKind);

}  // namespace braid::ir
