// Builder helpers for the framework-form zoo models: each helper emits the ONNX ops that
// torch.onnx.export (torch 1.13, opset 13, eval mode) writes for the torchvision module it is
// named after, so that a builder's graph and the exported file fuse to the same units.
//
//   TorchNetBuilder net("tiny", options);
//   ValueId x = net.add_image_input(224);
//   x = net.conv_relu("conv1", x, 64, {.kernel = {7, 7}, .stride = {2, 2}, .padding = {3, 3}});
//   x = net.max_pool("maxpool", x, {.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}});
//   ir::Graph g = std::move(net).finish(net.classifier("fc", x, 1000));
//
// What the exporter does that the helpers copy (ecosystem.md §8; checked on the files that
// scripts/export_torchvision.py writes):
//  - eval-mode BatchNorm is folded into the Conv before it, which gains a bias: Conv-BN-ReLU
//    becomes Conv(bias) -> Relu;
//  - Dropout disappears; AdaptiveAvgPool2d((1, 1)) becomes GlobalAveragePool, torch.flatten a
//    Flatten(axis 1) and nn.Linear a Gemm(transB = 1);
//  - avg_pool2d with padding (count_include_pad) becomes Pad (a Constant pads input) + an
//    AveragePool without padding;
//  - torch.cat of a list that holds another torch.cat is flattened into one Concat.
// The fusion rules of ir::fuse then give Conv-Relu, Pad-AveragePool, Add-Relu and
// GlobalAveragePool-Flatten units with no unit hints, for exported and built graphs alike.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "models/zoo.h"

namespace braid::models::torch {

// A Conv2d or pooling window; torch pads symmetrically.
struct Window {
  std::array<int64_t, 2> kernel{1, 1};
  std::array<int64_t, 2> stride{1, 1};
  std::array<int64_t, 2> padding{0, 0};
};

class TorchNetBuilder {
 public:
  TorchNetBuilder(std::string graph_name, const ZooOptions& options);

  ir::GraphBuilder& builder() { return b_; }
  const ZooOptions& options() const { return options_; }
  int64_t channels(ValueId v) const { return b_.type(v).shape.at(1); }

  // Input "input" of shape [batch, 3, S, S], S = options.image_size or `default_size`.
  ValueId add_image_input(int64_t default_size);

  // Conv2d with a bias (a torch bias, or the folded BatchNorm's): "<name>.weight" He-initialized
  // and scaled by `gain`, "<name>.bias" small normal.
  ValueId conv(const std::string& name, ValueId src, int64_t out_channels, const Window& w,
               float gain = 1.0f);
  // Conv2d (+ folded BatchNorm) -> ReLU, the BasicConv2d / conv-bn-relu of torchvision.
  ValueId conv_relu(const std::string& name, ValueId src, int64_t out_channels, const Window& w);
  ValueId relu(const std::string& name, ValueId src);
  ValueId max_pool(const std::string& name, ValueId src, const Window& w, bool ceil_mode = false);
  // avg_pool2d(count_include_pad=True) as the exporter writes it: Pad(0) -> AveragePool.
  ValueId avg_pool_padded(const std::string& name, ValueId src, const Window& w);
  ValueId add(const std::string& name, ValueId a, ValueId b);
  ValueId concat(const std::string& name, std::vector<ValueId> srcs);
  // AdaptiveAvgPool2d((1, 1)) -> torch.flatten(x, 1).
  ValueId global_pool_flatten(const std::string& name, ValueId src);
  // nn.Linear on [N, C]: Gemm(transB = 1) with "<name>.weight" [out, C] and "<name>.bias".
  ValueId linear(const std::string& name, ValueId src, int64_t out_features);
  // nn.Linear on [..., C] as a transformer exports it: MatMul by [C, out], then a bias Add.
  ValueId matmul_bias(const std::string& name, ValueId src, int64_t out_features);

  // Adds one op named exactly `name` (asserts the name is new) and returns its output.
  ValueId op(ir::OpKind kind, ir::OpAttrs attrs, std::vector<ValueId> inputs, std::string name);

  // Marks `output` as the graph output and builds the graph.
  ir::Graph finish(ValueId output) &&;

 private:
  ir::GraphBuilder b_;
  ZooOptions options_;
};

// Standard deviation of He (Kaiming) normal initialization for a layer with `fan_in` inputs:
// keeps activations at unit scale through deep ReLU stacks without BatchNorm.
float he_stddev(int64_t fan_in);

}  // namespace braid::models::torch
