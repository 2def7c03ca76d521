#include "models/zoo/torch_layers.h"

#include <cmath>
#include <utility>

#include "base/error.h"

namespace braid::models::torch {

using ir::OpKind;

namespace {
// Biases start small and non-zero so that a wrong bias index shows up in numeric tests.
constexpr float kBiasStddev = 0.01f;
}  // namespace

float he_stddev(int64_t fan_in) {
  return std::sqrt(2.0f / static_cast<float>(fan_in));
}

TorchNetBuilder::TorchNetBuilder(std::string graph_name, const ZooOptions& options)
    : b_(std::move(graph_name)), options_(options) {
  BRAID_CHECK(options.batch >= 1, ErrorCode::kInvalidArgument, "batch must be >= 1, got ",
              options.batch);
}

ValueId TorchNetBuilder::add_image_input(int64_t default_size) {
  BRAID_CHECK(options_.image_size >= 0, ErrorCode::kInvalidArgument,
              "image_size must be >= 0 (0 = the model's default), got ", options_.image_size);
  const int64_t size = options_.image_size > 0 ? options_.image_size : default_size;
  return b_.add_input("input", {ir::DType::kFloat32, {options_.batch, 3, size, size}});
}

ValueId TorchNetBuilder::op(OpKind kind, ir::OpAttrs attrs, std::vector<ValueId> inputs,
                            std::string name) {
  NodeId id = b_.add_node(kind, std::move(attrs), std::move(inputs), name);
  // GraphBuilder renames a clash silently; a zoo model must name every op itself.
  BRAID_ASSERT(b_.node(id).name == name, "op name '", name, "' is used twice");
  return b_.output(id);
}

ValueId TorchNetBuilder::conv(const std::string& name, ValueId src, int64_t out_channels,
                              const Window& w, float gain) {
  const int64_t in_channels = channels(src);
  ValueId weight = b_.add_parameter(
      name + ".weight",
      {ir::DType::kFloat32, {out_channels, in_channels, w.kernel[0], w.kernel[1]}},
      ir::ParamInit::normal(gain * he_stddev(in_channels * w.kernel[0] * w.kernel[1])));
  ValueId bias = b_.add_parameter(name + ".bias", {ir::DType::kFloat32, {out_channels}},
                                  ir::ParamInit::normal(kBiasStddev));
  ir::ConvAttrs attrs{.kernel = w.kernel,
                      .stride = w.stride,
                      .pads = {w.padding[0], w.padding[1], w.padding[0], w.padding[1]}};
  return op(OpKind::Conv, attrs, {src, weight, bias}, name);
}

ValueId TorchNetBuilder::conv_relu(const std::string& name, ValueId src, int64_t out_channels,
                                   const Window& w) {
  // A separate Relu op, as in the exported file; ir::fuse puts it in the Conv's unit.
  return relu(name + "/relu", conv(name, src, out_channels, w));
}

ValueId TorchNetBuilder::relu(const std::string& name, ValueId src) {
  return op(OpKind::Relu, {}, {src}, name);
}

ValueId TorchNetBuilder::max_pool(const std::string& name, ValueId src, const Window& w,
                                  bool ceil_mode) {
  ir::PoolAttrs attrs{.kernel = w.kernel,
                      .stride = w.stride,
                      .pads = {w.padding[0], w.padding[1], w.padding[0], w.padding[1]},
                      .ceil_mode = ceil_mode};
  return op(OpKind::MaxPool, attrs, {src}, name);
}

ValueId TorchNetBuilder::avg_pool_padded(const std::string& name, ValueId src, const Window& w) {
  // ONNX pads order for NCHW: [N, C, H, W] begins, then [N, C, H, W] ends.
  ir::PadAttrs pad{.pads = {0, 0, w.padding[0], w.padding[1], 0, 0, w.padding[0], w.padding[1]}};
  ValueId padded = op(OpKind::Pad, pad, {src}, name + "/pad");
  // Zeros padded explicitly are counted, which is count_include_pad=True.
  ir::PoolAttrs attrs{.kernel = w.kernel, .stride = w.stride};
  return op(OpKind::AveragePool, attrs, {padded}, name);
}

ValueId TorchNetBuilder::add(const std::string& name, ValueId a, ValueId b) {
  return op(OpKind::Add, {}, {a, b}, name);
}

ValueId TorchNetBuilder::concat(const std::string& name, std::vector<ValueId> srcs) {
  return op(OpKind::Concat, ir::AxisAttrs{.axis = 1}, std::move(srcs), name);
}

ValueId TorchNetBuilder::global_pool_flatten(const std::string& name, ValueId src) {
  ValueId pooled = op(OpKind::GlobalAveragePool, {}, {src}, name);
  return op(OpKind::Flatten, ir::AxisAttrs{.axis = 1}, {pooled}, name + "/flatten");
}

ValueId TorchNetBuilder::linear(const std::string& name, ValueId src, int64_t out_features) {
  const ir::TensorType& t = b_.type(src);
  BRAID_ASSERT(t.rank() == 2, "linear '", name, "' expects [N, C], got ", ir::to_string(t.shape));
  const int64_t in_features = t.shape[1];
  ValueId weight =
      b_.add_parameter(name + ".weight", {ir::DType::kFloat32, {out_features, in_features}},
                       ir::ParamInit::normal(he_stddev(in_features)));
  ValueId bias = b_.add_parameter(name + ".bias", {ir::DType::kFloat32, {out_features}},
                                  ir::ParamInit::normal(kBiasStddev));
  return op(OpKind::Gemm, ir::GemmAttrs{.trans_b = true}, {src, weight, bias}, name);
}

ValueId TorchNetBuilder::matmul_bias(const std::string& name, ValueId src, int64_t out_features) {
  const int64_t in_features = b_.type(src).shape.back();
  // The exporter stores nn.Linear's weight transposed ([in, out]) for MatMul.
  ValueId weight =
      b_.add_parameter(name + ".weight", {ir::DType::kFloat32, {in_features, out_features}},
                       ir::ParamInit::normal(he_stddev(in_features)));
  ValueId bias = b_.add_parameter(name + ".bias", {ir::DType::kFloat32, {out_features}},
                                  ir::ParamInit::normal(kBiasStddev));
  ValueId y = op(OpKind::MatMul, {}, {src, weight}, name);
  return op(OpKind::Add, {}, {y, bias}, name + "/bias");
}

ir::Graph TorchNetBuilder::finish(ValueId output) && {
  b_.mark_output(output);
  return std::move(b_).build();
}

}  // namespace braid::models::torch
