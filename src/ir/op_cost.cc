#include "ir/op_cost.h"

#include <limits>
#include <variant>

#include "base/error.h"

namespace braid::ir {
namespace {

// In 128 bits: shapes fit in int64 (GraphBuilder checks), their products need not.
using Wide = __int128;

Wide wide_flops(const Graph& g, NodeId id) {
  const Node& n = g.node(id);
  const Wide out = g.value(n.outputs.front()).type.elements();
  auto in_type = [&](size_t i) -> const TensorType& { return g.value(n.inputs.at(i)).type; };
  switch (n.kind) {
    case OpKind::Conv: {
      const Shape& w = in_type(1).shape;  // [OC, IC/g, KH, KW]
      Wide macs = out * w[1] * w[2] * w[3];
      Wide extra = (n.inputs.size() > 2 ? out : 0) +
                   (std::get<ConvAttrs>(n.attrs).activation != Activation::kNone ? out : 0);
      return 2 * macs + extra;
    }
    case OpKind::ConvTranspose: {
      const Shape& w = in_type(1).shape;  // [IC, OC/g, KH, KW]: each input element feeds OC/g * K
      const Wide macs = Wide{in_type(0).elements()} * w[1] * w[2] * w[3];
      return 2 * macs + (n.inputs.size() > 2 ? out : 0);
    }
    case OpKind::Resize: {
      // Every output element weighs its taps: 1 (nearest), 2 (linear) or 4 (cubic) per resized
      // axis.
      const auto& a = std::get<ResizeAttrs>(n.attrs);
      const Shape& x = in_type(0).shape;
      const Wide per_axis = a.mode == ResizeMode::kNearest  ? 1
                            : a.mode == ResizeMode::kLinear ? 2
                                                            : 4;
      Wide taps = 1;
      for (size_t i = 0; i < x.size(); ++i)
        if (x[i] != a.sizes[i] || a.scales[i] != 1) taps *= per_axis;
      return a.mode == ResizeMode::kNearest ? 0 : 2 * out * taps;
    }
    case OpKind::MatMul:
      return 2 * out * in_type(0).shape.back();
    case OpKind::Gemm: {
      const auto& a = std::get<GemmAttrs>(n.attrs);
      Wide k = a.trans_a ? in_type(0).shape[0] : in_type(0).shape[1];
      return 2 * out * k + (n.inputs.size() > 2 ? out : 0);
    }
    case OpKind::MaxPool:
    case OpKind::AveragePool: {
      const auto& a = std::get<PoolAttrs>(n.attrs);
      return out * a.kernel[0] * a.kernel[1];
    }
    case OpKind::GlobalAveragePool:
      return in_type(0).elements();
    case OpKind::Relu:
    case OpKind::Sigmoid:
    case OpKind::Tanh:
    case OpKind::Add:
    case OpKind::Mul:
      return out;
    case OpKind::Gelu:
      return 8 * out;
    case OpKind::Clip:
      return 2 * out;
    case OpKind::HardSigmoid:
      return 4 * out;
    case OpKind::HardSwish:
      return 5 * out;
    case OpKind::ReduceMean:
      return Wide{in_type(0).elements()};
    case OpKind::LRN: {
      const int64_t size = std::get<LrnAttrs>(n.attrs).size;
      return out * (2 * size + 4);  // window of squares, scale, pow, divide
    }
    case OpKind::Sum:
      return out * static_cast<Wide>(n.inputs.size() - 1);
    case OpKind::BatchNormalization:
      return 2 * out;
    case OpKind::Softmax:
    case OpKind::LayerNormalization:
      return 5 * out;
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
    case OpKind::Not:
      return out;
    case OpKind::Erf:
    case OpKind::Pow:  // exp(y * log(x)) and friends: a few instructions per element
      return 8 * out;
    case OpKind::Expand:
    case OpKind::Gather:
    case OpKind::Slice:
      return 0;
  }
  return 0;
}

}  // namespace

int64_t op_flops(const Graph& g, NodeId id) {
  return static_cast<int64_t>(wide_flops(g, id));
}

void check_op_costs(const Graph& g) {
  constexpr Wide kMax = std::numeric_limits<int64_t>::max();
  Wide total_flops = 0, total_bytes = 0;
  for (const Node& n : g.nodes()) {
    const NodeId id = make_id<NodeId>(&n - g.nodes().data());
    const Wide flops = wide_flops(g, id);
    BRAID_CHECK(flops <= kMax, ErrorCode::kUnsupported, "node '", n.name,
                "': its FLOP count does not fit in a 64-bit integer (shapes too large)");
    total_flops += flops;
    for (ValueId v : n.inputs) total_bytes += g.value(v).type.bytes();
    for (ValueId v : n.outputs) total_bytes += g.value(v).type.bytes();
  }
  BRAID_CHECK(total_flops <= kMax && total_bytes <= kMax, ErrorCode::kUnsupported, "graph '",
              g.name(),
              "': its total FLOP or byte count does not fit in a 64-bit integer (shapes "
              "too large)");
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
