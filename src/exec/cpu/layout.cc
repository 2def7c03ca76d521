#include "exec/cpu/layout.h"

#include <algorithm>
#include <string_view>

#include "base/error.h"

namespace braid::exec::cpu {
namespace {

bool is_activation_value(const ir::Graph& g, ValueId v) {
  return g.value(v).kind == ir::ValueKind::kActivation;
}

bool same_shapes(const ir::Graph& g, const ir::Node& n) {
  const ir::Shape& out = g.value(n.outputs[0]).type.shape;
  return std::all_of(n.inputs.begin(), n.inputs.end(),
                     [&](ValueId v) { return g.value(v).type.shape == out; });
}

// AveragePool with count_include_pad whose ceil_mode adds windows past the padding: its kernel
// rescales those outputs with a plain-layout loop (see build_pool).
bool has_clipped_windows(const ir::Graph& g, const ir::Node& n) {
  const auto& a = std::get<ir::PoolAttrs>(n.attrs);
  if (n.kind != ir::OpKind::AveragePool || !a.count_include_pad) return false;
  const ir::Shape& xs = g.value(n.inputs[0]).type.shape;
  const ir::Shape& ys = g.value(n.outputs[0]).type.shape;
  for (int i = 0; i < 2; ++i)
    if ((ys[2 + i] - 1) * a.stride[i] + a.kernel[i] - xs[2 + i] - a.pads[i] > a.pads[2 + i])
      return true;
  return false;
}

bool is_4d(const ir::Graph& g, ValueId v) {
  return g.value(v).type.rank() == 4;
}

}  // namespace

int64_t channel_block(TensorLayout layout) {
  switch (layout) {
    case TensorLayout::kNChw16c:
      return 16;
    case TensorLayout::kNChw8c:
      return 8;
    case TensorLayout::kPlain:
    case TensorLayout::kNhwc:
      return 1;
  }
  return 1;
}

TensorLayout parse_layout(std::string_view name) {
  if (name == "plain") return TensorLayout::kPlain;
  if (name == "nhwc") return TensorLayout::kNhwc;
  if (name == "nchw8c") return TensorLayout::kNChw8c;
  if (name == "nchw16c") return TensorLayout::kNChw16c;
  BRAID_THROW(ErrorCode::kInvalidArgument, "unknown layout '", name,
              "': expected plain, nhwc, nchw8c or nchw16c");
}

std::string_view layout_name(TensorLayout layout) {
  switch (layout) {
    case TensorLayout::kPlain:
      return "plain";
    case TensorLayout::kNhwc:
      return "nhwc";
    case TensorLayout::kNChw8c:
      return "nchw8c";
    case TensorLayout::kNChw16c:
      return "nchw16c";
  }
  return "?";
}

bool accepts_blocked(const ir::Graph& g, const ir::Node& n, bool as_output) {
  if (!std::all_of(n.outputs.begin(), n.outputs.end(), [&](ValueId v) { return is_4d(g, v); }))
    return false;
  switch (n.kind) {
    case ir::OpKind::Conv:  // the data input only: weights and bias stay plain
    case ir::OpKind::MaxPool:
    case ir::OpKind::GlobalAveragePool:
    case ir::OpKind::BatchNormalization:
    case ir::OpKind::Relu:
    case ir::OpKind::Sigmoid:
    case ir::OpKind::Tanh:
    case ir::OpKind::Gelu:
    case ir::OpKind::Clip:
    case ir::OpKind::HardSigmoid:
    case ir::OpKind::HardSwish:
    case ir::OpKind::LRN:  // ReduceMean is plain only: oneDNN's jit reduction is
      return true;         // for plain sources, its reference kernel for the rest
    case ir::OpKind::AveragePool:
      return !as_output || !has_clipped_windows(g, n);
    case ir::OpKind::Add:
    case ir::OpKind::Mul:
    case ir::OpKind::Sum:
      return same_shapes(g, n);  // broadcasting runs on plain tensors
    case ir::OpKind::Pad: {      // H and W only: the channel blocks stay whole
      const auto& pads = std::get<ir::PadAttrs>(n.attrs).pads;
      return pads[0] == 0 && pads[1] == 0 && pads[4] == 0 && pads[5] == 0;
    }
    case ir::OpKind::Concat: {
      const int64_t axis = std::get<ir::AxisAttrs>(n.attrs).axis;
      return axis == 1 || axis == -3;
    }
    default:
      return false;
  }
}

bool can_be_blocked(const ir::Graph& g, ValueId v, TensorLayout layout) {
  const ir::Value& value = g.value(v);
  if (layout == TensorLayout::kPlain) return true;
  if (value.kind == ir::ValueKind::kParameter || !is_4d(g, v)) return false;
  if (value.type.dtype != ir::DType::kFloat32 || value.type.shape[1] % channel_block(layout) != 0)
    return false;
  if (value.kind == ir::ValueKind::kActivation && !accepts_blocked(g, g.node(value.producer), true))
    return false;
  for (NodeId c : value.consumers) {
    const ir::Node& consumer = g.node(c);
    if (!accepts_blocked(g, consumer, false)) return false;
    // These read only their data input blocked: a computed weight tensor stays plain.
    const bool data_input_only =
        consumer.kind == ir::OpKind::Conv || consumer.kind == ir::OpKind::BatchNormalization ||
        consumer.kind == ir::OpKind::Pad || consumer.kind == ir::OpKind::MaxPool ||
        consumer.kind == ir::OpKind::AveragePool;
    if (data_input_only && (consumer.inputs[0] != v ||
                            std::count(consumer.inputs.begin(), consumer.inputs.end(), v) != 1))
      return false;
  }
  return true;
}

std::vector<TensorLayout> choose_layouts(const ir::Graph& g, const LayoutOptions& options) {
  std::vector<TensorLayout> layouts(g.num_values(), TensorLayout::kPlain);
  if (options.blocked == TensorLayout::kPlain) return layouts;

  // Values whose producer and consumers all accept the blocked layout.
  std::vector<bool> candidate(g.num_values(), false);
  for (size_t i = 0; i < g.num_values(); ++i) {
    const ValueId v = make_id<ValueId>(i);
    candidate[i] =
        is_activation_value(g, v) && !g.is_output(v) && can_be_blocked(g, v, options.blocked);
  }

  // Blocked data must start at a conv: an element-wise op, pool or concat over plain inputs
  // writes plain, or it would add a reorder instead of saving one. Nodes are in topological
  // order, so inputs are decided before outputs.
  for (const ir::Node& n : g.nodes()) {
    const ValueId out = n.outputs[0];
    if (!candidate[index(out)]) continue;
    auto blocked = [&](ValueId v) { return layouts[index(v)] != TensorLayout::kPlain; };
    std::vector<ValueId> data;
    for (ValueId v : n.inputs)
      if (g.value(v).kind != ir::ValueKind::kParameter) data.push_back(v);
    bool keep = false;
    if (n.kind == ir::OpKind::Conv) {
      keep = true;
    } else if (n.kind == ir::OpKind::Concat) {
      keep = std::all_of(data.begin(), data.end(), blocked);
    } else {
      keep = std::any_of(data.begin(), data.end(), blocked);
    }
    if (keep) layouts[index(out)] = options.blocked;
  }
  return layouts;
}

bool can_write_into_concat(const ir::Graph& graph, const std::vector<TensorLayout>& layouts,
                           ValueId input, ValueId concat, int64_t offset) {
  const TensorLayout layout = layouts[index(concat)];
  if (layouts[index(input)] != layout) return false;
  if (layout == TensorLayout::kPlain) return true;
  if (layout == TensorLayout::kNhwc) return false;  // channel windows interleave
  const ir::Node& node = graph.node(graph.value(concat).producer);
  int64_t axis = std::get<ir::AxisAttrs>(node.attrs).axis;
  const auto rank = static_cast<int64_t>(graph.value(concat).type.shape.size());
  if (axis < 0) axis += rank;
  if (axis == 0) return true;
  const int64_t block = channel_block(layout);
  return axis == 1 && offset % block == 0 && graph.value(input).type.shape[1] % block == 0;
}

}  // namespace braid::exec::cpu
