// GoogLeNet as torchvision defines it (torchvision/models/googlenet.py), in eval mode with
// transform_input=False and without the auxiliary heads (they only run in training). Exported
// by torch 1.13 it is 57 Conv-Relu, 13 MaxPool (all ceil_mode), 9 Concat, GlobalAveragePool,
// Flatten and Gemm: 81 units once fused. torchvision's branch3 uses a 3x3 conv where the paper
// has 5x5 (a known quirk kept for weight compatibility); we copy it.
#include <string>

#include "models/zoo.h"
#include "models/zoo/torch_layers.h"

namespace braid::models {
namespace {

using torch::TorchNetBuilder;
using torch::Window;

constexpr int64_t kDefaultImageSize = 224;
constexpr int64_t kNumClasses = 1000;
constexpr Window k1x1{};
constexpr Window k3x3{.kernel = {3, 3}, .padding = {1, 1}};
constexpr Window kPool3x3s2{.kernel = {3, 3}, .stride = {2, 2}};

struct InceptionWidths {
  int64_t ch1x1, ch3x3red, ch3x3, ch5x5red, ch5x5, pool_proj;
};

ValueId inception(TorchNetBuilder& net, const std::string& m, ValueId x, InceptionWidths c) {
  ValueId b1 = net.conv_relu(m + ".branch1", x, c.ch1x1, k1x1);
  ValueId b2 = net.conv_relu(m + ".branch2.0", x, c.ch3x3red, k1x1);
  b2 = net.conv_relu(m + ".branch2.1", b2, c.ch3x3, k3x3);
  ValueId b3 = net.conv_relu(m + ".branch3.0", x, c.ch5x5red, k1x1);
  b3 = net.conv_relu(m + ".branch3.1", b3, c.ch5x5, k3x3);
  ValueId b4 = net.max_pool(m + ".branch4.0", x, {.kernel = {3, 3}, .padding = {1, 1}},
                            /*ceil_mode=*/true);
  b4 = net.conv_relu(m + ".branch4.1", b4, c.pool_proj, k1x1);
  return net.concat(m + "/concat", {b1, b2, b3, b4});
}

}  // namespace

ir::Graph build_googlenet(const ZooOptions& options) {
  TorchNetBuilder net("googlenet", options);
  ValueId x = net.add_image_input(kDefaultImageSize);
  x = net.conv_relu("conv1", x, 64, {.kernel = {7, 7}, .stride = {2, 2}, .padding = {3, 3}});
  x = net.max_pool("maxpool1", x, kPool3x3s2, true);  // 64 x 56 x 56
  x = net.conv_relu("conv2", x, 64, k1x1);
  x = net.conv_relu("conv3", x, 192, k3x3);
  x = net.max_pool("maxpool2", x, kPool3x3s2, true);  // 192 x 28 x 28
  x = inception(net, "inception3a", x, {64, 96, 128, 16, 32, 32});
  x = inception(net, "inception3b", x, {128, 128, 192, 32, 96, 64});
  x = net.max_pool("maxpool3", x, kPool3x3s2, true);  // 480 x 14 x 14
  x = inception(net, "inception4a", x, {192, 96, 208, 16, 48, 64});
  x = inception(net, "inception4b", x, {160, 112, 224, 24, 64, 64});
  x = inception(net, "inception4c", x, {128, 128, 256, 24, 64, 64});
  x = inception(net, "inception4d", x, {112, 144, 288, 32, 64, 64});
  x = inception(net, "inception4e", x, {256, 160, 320, 32, 128, 128});
  x = net.max_pool("maxpool4", x, {.kernel = {2, 2}, .stride = {2, 2}}, true);  // 832 x 7 x 7
  x = inception(net, "inception5a", x, {256, 160, 320, 32, 128, 128});
  x = inception(net, "inception5b", x, {384, 192, 384, 48, 128, 128});
  x = net.global_pool_flatten("avgpool", x);  // 1024; Dropout(0.2) is gone in eval mode
  return std::move(net).finish(net.linear("fc", x, kNumClasses));
}

}  // namespace braid::models
