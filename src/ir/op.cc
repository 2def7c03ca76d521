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

std::string_view to_string(OpKind k) { return kOpNames[static_cast<size_t>(k)].kind; }
std::string_view to_onnx_name(OpKind k) { return kOpNames[static_cast<size_t>(k)].onnx; }

std::optional<OpKind> op_kind_from_onnx(std::string_view op_type) {
  for (size_t i = 0; i < kOpNames.size(); ++i)
    if (kOpNames[i].onnx == op_type) return static_cast<OpKind>(i);
  return std::nullopt;
}

std::string_view to_string(Activation a) {
  switch (a) {
    case Activation::kNone: return "none";
    case Activation::kRelu: return "relu";
    case Activation::kSigmoid: return "sigmoid";
    case Activation::kTanh: return "tanh";
    case Activation::kGelu: return "gelu";
  }
  return "?";
}

std::optional<OpKind> activation_op(Activation a) {
  switch (a) {
    case Activation::kNone: return std::nullopt;
    case Activation::kRelu: return OpKind::Relu;
    case Activation::kSigmoid: return OpKind::Sigmoid;
    case Activation::kTanh: return OpKind::Tanh;
    case Activation::kGelu: return OpKind::Gelu;
  }
  return std::nullopt;
}

bool is_view(OpKind k) {
  return k == OpKind::Reshape || k == OpKind::Flatten || k == OpKind::Identity;
}

bool is_activation(OpKind k) {
  return k == OpKind::Relu || k == OpKind::Sigmoid || k == OpKind::Tanh || k == OpKind::Gelu ||
         k == OpKind::Clip || k == OpKind::HardSigmoid || k == OpKind::HardSwish;
}

}  // namespace braid::ir
