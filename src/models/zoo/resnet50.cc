// ResNet-50 as torchvision defines it (torchvision/models/resnet.py, "v1.5": the stride sits on
// the 3x3 conv of a bottleneck). Exported in eval mode by torch 1.13: 53 Conv (BatchNorm folded),
// 49 Relu, 16 Add, one MaxPool, GlobalAveragePool, Flatten, Gemm. Fused: 53 Conv(-Relu) units,
// of which the 16 conv3 units take their block's residual Add and final ReLU
// (Conv-Add-Relu), the MaxPool, the pooling head and the Gemm: 56 units (72 with
// ir::FuseOptions::residual off, each Add-Relu a unit of its own).
#include <array>
#include <string>

#include "models/zoo.h"
#include "models/zoo/torch_layers.h"

namespace braid::models {
namespace {

using torch::TorchNetBuilder;
using torch::Window;

constexpr int64_t kDefaultImageSize = 224;
constexpr int64_t kNumClasses = 1000;
constexpr int64_t kExpansion = 4;  // a bottleneck's output is 4x its inner width
// Without BatchNorm every residual Add grows the activations; a small last conv per bottleneck
// (the spirit of torchvision's zero_init_residual) keeps random-weight outputs near unit scale.
constexpr float kResidualGain = 0.1f;

ValueId bottleneck(TorchNetBuilder& net, const std::string& m, ValueId x, int64_t width,
                   int64_t stride) {
  const int64_t out_channels = width * kExpansion;
  ValueId y = net.conv_relu(m + ".conv1", x, width, {});
  y = net.conv_relu(m + ".conv2", y, width,
                    {.kernel = {3, 3}, .stride = {stride, stride}, .padding = {1, 1}});
  y = net.conv(m + ".conv3", y, out_channels, {}, kResidualGain);
  ValueId identity = x;
  if (stride != 1 || net.channels(x) != out_channels)
    identity = net.conv(m + ".downsample.0", x, out_channels, {.stride = {stride, stride}});
  return net.relu(m + ".relu", net.add(m + ".add", y, identity));
}

}  // namespace

ir::Graph build_resnet50(const ZooOptions& options) {
  TorchNetBuilder net("resnet50", options);
  ValueId x = net.add_image_input(kDefaultImageSize);
  x = net.conv_relu("conv1", x, 64, {.kernel = {7, 7}, .stride = {2, 2}, .padding = {3, 3}});
  x = net.max_pool("maxpool", x, {.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}});
  struct Stage {
    int64_t blocks, width, stride;
  };
  constexpr std::array<Stage, 4> kStages = {{{3, 64, 1}, {4, 128, 2}, {6, 256, 2}, {3, 512, 2}}};
  for (size_t s = 0; s < kStages.size(); ++s) {
    for (int64_t i = 0; i < kStages[s].blocks; ++i) {
      const std::string m = "layer" + std::to_string(s + 1) + "." + std::to_string(i);
      x = bottleneck(net, m, x, kStages[s].width, i == 0 ? kStages[s].stride : 1);
    }
  }
  x = net.global_pool_flatten("avgpool", x);  // 2048
  return std::move(net).finish(net.linear("fc", x, kNumClasses));
}

}  // namespace braid::models
