// NASNet-A large as the IOS authors define it (python/ios/models/nasnet.py; peers.md §2.5):
// conv0, two stem cells, then 3 x (first cell + 5 normal cells) with reduction cells between,
// Relu, global average pool. Cells are built of ReluConv and ReluSepConv compounds (one unit
// each); a cell output is an IOS Identity whose summed terms become Sum ops in the Concat's unit.
// 374 ops, 3360x1x1 out. IOS quirk kept (peers.md §1.8 quirk 4): normal cells leave x_left out
// of their concat, so they give 5R channels, not 6R. Names follow Cadene's pretrained-models
// NASNet ("cell_7/comb_iter_0_left/sep1").
#include <array>
#include <string>

#include "models/zoo.h"
#include "models/zoo/ios_layers.h"

namespace braid::models {
namespace {

using ios::IosNetBuilder;
using ios::PoolType;
using ios::Window;

constexpr int64_t kDefaultImageSize = 331;
constexpr int64_t kStemFilters = 96;
constexpr int64_t kFilters = 168;

// One cell's ops, named "<cell>/<op>".
class Cell {
 public:
  Cell(IosNetBuilder& net, std::string name) : net_(net), name_(std::move(name)) {}

  ValueId relu_conv(const std::string& op, ValueId x, int64_t out_channels, int64_t stride = 1) {
    return net_.relu_conv(path(op), {{x}}, out_channels, {.stride = {stride, stride}});
  }
  // IOS branch_separable: the first ReluSepConv keeps x's width, the second maps to C.
  ValueId branch(const std::string& op, ValueId x, int64_t out_channels, int64_t kernel,
                 int64_t stride = 1) {
    x = net_.relu_sep_conv(path(op + "/sep1"), {{x}}, net_.channels(x), sep(kernel, stride));
    return net_.relu_sep_conv(path(op + "/sep2"), {{x}}, out_channels, sep(kernel, 1));
  }
  // IOS branch_separable_stem: the first ReluSepConv already maps to C.
  ValueId branch_stem(const std::string& op, ValueId x, int64_t out_channels, int64_t kernel,
                      int64_t stride) {
    x = net_.relu_sep_conv(path(op + "/sep1"), {{x}}, out_channels, sep(kernel, stride));
    return net_.relu_sep_conv(path(op + "/sep2"), {{x}}, out_channels, sep(kernel, 1));
  }
  ValueId pool(const std::string& op, ValueId x, PoolType type, int64_t stride) {
    return net_.pool2d(path(op), {{x}}, type,
                       {.kernel = {3, 3}, .stride = {stride, stride}, .padding = {1, 1}});
  }
  ValueId identity(const std::string& op, const ios::Terms& in) {
    return net_.identity(path(op), in);
  }

