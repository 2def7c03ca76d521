#include "ir/op_cost.h"

#include <variant>

namespace braid::ir {

int64_t op_flops(const Graph& g, NodeId id) {
  const Node& n = g.node(id);
  const TensorType& out = g.value(n.outputs.front()).type;
  auto in_type = [&](size_t i) -> const TensorType& { return g.value(n.inputs.at(i)).type; };
  switch (n.kind) {
    case OpKind::Conv: {
      const Shape& w = in_type(1).shape;  // [OC, IC/g, KH, KW]
      int64_t macs = out.elements() * w[1] * w[2] * w[3];
      int64_t extra = (n.inputs.size() > 2 ? out.elements() : 0) +
                      (std::get<ConvAttrs>(n.attrs).activation != Activation::kNone ? out.elements() : 0);
      return 2 * macs + extra;
    }
    case OpKind::MatMul:
      return 2 * out.elements() * in_type(0).shape.back();
    case OpKind::Gemm: {
      const auto& a = std::get<GemmAttrs>(n.attrs);
      int64_t k = a.trans_a ? in_type(0).shape[0] : in_type(0).shape[1];
      return 2 * out.elements() * k + (n.inputs.size() > 2 ? out.elements() : 0);
    }
    case OpKind::MaxPool:
    case OpKind::AveragePool: {
      const auto& a = std::get<PoolAttrs>(n.attrs);
      return out.elements() * a.kernel[0] * a.kernel[1];
    }
    case OpKind::GlobalAveragePool:
      return in_type(0).elements();
    case OpKind::Relu:
    case OpKind::Sigmoid:
    case OpKind::Tanh:
    case OpKind::Add:
    case OpKind::Mul:
      return out.elements();
    case OpKind::Gelu:
      return 8 * out.elements();
    case OpKind::Sum:
      return out.elements() * static_cast<int64_t>(n.inputs.size() - 1);
    case OpKind::BatchNormalization:
      return 2 * out.elements();
    case OpKind::Softmax:
    case OpKind::LayerNormalization:
      return 5 * out.elements();
    case OpKind::Concat:
    case OpKind::Reshape:
    case OpKind::Flatten:
    case OpKind::Transpose:
    case OpKind::Split:
    case OpKind::Identity:
    case OpKind::Pad:
      return 0;
    case OpKind::Sub:
    case OpKind::Div:
    case OpKind::Sqrt:
    case OpKind::Where:
    case OpKind::Cast:
    case OpKind::Equal:
      return out.elements();
    case OpKind::Erf:
    case OpKind::Pow:  // exp(y * log(x)) and friends: a few instructions per element
      return 8 * out.elements();
    case OpKind::Expand:
    case OpKind::Gather:
    case OpKind::Slice:
      return 0;
  }
  return 0;
}

int64_t op_bytes(const Graph& g, NodeId id) {
  const Node& n = g.node(id);
  if (is_view(n.kind)) return 0;  // relabels memory, moves nothing
  int64_t bytes = 0;
  for (ValueId v : n.inputs) bytes += g.value(v).type.bytes();
  for (ValueId v : n.outputs) bytes += g.value(v).type.bytes();
  return bytes;
}

}  // namespace braid::ir
