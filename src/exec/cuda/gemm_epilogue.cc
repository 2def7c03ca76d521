#include "exec/cuda/gemm_epilogue.h"

#include <algorithm>
#include <variant>

#include "ir/op.h"

namespace braid::exec::cuda {
namespace {

// Whether a tensor of shape `bias` added to `y` adds bias[j] to every y[..., j]: N elements on
// the last axis, every other axis 1, no more axes than y.
bool per_column(const ir::Shape& bias, const ir::Shape& y) {
  if (bias.empty() || y.empty() || bias.size() > y.size() || bias.back() != y.back()) return false;
  return std::all_of(bias.begin(), bias.end() - 1, [](int64_t d) { return d == 1; });
}

bool float_parameter(const ir::Graph& g, ValueId v) {
  const ir::Value& value = g.value(v);
  return value.kind == ir::ValueKind::kParameter && value.type.dtype == ir::DType::kFloat32;
}

}  // namespace

std::string_view to_string(GemmEpilogue e) {
  switch (e) {
    case GemmEpilogue::kNone:
      return "none";
    case GemmEpilogue::kBias:
      return "bias";
    case GemmEpilogue::kReluBias:
      return "relu_bias";
    case GemmEpilogue::kGeluBias:
      return "gelu_bias";
  }
  return "?";
}

GemmChain match_gemm(const ir::Graph& g, std::span<const NodeId> ops, bool tanh_gelu) {
  const ir::Node& head = g.node(ops[0]);
  GemmChain chain{.used = 1, .y = head.outputs[0]};
  if (head.kind != ir::OpKind::MatMul && head.kind != ir::OpKind::Gemm) return chain;
  const ir::TensorType& y = g.value(chain.y).type;
  if (y.dtype != ir::DType::kFloat32 || y.shape.size() < 2) return chain;
  // A 1-D MatMul operand: the CUDA executor refuses it (compile_matmul says so).
  if (g.value(head.inputs[0]).type.shape.size() < 2 ||
      g.value(head.inputs[1]).type.shape.size() < 2)
    return chain;
  // The unit's next op when it reads the chain's value, once, and nothing else does.
  auto next = [&]() -> const ir::Node* {
    if (chain.used >= ops.size() || g.is_output(chain.y)) return nullptr;
    const ir::Value& v = g.value(chain.y);
    if (v.consumers.size() != 1 || v.consumers[0] != ops[chain.used]) return nullptr;
    return &g.node(ops[chain.used]);
  };
  auto take = [&](const ir::Node* n) {
    chain.y = n->outputs[0];
    ++chain.used;
    return n;
  };

  if (head.kind == ir::OpKind::Gemm && head.inputs.size() > 2) {
    const ValueId c = head.inputs[2];
    if (!float_parameter(g, c) || !per_column(g.value(c).type.shape, y.shape)) return chain;
    chain.bias = c;
    chain.bias_scale = std::get<ir::GemmAttrs>(head.attrs).beta;
  } else if (const ir::Node* n = next(); n != nullptr && n->kind == ir::OpKind::Add) {
    const std::optional<ValueId> other = ir::other_input(*n, chain.y);
    if (other && float_parameter(g, *other) && per_column(g.value(*other).type.shape, y.shape) &&
        g.value(n->outputs[0]).type == y) {
      chain.bias = *other;
      chain.bias_add = take(n);
    }
  }
  if (!chain.bias) return chain;
  chain.epilogue = GemmEpilogue::kBias;
  if (const ir::Node* n = next(); n != nullptr && n->inputs.size() == 1) {
    if (n->kind == ir::OpKind::Relu) {
      chain.activation = take(n);
      chain.epilogue = GemmEpilogue::kReluBias;
    } else if (tanh_gelu && n->kind == ir::OpKind::Gelu &&
               std::get<ir::GeluAttrs>(n->attrs).tanh_approximation) {
      chain.activation = take(n);
      chain.epilogue = GemmEpilogue::kGeluBias;
    }
  }
  return chain;
}

}  // namespace braid::exec::cuda
