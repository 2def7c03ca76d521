// SqueezeNet 1.0 as torchvision defines it (torchvision/models/squeezenet.py): no bypass, no
// BatchNorm; the classifier is Dropout (gone in eval mode), a 1x1 conv to 1000 classes, ReLU,
// AdaptiveAvgPool2d((1, 1)) and flatten. The IOS form (squeezenet.cc) is a different network
// (complex bypass). Exported: 26 Conv-Relu, 3 MaxPool (ceil_mode), 8 Concat,
// GlobalAveragePool-Flatten: 38 units once fused.
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
constexpr Window kPool3x3s2{.kernel = {3, 3}, .stride = {2, 2}};

ValueId fire(TorchNetBuilder& net, const std::string& m, ValueId x, int64_t squeeze,
             int64_t expand1x1, int64_t expand3x3) {
  ValueId s = net.conv_relu(m + ".squeeze", x, squeeze, {});
  ValueId e1 = net.conv_relu(m + ".expand1x1", s, expand1x1, {});
  ValueId e3 = net.conv_relu(m + ".expand3x3", s, expand3x3, {.kernel = {3, 3}, .padding = {1, 1}});
  return net.concat(m + "/concat", {e1, e3});  // expand1x1 first, as torchvision concatenates
}

}  // namespace

ir::Graph build_squeezenet1_0_torchvision(const ZooOptions& options) {
  TorchNetBuilder net("tv_squeezenet1_0", options);
  ValueId x = net.add_image_input(kDefaultImageSize);
  // Module indices of torchvision's nn.Sequential `features`, kept in the names.
  x = net.conv_relu("features.0", x, 96, {.kernel = {7, 7}, .stride = {2, 2}});  // 96 x 109 x 109
  x = net.max_pool("features.2", x, kPool3x3s2, true);                           // 96 x 54 x 54
  x = fire(net, "features.3", x, 16, 64, 64);                                    // 128
  x = fire(net, "features.4", x, 16, 64, 64);                                    // 128
  x = fire(net, "features.5", x, 32, 128, 128);                                  // 256
  x = net.max_pool("features.6", x, kPool3x3s2, true);                           // 256 x 27 x 27
  x = fire(net, "features.7", x, 32, 128, 128);                                  // 256
  x = fire(net, "features.8", x, 48, 192, 192);                                  // 384
  x = fire(net, "features.9", x, 48, 192, 192);                                  // 384
  x = fire(net, "features.10", x, 64, 256, 256);                                 // 512
  x = net.max_pool("features.11", x, kPool3x3s2, true);                          // 512 x 13 x 13
  x = fire(net, "features.12", x, 64, 256, 256);                                 // 512
  // classifier: Dropout (gone), final conv + ReLU, global pool, flatten.
  x = net.conv_relu("classifier.1", x, kNumClasses, {});
  return std::move(net).finish(net.global_pool_flatten("classifier.3", x));
}

}  // namespace braid::models
