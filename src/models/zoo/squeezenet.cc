// SqueezeNet with complex bypass as the IOS authors define it (python/ios/models/squeezenet.py;
// peers.md §2.3): 12 blocks, 50 ops, 1000x1x1 out, no BatchNorm, no classifier beyond conv10.
// Fire modules concatenate expand3x3 before expand1x1 (IOS's order); the bypass sum is an IOS
// Identity of its own, here a Sum op that is its own unit.
#include <string>

#include "models/zoo.h"
#include "models/zoo/ios_layers.h"

namespace braid::models {
namespace {

using ios::IosNetBuilder;
using ios::PoolType;
using ios::Window;

constexpr int64_t kDefaultImageSize = 224;
constexpr Window kPool3x3s2{.kernel = {3, 3}, .stride = {2, 2}};
constexpr Window k1x1{};

ValueId fire_complex(IosNetBuilder& net, const std::string& m, ValueId x, int64_t squeeze,
                     int64_t expand) {
  ValueId s = net.conv2d(m + "/squeeze", {{x}}, squeeze, k1x1);
  ValueId e3 = net.conv2d(m + "/expand3x3", {{s}}, expand, {.kernel = {3, 3}, .padding = {1, 1}});
  ValueId e1 = net.conv2d(m + "/expand1x1", {{s}}, expand, k1x1);
  ValueId cat = net.identity(m + "/concat", {{e3}, {e1}});
  // The bypass adds the block input, through a 1x1 conv when the widths differ.
  ValueId bypass = x;
  if (net.channels(x) != 2 * expand) bypass = net.conv2d(m + "/bypass", {{x}}, 2 * expand, k1x1);
  return net.identity(m + "/add", {{cat, bypass}});
}

}  // namespace

ir::Graph build_squeezenet_ios(const ZooOptions& options) {
  IosNetBuilder net("squeezenet", options, kDefaultImageSize);
  ValueId v =
      net.conv2d("conv1", {{net.input()}}, 96,
                 {.kernel = {7, 7}, .stride = {2, 2}, .padding = {3, 3}});  // 96 x 112 x 112
  v = net.pool2d("maxpool1", {{v}}, PoolType::kMax, kPool3x3s2);            // 96 x 55 x 55
  v = fire_complex(net, "fire2", v, 16, 64);                                // 128
  v = fire_complex(net, "fire3", v, 16, 64);                                // 128
  v = fire_complex(net, "fire4", v, 32, 128);                               // 256
  v = net.pool2d("maxpool4", {{v}}, PoolType::kMax, kPool3x3s2);            // 256 x 27 x 27
  v = fire_complex(net, "fire5", v, 32, 128);                               // 256
  v = fire_complex(net, "fire6", v, 48, 192);                               // 384
  v = fire_complex(net, "fire7", v, 48, 192);                               // 384
  v = fire_complex(net, "fire8", v, 64, 256);                               // 512
  v = net.pool2d("maxpool8", {{v}}, PoolType::kMax, kPool3x3s2);            // 512 x 13 x 13
  v = fire_complex(net, "fire9", v, 64, 256);                               // 512
  v = net.conv2d("conv10", {{v}}, 1000, k1x1);
  ValueId out = net.global_avg_pool("avgpool", {{v}});  // 1000 x 1 x 1
  return std::move(net).finish(out);
}

}  // namespace braid::models
