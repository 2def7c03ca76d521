#include "models/zoo/ios_layers.h"

#include <cmath>
#include <utility>

#include "base/error.h"

namespace braid::models::ios {

using ir::Activation;
using ir::OpKind;

namespace {
// Biases start small and non-zero so that a wrong bias index shows up in numeric tests.
constexpr float kBiasStddev = 0.01f;
}  // namespace

IosNetBuilder::IosNetBuilder(std::string graph_name, const ZooOptions& options,
                             int64_t default_image_size)
    : b_(std::move(graph_name)) {
  const int64_t size = options.image_size > 0 ? options.image_size : default_image_size;
  BRAID_CHECK(options.batch >= 1, ErrorCode::kInvalidArgument, "batch must be >= 1, got ",
              options.batch);
  BRAID_CHECK(options.image_size >= 0, ErrorCode::kInvalidArgument,
              "image_size must be >= 0 (0 = the model's default), got ", options.image_size);
  input_ = b_.add_input("input", {ir::DType::kFloat32, {options.batch, 3, size, size}});
}

NodeId IosNetBuilder::add(OpKind kind, ir::OpAttrs attrs, std::vector<ValueId> inputs,
                          std::string name, std::vector<NodeId>& ops) {
  NodeId id = b_.add_node(kind, std::move(attrs), std::move(inputs), name);
  // GraphBuilder renames a clash silently; a zoo model must name every op itself.
  BRAID_ASSERT(b_.node(id).name == name, "op name '", name, "' is used twice");
  ops.push_back(id);
  return id;
}

ValueId IosNetBuilder::gather(const std::string& name, const Terms& in, std::vector<NodeId>& ops) {
  BRAID_ASSERT(!in.empty(), "op '", name, "' has no input terms");
  std::vector<ValueId> terms;
  for (size_t t = 0; t < in.size(); ++t) {
    BRAID_ASSERT(!in[t].empty(), "op '", name, "' has an empty term");
    if (in[t].size() == 1) {
      terms.push_back(in[t][0]);
      continue;
    }
    std::string sum_name = name + (in.size() == 1 ? "/sum" : "/sum_" + std::to_string(t));
    NodeId sum = add(OpKind::Sum, {}, in[t], std::move(sum_name), ops);
    terms.push_back(b_.output(sum));
  }
  if (terms.size() == 1) return terms[0];
  NodeId cat = add(OpKind::Concat, ir::AxisAttrs{.axis = 1}, terms, name + "/concat", ops);
  return b_.output(cat);
}

ValueId IosNetBuilder::add_conv(std::string name, ValueId src, int64_t out_channels,
                                const Window& w, Activation act, int64_t groups,
                                std::vector<NodeId>& ops) {
  const int64_t in_channels = channels(src);
  BRAID_CHECK(groups >= 1 && in_channels % groups == 0 && out_channels % groups == 0,
              ErrorCode::kInvalidModel, "conv '", name, "': groups ", groups, " must divide ",
              in_channels, " input and ", out_channels, " output channels");
  // He initialization: keeps activations at unit scale through deep ReLU stacks.
  const int64_t fan_in = in_channels / groups * w.kernel[0] * w.kernel[1];
  const float stddev = std::sqrt(2.0f / static_cast<float>(fan_in));
  ValueId weight = b_.add_parameter(
      name + ".weight",
      {ir::DType::kFloat32, {out_channels, in_channels / groups, w.kernel[0], w.kernel[1]}},
      ir::ParamInit::normal(stddev));
  ValueId bias = b_.add_parameter(name + ".bias", {ir::DType::kFloat32, {out_channels}},
                                  ir::ParamInit::normal(kBiasStddev));
  ir::ConvAttrs attrs{.kernel = w.kernel,
                      .stride = w.stride,
                      .pads = {w.padding[0], w.padding[1], w.padding[0], w.padding[1]},
                      .groups = groups,
                      .activation = act};
  NodeId conv = add(OpKind::Conv, attrs, {src, weight, bias}, std::move(name), ops);
  return b_.output(conv);
}

ValueId IosNetBuilder::add_relu(std::string name, ValueId src, std::vector<NodeId>& ops) {
  NodeId relu = add(OpKind::Relu, {}, {src}, std::move(name), ops);
  return b_.output(relu);
}

ValueId IosNetBuilder::separable(const std::string& name, ValueId src, int64_t out_channels,
                                 const Window& w, std::vector<NodeId>& ops) {
  // IOS takes the depthwise width from the producer's full width (peers.md §1.8 quirk 5); our
  // values are whole tensors, so that is channels(src).
  const int64_t in_channels = channels(src);
  ValueId dw =
      add_conv(name + "/depthwise", src, in_channels, w, Activation::kNone, in_channels, ops);
  return add_conv(name + "/pointwise", dw, out_channels, Window{}, Activation::kNone, 1, ops);
}

void IosNetBuilder::commit(std::vector<NodeId> ops) {
  // A lone op needs no hint unless the fusion pass could fold it into its producer (a Relu).
  if (ops.size() == 1 && !ir::is_activation(b_.node(ops[0]).kind)) return;
  b_.add_unit_hint(std::move(ops));
}

ValueId IosNetBuilder::conv2d(std::string name, const Terms& in, int64_t out_channels, Window w,
                              Activation act, int64_t groups) {
  std::vector<NodeId> ops;
  ValueId src = gather(name, in, ops);
  ValueId out = add_conv(std::move(name), src, out_channels, w, act, groups, ops);
  commit(std::move(ops));
  return out;
}

ValueId IosNetBuilder::pool2d(std::string name, const Terms& in, PoolType type, Window w) {
  std::vector<NodeId> ops;
  ValueId src = gather(name, in, ops);
  ir::PoolAttrs attrs{.kernel = w.kernel,
                      .stride = w.stride,
                      .pads = {w.padding[0], w.padding[1], w.padding[0], w.padding[1]},
                      .ceil_mode = false,
                      .count_include_pad = type == PoolType::kAvg};
  const OpKind kind = type == PoolType::kMax ? OpKind::MaxPool : OpKind::AveragePool;
  NodeId pool = add(kind, attrs, {src}, std::move(name), ops);
  commit(std::move(ops));
  return b_.output(pool);
}

ValueId IosNetBuilder::global_avg_pool(std::string name, const Terms& in) {
  std::vector<NodeId> ops;
  ValueId src = gather(name, in, ops);
  NodeId pool = add(OpKind::GlobalAveragePool, {}, {src}, std::move(name), ops);
  commit(std::move(ops));
  return b_.output(pool);
}

ValueId IosNetBuilder::identity(std::string name, const Terms& in) {
  BRAID_ASSERT(!in.empty(), "identity '", name, "' has no input terms");
  std::vector<NodeId> ops;
  if (in.size() == 1) {
    // One term: the identity is its sum (with one value, a copy, as IOS runs it).
    NodeId sum = add(OpKind::Sum, {}, in[0], std::move(name), ops);
    commit(std::move(ops));
    return b_.output(sum);
  }
  std::vector<ValueId> terms;
  for (size_t t = 0; t < in.size(); ++t) {
    if (in[t].size() == 1) {
      terms.push_back(in[t][0]);
      continue;
    }
    NodeId sum = add(OpKind::Sum, {}, in[t], name + "/sum_" + std::to_string(t), ops);
    terms.push_back(b_.output(sum));
  }
  NodeId cat = add(OpKind::Concat, ir::AxisAttrs{.axis = 1}, terms, std::move(name), ops);
  commit(std::move(ops));
  return b_.output(cat);
}

ValueId IosNetBuilder::relu(std::string name, const Terms& in) {
  std::vector<NodeId> ops;
  ValueId src = gather(name, in, ops);
  ValueId out = add_relu(std::move(name), src, ops);
  commit(std::move(ops));
  return out;
}

ValueId IosNetBuilder::sep_conv(std::string name, const Terms& in, int64_t out_channels, Window w) {
  std::vector<NodeId> ops;
  ValueId src = gather(name, in, ops);
  ValueId out = separable(name, src, out_channels, w, ops);
  commit(std::move(ops));
  return out;
}

ValueId IosNetBuilder::relu_sep_conv(std::string name, const Terms& in, int64_t out_channels,
                                     Window w) {
  std::vector<NodeId> ops;
  ValueId src = gather(name, in, ops);
  ValueId r = add_relu(name, src, ops);
  ValueId out = separable(name, r, out_channels, w, ops);
  commit(std::move(ops));
  return out;
}

ValueId IosNetBuilder::relu_conv(std::string name, const Terms& in, int64_t out_channels,
                                 Window w) {
  std::vector<NodeId> ops;
  ValueId src = gather(name, in, ops);
  ValueId r = add_relu(name, src, ops);
  ValueId out = add_conv(name + "/conv", r, out_channels, w, Activation::kNone, 1, ops);
  commit(std::move(ops));
  return out;
}

ir::Graph IosNetBuilder::finish(ValueId output) && {
  b_.mark_output(output);
  return std::move(b_).build();
}

}  // namespace braid::models::ios