 private:
  std::string path(const std::string& op) const { return name_ + "/" + op; }
  static Window sep(int64_t kernel, int64_t stride) {
    return {.kernel = {kernel, kernel},
            .stride = {stride, stride},
            .padding = {kernel / 2, kernel / 2}};
  }
  IosNetBuilder& net_;
  std::string name_;
};

ValueId stem0(IosNetBuilder& net, ValueId x, int64_t f) {
  Cell c(net, "cell_stem_0");
  ValueId x1 = c.relu_conv("conv_1x1", x, f);
  ValueId c0l = c.branch("comb_iter_0_left", x1, f, 5, 2);
  ValueId c0r = c.branch_stem("comb_iter_0_right", x, f, 7, 2);
  ValueId c0 = c.identity("comb_iter_0", {{c0l, c0r}});
  ValueId c1l = c.pool("comb_iter_1_left", x1, PoolType::kMax, 2);
  ValueId c1r = c.branch_stem("comb_iter_1_right", x, f, 7, 2);
  ValueId c1 = c.identity("comb_iter_1", {{c1l, c1r}});
  ValueId c2l = c.pool("comb_iter_2_left", x1, PoolType::kAvg, 2);
  ValueId c2r = c.branch_stem("comb_iter_2_right", x, f, 5, 2);
  ValueId c3r = c.pool("comb_iter_3_right", c0, PoolType::kAvg, 1);
  ValueId c4l = c.branch("comb_iter_4_left", c0, f, 3);
  ValueId c4r = c.pool("comb_iter_4_right", x1, PoolType::kMax, 2);
  return c.identity("concat", {{c1}, {c2l, c2r}, {c3r, c0}, {c4l, c4r}});
}

ValueId stem1(IosNetBuilder& net, ValueId hp, ValueId h, int64_t f) {
  Cell c(net, "cell_stem_1");
  ValueId xl = c.relu_conv("conv_1x1", hp, f);
  ValueId xr1 = c.relu_conv("path_1", h, f / 2, 2);
  ValueId xr2 = c.relu_conv("path_2", h, f / 2, 2);
  ValueId xr = c.identity("path", {{xr1, xr2}});  // a sum, as IOS writes it
  ValueId c0l = c.branch("comb_iter_0_left", xl, f, 5, 2);
  ValueId c0r = c.branch("comb_iter_0_right", xr, f, 7, 2);
  ValueId c0 = c.identity("comb_iter_0", {{c0l, c0r}});
  ValueId c1l = c.pool("comb_iter_1_left", xl, PoolType::kMax, 2);
  ValueId c1r = c.branch("comb_iter_1_right", xr, f, 7, 2);
  ValueId c1 = c.identity("comb_iter_1", {{c1l, c1r}});
  ValueId c2l = c.pool("comb_iter_2_left", xl, PoolType::kAvg, 2);
  ValueId c2r = c.branch("comb_iter_2_right", xr, f, 5, 2);
  ValueId c3r = c.pool("comb_iter_3_right", c0, PoolType::kAvg, 1);
  ValueId c4l = c.branch("comb_iter_4_left", c0, f, 3);
  ValueId c4r = c.pool("comb_iter_4_right", xl, PoolType::kMax, 2);
  return c.identity("concat", {{c1}, {c2l, c2r}, {c3r, c1}, {c4l, c4r}});
}

// Output 2L + 5R channels at x's resolution; x_prev has twice that resolution.
ValueId first_cell(IosNetBuilder& net, const std::string& name, ValueId x, ValueId x_prev,
                   int64_t left, int64_t right) {
  Cell c(net, name);
  ValueId xl1 = c.relu_conv("path_1", x_prev, left, 2);
  ValueId xl2 = c.relu_conv("path_2", x_prev, left, 2);
  ValueId xl = c.identity("path", {{xl1}, {xl2}});  // a concat
  ValueId xr = c.relu_conv("conv_1x1", x, right);
  ValueId c0l = c.branch("comb_iter_0_left", xr, right, 5);
  ValueId c0r = c.branch("comb_iter_0_right", xr, right, 3);
  ValueId c1l = c.branch("comb_iter_1_left", xl, right, 5);
  ValueId c1r = c.branch("comb_iter_1_right", xl, right, 3);
  ValueId c2l = c.pool("comb_iter_2_left", xr, PoolType::kAvg, 1);
  ValueId c3l = c.pool("comb_iter_3_left", xl, PoolType::kAvg, 1);
  ValueId c3r = c.pool("comb_iter_3_right", xl, PoolType::kAvg, 1);
  ValueId c4l = c.branch("comb_iter_4_left", xr, right, 3);
  return c.identity("concat", {{xl}, {c0l, c0r}, {c1l, c1r}, {c2l, xl}, {c3l, c3r}, {c4l, xr}});
}

// Output 5R channels (IOS omits the x_left term of the concat).
ValueId normal_cell(IosNetBuilder& net, const std::string& name, ValueId x, ValueId x_prev,
                    int64_t left, int64_t right) {
  Cell c(net, name);
  ValueId xl = c.relu_conv("conv_prev_1x1", x_prev, left);
  ValueId xr = c.relu_conv("conv_1x1", x, right);
  ValueId c0l = c.branch("comb_iter_0_left", xr, right, 5);
  ValueId c0r = c.branch("comb_iter_0_right", xl, left, 3);
  ValueId c1l = c.branch("comb_iter_1_left", xl, left, 5);
  ValueId c1r = c.branch("comb_iter_1_right", xl, left, 3);
  ValueId c2l = c.pool("comb_iter_2_left", xr, PoolType::kAvg, 1);
  ValueId c3l = c.pool("comb_iter_3_left", xl, PoolType::kAvg, 1);
  ValueId c3r = c.pool("comb_iter_3_right", xl, PoolType::kAvg, 1);
  ValueId c4l = c.branch("comb_iter_4_left", xr, right, 3);
  return c.identity("concat", {{c0l, c0r}, {c1l, c1r}, {c2l, xl}, {c3l, c3r}, {c4l, xr}});
}

// Output 4R channels at half x's resolution.
ValueId reduction_cell(IosNetBuilder& net, const std::string& name, ValueId x, ValueId x_prev,
                       int64_t left, int64_t right) {
  Cell c(net, name);
  ValueId xl = c.relu_conv("conv_prev_1x1", x_prev, left);
  ValueId xr = c.relu_conv("conv_1x1", x, right);
  ValueId c0l = c.branch("comb_iter_0_left", xr, right, 5, 2);
  ValueId c0r = c.branch("comb_iter_0_right", xl, right, 7, 2);
  ValueId c0 = c.identity("comb_iter_0", {{c0l, c0r}});
  ValueId c1l = c.pool("comb_iter_1_left", xr, PoolType::kMax, 2);
  ValueId c1r = c.branch("comb_iter_1_right", xl, right, 7, 2);
  ValueId c1 = c.identity("comb_iter_1", {{c1l, c1r}});
  ValueId c2l = c.pool("comb_iter_2_left", xr, PoolType::kAvg, 2);
  ValueId c2r = c.branch("comb_iter_2_right", xl, right, 5, 2);
  ValueId c3r = c.pool("comb_iter_3_right", c0, PoolType::kAvg, 1);
  ValueId c4l = c.branch("comb_iter_4_left", c0, right, 3);
  ValueId c4r = c.pool("comb_iter_4_right", xr, PoolType::kMax, 2);
  return c.identity("concat", {{c1l, c1r}, {c2l, c2r}, {c1, c3r}, {c4l, c4r}});
}

}  // namespace

ir::Graph build_nasnet_ios(const ZooOptions& options) {
  IosNetBuilder net("nasnet", options, kDefaultImageSize);
  constexpr int64_t f = kFilters;
  // v[i] is IOS's v<i>; the wiring (which cells a cell reads) is exactly IOS's.
  std::array<ValueId, 24> v{};
  v[1] = net.conv2d("conv0", {{net.input()}}, kStemFilters, {.kernel = {3, 3}, .stride = {2, 2}},
                    ir::Activation::kNone);                // 96 x 165 x 165
  v[2] = stem0(net, v[1], f / 4);                          // 168 x 83 x 83
  v[3] = stem1(net, v[2], v[1], f / 2);                    // 336 x 42 x 42
  v[4] = first_cell(net, "cell_0", v[3], v[2], f / 2, f);  // 1008 x 42 x 42
  for (int i = 5; i <= 9; ++i)                             // 840 x 42 x 42
    v[i] = normal_cell(net, "cell_" + std::to_string(i - 4), v[i - 1], v[i - 2], f, f);
  v[10] = reduction_cell(net, "reduction_cell_0", v[9], v[8], 2 * f, 2 * f);  // 1344 x 21 x 21
  v[11] = first_cell(net, "cell_6", v[10], v[8], f, 2 * f);                   // 2016 x 21 x 21
  for (int i = 12; i <= 16; ++i)                                              // 1680 x 21 x 21
    v[i] = normal_cell(net, "cell_" + std::to_string(i - 5), v[i - 1], v[i - 2], 2 * f, 2 * f);
  v[17] = reduction_cell(net, "reduction_cell_1", v[16], v[15], 4 * f, 4 * f);  // 2688 x 11 x 11
  v[18] = first_cell(net, "cell_12", v[17], v[15], 2 * f, 4 * f);               // 4032 x 11 x 11
  for (int i = 19; i <= 23; ++i)                                                // 3360 x 11 x 11
    v[i] = normal_cell(net, "cell_" + std::to_string(i - 6), v[i - 1], v[i - 2], 4 * f, 4 * f);
  ValueId r = net.relu("relu", {{v[23]}});
  ValueId out = net.global_avg_pool("avgpool", {{r}});  // 3360 x 1 x 1
  return std::move(net).finish(out);
}

}  // namespace braid::models
