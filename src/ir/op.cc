#include "ir/op.h"

#include <array>

namespace braid::ir {
namespace {
struct OpNames {
  std::string_view kind;
  std::string_view onnx;
};
constexpr std::array<OpNames, kNumOpKinds> kOpNames = {{
#define BRAID_OP(kind, onnx_name) {#kind, onnx_name},
#include "ir/op_kinds.inc"
#undef BRAID_OP
}};
}  // namespace

std::string_view to_string(OpKind k) {
  return kOpNames[static_cast<size_t>(k)].kind;
}
std::string_view to_onnx_name(OpKind k) {
  return kOpNames[static_cast<size_t>(k)].onnx;
}

std::optional<OpKind> op_kind_from_onnx(std::string_view op_type) {
  for (size_t i = 0; i < kOpNames.size(); ++i)
    if (kOpNames[i].onnx == op_type) return static_cast<OpKind>(i);
  return std::nullopt;
}

std::string_view to_string(Activation a) {
  switch (a) {
    case Activation::kNone:
      return "none";
    case Activation::kRelu:
      return "relu";
    case Activation::kSigmoid:
      return "sigmoid";
    case Activation::kTanh:
      return "tanh";
    case Activation::kGelu:
      return "gelu";
  }
  return "?";
}

std::optional<OpKind> activation_op(Activation a) {
  switch (a) {
    case Activation::kNone:
      return std::nullopt;
    case Activation::kRelu:
      return OpKind::Relu;
    case Activation::kSigmoid:
      return OpKind::Sigmoid;
    case Activation::kTanh:
      return OpKind::Tanh;
    case Activation::kGelu:
      return OpKind::Gelu;
  }
  return std::nullopt;
}

std::string_view to_string(ResizeMode m) {
  switch (m) {
    case ResizeMode::kNearest:
      return "nearest";
    case ResizeMode::kLinear:
      return "linear";
    case ResizeMode::kCubic:
      return "cubic";
  }
  return "?";
}

std::string_view to_string(ResizeCoordinates c) {
  switch (c) {
    case ResizeCoordinates::kHalfPixel:
      return "half_pixel";
    case ResizeCoordinates::kHalfPixelSymmetric:
      return "half_pixel_symmetric";
    case ResizeCoordinates::kPytorchHalfPixel:
      return "pytorch_half_pixel";
    case ResizeCoordinates::kAlignCorners:
      return "align_corners";
    case ResizeCoordinates::kAsymmetric:
      return "asymmetric";
    case ResizeCoordinates::kTfHalfPixelForNn:
      return "tf_half_pixel_for_nn";
    case ResizeCoordinates::kTfCropAndResize:
      return "tf_crop_and_resize";
  }
  return "?";
}

std::string_view to_string(NearestRounding r) {
  switch (r) {
    case NearestRounding::kRoundPreferFloor:
      return "round_prefer_floor";
    case NearestRounding::kRoundPreferCeil:
      return "round_prefer_ceil";
    case NearestRounding::kFloor:
      return "floor";
    case NearestRounding::kCeil:
      return "ceil";
    case NearestRounding::kSimple:
      return "simple";
  }
  return "?";
}

bool is_view(OpKind k) {
  return k == OpKind::Reshape || k == OpKind::Flatten || k == OpKind::Identity;
}

bool is_activation(OpKind k) {
  return k == OpKind::Relu || k == OpKind::Sigmoid || k == OpKind::Tanh || k == OpKind::Gelu ||
         k == OpKind::Clip || k == OpKind::HardSigmoid || k == OpKind::HardSwish;
}

}  // namespace braid::ir
