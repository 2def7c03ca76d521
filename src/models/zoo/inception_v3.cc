// Inception V3 as the IOS authors define it (python/ios/models/inception_v3.py; peers.md §2.2):
// every conv is Conv+bias+ReLU, no BatchNorm, no classifier; 13 blocks, 119 ops, 2048x1x1 out.
// Names follow torchvision's modules, lower-cased ("mixed_5b/branch3x3dbl_2").
#include <string>

#include "models/zoo.h"
#include "models/zoo/ios_layers.h"

namespace braid::models {
namespace {

using ios::IosNetBuilder;
using ios::PoolType;
using ios::Window;

constexpr int64_t kDefaultImageSize = 299;

Window k(int64_t kh, int64_t kw, int64_t ph = 0, int64_t pw = 0, int64_t stride = 1) {
  return {.kernel = {kh, kw}, .stride = {stride, stride}, .padding = {ph, pw}};
}

ValueId stem(IosNetBuilder& net, ValueId v) {
  v = net.conv2d("conv2d_1a_3x3", {{v}}, 32, k(3, 3, 0, 0, 2));  // 32 x 149 x 149
  v = net.conv2d("conv2d_2a_3x3", {{v}}, 32, k(3, 3));           // 32 x 147 x 147
  v = net.conv2d("conv2d_2b_3x3", {{v}}, 64, k(3, 3, 1, 1));     // 64 x 147 x 147
  v = net.pool2d("maxpool1", {{v}}, PoolType::kMax, k(3, 3, 0, 0, 2));
  v = net.conv2d("conv2d_3b_1x1", {{v}}, 80, k(1, 1));                     // 80 x 73 x 73
  v = net.conv2d("conv2d_4a_3x3", {{v}}, 192, k(3, 3));                    // 192 x 71 x 71
  return net.pool2d("maxpool2", {{v}}, PoolType::kMax, k(3, 3, 0, 0, 2));  // 192 x 35 x 35
}

ValueId inception_a(IosNetBuilder& net, const std::string& m, ValueId x, int64_t pool_features) {
  ValueId b1 = net.conv2d(m + "/branch1x1", {{x}}, 64, k(1, 1));
  ValueId b5 = net.conv2d(m + "/branch5x5_1", {{x}}, 48, k(1, 1));
  b5 = net.conv2d(m + "/branch5x5_2", {{b5}}, 64, k(5, 5, 2, 2));
  ValueId b3 = net.conv2d(m + "/branch3x3dbl_1", {{x}}, 64, k(1, 1));
  b3 = net.conv2d(m + "/branch3x3dbl_2", {{b3}}, 96, k(3, 3, 1, 1));
  b3 = net.conv2d(m + "/branch3x3dbl_3", {{b3}}, 96, k(3, 3, 1, 1));
  ValueId bp = net.pool2d(m + "/avgpool", {{x}}, PoolType::kAvg, k(3, 3, 1, 1));
  bp = net.conv2d(m + "/branch_pool", {{bp}}, pool_features, k(1, 1));
  return net.identity(m + "/concat", {{b1}, {b5}, {b3}, {bp}});
}

ValueId inception_b(IosNetBuilder& net, const std::string& m, ValueId x) {
  ValueId b3 = net.conv2d(m + "/branch3x3", {{x}}, 384, k(3, 3, 0, 0, 2));
  ValueId bd = net.conv2d(m + "/branch3x3dbl_1", {{x}}, 64, k(1, 1));
  bd = net.conv2d(m + "/branch3x3dbl_2", {{bd}}, 96, k(3, 3, 1, 1));
  bd = net.conv2d(m + "/branch3x3dbl_3", {{bd}}, 96, k(3, 3, 0, 0, 2));
  ValueId bp = net.pool2d(m + "/maxpool", {{x}}, PoolType::kMax, k(3, 3, 0, 0, 2));
  return net.identity(m + "/concat", {{b3}, {bd}, {bp}});
}

ValueId inception_c(IosNetBuilder& net, const std::string& m, ValueId x, int64_t c7) {
  ValueId b1 = net.conv2d(m + "/branch1x1", {{x}}, 192, k(1, 1));
  ValueId b7 = net.conv2d(m + "/branch7x7_1", {{x}}, c7, k(1, 1));
  b7 = net.conv2d(m + "/branch7x7_2", {{b7}}, c7, k(1, 7, 0, 3));
  b7 = net.conv2d(m + "/branch7x7_3", {{b7}}, 192, k(7, 1, 3, 0));
  ValueId bd = net.conv2d(m + "/branch7x7dbl_1", {{x}}, c7, k(1, 1));
  bd = net.conv2d(m + "/branch7x7dbl_2", {{bd}}, c7, k(7, 1, 3, 0));
  bd = net.conv2d(m + "/branch7x7dbl_3", {{bd}}, c7, k(1, 7, 0, 3));
  bd = net.conv2d(m + "/branch7x7dbl_4", {{bd}}, c7, k(7, 1, 3, 0));
  bd = net.conv2d(m + "/branch7x7dbl_5", {{bd}}, 192, k(1, 7, 0, 3));
  ValueId bp = net.pool2d(m + "/avgpool", {{x}}, PoolType::kAvg, k(3, 3, 1, 1));
  bp = net.conv2d(m + "/branch_pool", {{bp}}, 192, k(1, 1));
  return net.identity(m + "/concat", {{b1}, {b7}, {bd}, {bp}});
}

ValueId inception_d(IosNetBuilder& net, const std::string& m, ValueId x) {
  ValueId b3 = net.conv2d(m + "/branch3x3_1", {{x}}, 192, k(1, 1));
  b3 = net.conv2d(m + "/branch3x3_2", {{b3}}, 320, k(3, 3, 0, 0, 2));
  ValueId b7 = net.conv2d(m + "/branch7x7x3_1", {{x}}, 192, k(1, 1));
  b7 = net.conv2d(m + "/branch7x7x3_2", {{b7}}, 192, k(1, 7, 0, 3));
  b7 = net.conv2d(m + "/branch7x7x3_3", {{b7}}, 192, k(7, 1, 3, 0));
  b7 = net.conv2d(m + "/branch7x7x3_4", {{b7}}, 192, k(3, 3, 0, 0, 2));
  ValueId bp = net.pool2d(m + "/maxpool", {{x}}, PoolType::kMax, k(3, 3, 0, 0, 2));
  return net.identity(m + "/concat", {{b3}, {b7}, {bp}});
}

ValueId inception_e(IosNetBuilder& net, const std::string& m, ValueId x) {
  ValueId b1 = net.conv2d(m + "/branch1x1", {{x}}, 320, k(1, 1));
  ValueId b3 = net.conv2d(m + "/branch3x3_1", {{x}}, 384, k(1, 1));
  ValueId b3a = net.conv2d(m + "/branch3x3_2a", {{b3}}, 384, k(1, 3, 0, 1));
  ValueId b3b = net.conv2d(m + "/branch3x3_2b", {{b3}}, 384, k(3, 1, 1, 0));
  ValueId bd = net.conv2d(m + "/branch3x3dbl_1", {{x}}, 448, k(1, 1));
  bd = net.conv2d(m + "/branch3x3dbl_2", {{bd}}, 384, k(3, 3, 1, 1));
  ValueId bda = net.conv2d(m + "/branch3x3dbl_3a", {{bd}}, 384, k(1, 3, 0, 1));
  ValueId bdb = net.conv2d(m + "/branch3x3dbl_3b", {{bd}}, 384, k(3, 1, 1, 0));
  ValueId bp = net.pool2d(m + "/avgpool", {{x}}, PoolType::kAvg, k(3, 3, 1, 1));
  bp = net.conv2d(m + "/branch_pool", {{bp}}, 192, k(1, 1));
  return net.identity(m + "/concat", {{b1}, {b3a}, {b3b}, {bda}, {bdb}, {bp}});
}

}  // namespace

ir::Graph build_inception_v3_ios(const ZooOptions& options) {
  IosNetBuilder net("inception_v3", options, kDefaultImageSize);
  ValueId v = stem(net, net.input());
  v = inception_a(net, "mixed_5b", v, 32);  // 256 x 35 x 35
  v = inception_a(net, "mixed_5c", v, 64);  // 288
  v = inception_a(net, "mixed_5d", v, 64);  // 288
  v = inception_b(net, "mixed_6a", v);      // 768 x 17 x 17
  v = inception_c(net, "mixed_6b", v, 128);
  v = inception_c(net, "mixed_6c", v, 160);
  v = inception_c(net, "mixed_6d", v, 160);
  v = inception_c(net, "mixed_6e", v, 192);
  v = inception_d(net, "mixed_7a", v);  // 1280 x 8 x 8
  v = inception_e(net, "mixed_7b", v);  // 2048 x 8 x 8
  v = inception_e(net, "mixed_7c", v);
  ValueId out = net.global_avg_pool("avgpool", {{v}});  // 2048 x 1 x 1
  return std::move(net).finish(out);
}

}  // namespace braid::models
