// Inception V3 as torchvision defines it (torchvision/models/inception.py), in eval mode with
// transform_input=False and without the auxiliary classifier. This is the framework form; the
// IOS form (inception_v3.cc) has no BatchNorm, no head and IOS's own op boundaries.
// Exported by torch 1.13 at opset 13 it is 94 Conv-Relu, 9 Pad + AveragePool pairs (avg_pool2d
// with count_include_pad), 4 MaxPool, 11 Concat, GlobalAveragePool, Flatten and Gemm: the
// exporter flattens InceptionE's torch.cat of inner torch.cats into one 6-input Concat, and so
// do we. Fused: 94 + 9 + 4 + 11 + 2 = 120 units.
#include <string>

#include "models/zoo.h"
#include "models/zoo/torch_layers.h"

namespace braid::models {
namespace {

using torch::TorchNetBuilder;
using torch::Window;

constexpr int64_t kDefaultImageSize = 299;
constexpr int64_t kNumClasses = 1000;
constexpr Window k1x1{};
constexpr Window k3x3{.kernel = {3, 3}};
constexpr Window k3x3p1{.kernel = {3, 3}, .padding = {1, 1}};
constexpr Window k3x3s2{.kernel = {3, 3}, .stride = {2, 2}};
constexpr Window k1x3{.kernel = {1, 3}, .padding = {0, 1}};
constexpr Window k3x1{.kernel = {3, 1}, .padding = {1, 0}};
constexpr Window k1x7{.kernel = {1, 7}, .padding = {0, 3}};
constexpr Window k7x1{.kernel = {7, 1}, .padding = {3, 0}};
// F.avg_pool2d(x, kernel_size=3, stride=1, padding=1) of the branch_pool paths.
constexpr Window kAvgPool{.kernel = {3, 3}, .padding = {1, 1}};

ValueId inception_a(TorchNetBuilder& net, const std::string& m, ValueId x, int64_t pool_features) {
  ValueId b1 = net.conv_relu(m + ".branch1x1", x, 64, k1x1);
  ValueId b5 = net.conv_relu(m + ".branch5x5_1", x, 48, k1x1);
  b5 = net.conv_relu(m + ".branch5x5_2", b5, 64, {.kernel = {5, 5}, .padding = {2, 2}});
  ValueId b3 = net.conv_relu(m + ".branch3x3dbl_1", x, 64, k1x1);
  b3 = net.conv_relu(m + ".branch3x3dbl_2", b3, 96, k3x3p1);
  b3 = net.conv_relu(m + ".branch3x3dbl_3", b3, 96, k3x3p1);
  ValueId bp = net.avg_pool_padded(m + "/avg_pool", x, kAvgPool);
  bp = net.conv_relu(m + ".branch_pool", bp, pool_features, k1x1);
  return net.concat(m + "/concat", {b1, b5, b3, bp});
}

ValueId inception_b(TorchNetBuilder& net, const std::string& m, ValueId x) {
  ValueId b3 = net.conv_relu(m + ".branch3x3", x, 384, k3x3s2);
  ValueId bd = net.conv_relu(m + ".branch3x3dbl_1", x, 64, k1x1);
  bd = net.conv_relu(m + ".branch3x3dbl_2", bd, 96, k3x3p1);
  bd = net.conv_relu(m + ".branch3x3dbl_3", bd, 96, k3x3s2);
  ValueId bp = net.max_pool(m + "/max_pool", x, k3x3s2);
  return net.concat(m + "/concat", {b3, bd, bp});
}

ValueId inception_c(TorchNetBuilder& net, const std::string& m, ValueId x, int64_t c7) {
  ValueId b1 = net.conv_relu(m + ".branch1x1", x, 192, k1x1);
  ValueId b7 = net.conv_relu(m + ".branch7x7_1", x, c7, k1x1);
  b7 = net.conv_relu(m + ".branch7x7_2", b7, c7, k1x7);
  b7 = net.conv_relu(m + ".branch7x7_3", b7, 192, k7x1);
  ValueId bd = net.conv_relu(m + ".branch7x7dbl_1", x, c7, k1x1);
  bd = net.conv_relu(m + ".branch7x7dbl_2", bd, c7, k7x1);
  bd = net.conv_relu(m + ".branch7x7dbl_3", bd, c7, k1x7);
  bd = net.conv_relu(m + ".branch7x7dbl_4", bd, c7, k7x1);
  bd = net.conv_relu(m + ".branch7x7dbl_5", bd, 192, k1x7);
  ValueId bp = net.avg_pool_padded(m + "/avg_pool", x, kAvgPool);
  bp = net.conv_relu(m + ".branch_pool", bp, 192, k1x1);
  return net.concat(m + "/concat", {b1, b7, bd, bp});
}

ValueId inception_d(TorchNetBuilder& net, const std::string& m, ValueId x) {
  ValueId b3 = net.conv_relu(m + ".branch3x3_1", x, 192, k1x1);
  b3 = net.conv_relu(m + ".branch3x3_2", b3, 320, k3x3s2);
  ValueId b7 = net.conv_relu(m + ".branch7x7x3_1", x, 192, k1x1);
  b7 = net.conv_relu(m + ".branch7x7x3_2", b7, 192, k1x7);
  b7 = net.conv_relu(m + ".branch7x7x3_3", b7, 192, k7x1);
  b7 = net.conv_relu(m + ".branch7x7x3_4", b7, 192, k3x3s2);
  ValueId bp = net.max_pool(m + "/max_pool", x, k3x3s2);
  return net.concat(m + "/concat", {b3, b7, bp});
}

ValueId inception_e(TorchNetBuilder& net, const std::string& m, ValueId x) {
  ValueId b1 = net.conv_relu(m + ".branch1x1", x, 320, k1x1);
  ValueId b3 = net.conv_relu(m + ".branch3x3_1", x, 384, k1x1);
  ValueId b3a = net.conv_relu(m + ".branch3x3_2a", b3, 384, k1x3);
  ValueId b3b = net.conv_relu(m + ".branch3x3_2b", b3, 384, k3x1);
  ValueId bd = net.conv_relu(m + ".branch3x3dbl_1", x, 448, k1x1);
  bd = net.conv_relu(m + ".branch3x3dbl_2", bd, 384, k3x3p1);
  ValueId bda = net.conv_relu(m + ".branch3x3dbl_3a", bd, 384, k1x3);
  ValueId bdb = net.conv_relu(m + ".branch3x3dbl_3b", bd, 384, k3x1);
  ValueId bp = net.avg_pool_padded(m + "/avg_pool", x, kAvgPool);
  bp = net.conv_relu(m + ".branch_pool", bp, 192, k1x1);
  // torch.cat([b1, cat([b3a, b3b]), cat([bda, bdb]), bp]) as the exporter writes it.
  return net.concat(m + "/concat", {b1, b3a, b3b, bda, bdb, bp});
}

}  // namespace

ir::Graph build_inception_v3_torchvision(const ZooOptions& options) {
  TorchNetBuilder net("tv_inception_v3", options);
  ValueId x = net.add_image_input(kDefaultImageSize);
  x = net.conv_relu("Conv2d_1a_3x3", x, 32, k3x3s2);  // 32 x 149 x 149
  x = net.conv_relu("Conv2d_2a_3x3", x, 32, k3x3);    // 32 x 147 x 147
  x = net.conv_relu("Conv2d_2b_3x3", x, 64, k3x3p1);  // 64 x 147 x 147
  x = net.max_pool("maxpool1", x, k3x3s2);            // 64 x 73 x 73
  x = net.conv_relu("Conv2d_3b_1x1", x, 80, k1x1);    // 80 x 73 x 73
  x = net.conv_relu("Conv2d_4a_3x3", x, 192, k3x3);   // 192 x 71 x 71
  x = net.max_pool("maxpool2", x, k3x3s2);            // 192 x 35 x 35
  x = inception_a(net, "Mixed_5b", x, 32);            // 256 x 35 x 35
  x = inception_a(net, "Mixed_5c", x, 64);            // 288
  x = inception_a(net, "Mixed_5d", x, 64);            // 288
  x = inception_b(net, "Mixed_6a", x);                // 768 x 17 x 17
  x = inception_c(net, "Mixed_6b", x, 128);
  x = inception_c(net, "Mixed_6c", x, 160);
  x = inception_c(net, "Mixed_6d", x, 160);
  x = inception_c(net, "Mixed_6e", x, 192);
  x = inception_d(net, "Mixed_7a", x);        // 1280 x 8 x 8
  x = inception_e(net, "Mixed_7b", x);        // 2048 x 8 x 8
  x = inception_e(net, "Mixed_7c", x);        // 2048 x 8 x 8
  x = net.global_pool_flatten("avgpool", x);  // Dropout is gone in eval mode
  return std::move(net).finish(net.linear("fc", x, kNumClasses));
}

}  // namespace braid::models
