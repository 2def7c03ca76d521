#include "ir/features.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "base/error.h"

namespace braid::ir {
namespace {

float at(const std::vector<float>& f, std::string_view name) {
  const auto& names = unit_feature_names();
  const auto it = std::find(names.begin(), names.end(), name);
  EXPECT_NE(it, names.end()) << name;
  return it == names.end() ? -1.0f : f[static_cast<size_t>(it - names.begin())];
}

TEST(UnitFeatures, ConvReluAndPoolCarryTheirWindows) {
  GraphBuilder b("features");
  ValueId x = b.add_input("x", {DType::kFloat32, {1, 4, 16, 16}});
  ValueId w = b.add_parameter("w", {DType::kFloat32, {8, 2, 3, 3}});
  ConvAttrs conv{.kernel = {3, 3}, .stride = {2, 2}, .pads = {1, 1, 1, 1}, .groups = 2};
  ValueId c = b.add_op(OpKind::Relu, {}, {b.add_op(OpKind::Conv, conv, {x, w}, "conv")}, "relu");
  PoolAttrs pool{.kernel = {2, 2}, .stride = {2, 2}};
  b.mark_output(b.add_op(OpKind::MaxPool, pool, {c}, "pool"));
  const UnitGraph u = fuse(std::make_shared<const Graph>(std::move(b).build()));
  ASSERT_EQ(u.num_units(), 2u);
  ASSERT_EQ(unit_feature_names().size(), kUnitFeatures);

  const std::vector<float> f = unit_features(u, UnitId{0});
  ASSERT_EQ(f.size(), kUnitFeatures);
  EXPECT_EQ(at(f, "op:Conv"), 1.0f);
  EXPECT_EQ(at(f, "op:Relu"), 1.0f);
  EXPECT_EQ(at(f, "op:MaxPool"), 0.0f);
  EXPECT_EQ(at(f, "stride:0"), 2.0f / 4);
  EXPECT_EQ(at(f, "kernel:1"), 3.0f / 4);
  EXPECT_EQ(at(f, "pad:bottom"), 1.0f / 4);
  EXPECT_FLOAT_EQ(at(f, "log2_groups"), 1.0f / 8);
  EXPECT_EQ(at(f, "activation:relu"), 1.0f);
  EXPECT_EQ(at(f, "activation:none"), 0.0f);
  EXPECT_FLOAT_EQ(at(f, "in:1"), std::log2(5.0f) / 8);   // 4 channels
  EXPECT_FLOAT_EQ(at(f, "out:3"), std::log2(9.0f) / 8);  // 8 wide after stride 2
  EXPECT_GT(at(f, "log2_flops"), 0.0f);

  const std::vector<float> p = unit_features(u, UnitId{1});
  EXPECT_EQ(at(p, "op:MaxPool"), 1.0f);
  EXPECT_EQ(at(p, "pool:max"), 1.0f);
  EXPECT_EQ(at(p, "kernel:0"), 2.0f / 4);
  EXPECT_EQ(at(p, "activation:none"), 1.0f);
  EXPECT_THROW(unit_features(u, UnitId{2}), Error);
}

TEST(UnitFeatures, WeightedDagUnitsAreZeros) {
  std::vector<Unit> units(2);
  units[0].name = "a";
  units[1].name = "b";
  const UnitGraph g = UnitGraph::from_dag("dag", units, {{UnitId{0}, UnitId{1}}});
  const std::vector<float> f = unit_features(g, UnitId{1});
  EXPECT_EQ(std::count(f.begin(), f.end(), 0.0f), static_cast<long>(kUnitFeatures));
}

}  // namespace
}  // namespace braid::ir
