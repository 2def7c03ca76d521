#include "cost/stage_key.h"

#include <gtest/gtest.h>

#include "models/zoo.h"

namespace braid::cost {
namespace {

UnitId unit(const ir::UnitGraph& g, const std::string& name) {
  auto u = g.find_unit(name);
  EXPECT_TRUE(u.has_value()) << name;
  return u.value_or(UnitId{0});
}

class StageKey : public ::testing::Test {
 protected:
  void SetUp() override {
    graph_ = std::make_shared<const ir::Graph>(
        models::build_zoo_model("inception_v3", {.image_size = 107}));
    units_ = ir::fuse(graph_);
  }
  // The same branch of two blocks: mixed_6c and mixed_6d are identical Inception-C blocks.
  std::vector<std::vector<UnitId>> stage(const std::string& block) const {
    return {{unit(units_, block + "/branch7x7_1"), unit(units_, block + "/branch7x7_2")},
            {unit(units_, block + "/branch1x1")}};
  }
  std::shared_ptr<const ir::Graph> graph_;
  ir::UnitGraph units_;
};

TEST_F(StageKey, IdenticalBlocksShareKeys) {
  EXPECT_EQ(stage_key(units_, stage("mixed_6c")), stage_key(units_, stage("mixed_6d")));
  // mixed_6b has 128 channels in its 7x7 branch, not 160: a different stage.
  EXPECT_NE(stage_key(units_, stage("mixed_6b")), stage_key(units_, stage("mixed_6c")));
}

TEST_F(StageKey, GroupOrderIsIrrelevantButOrderInsideAGroupIsNot) {
  auto s = stage("mixed_6c");
  std::vector<std::vector<UnitId>> swapped = {s[1], s[0]};
  EXPECT_EQ(stage_key(units_, s), stage_key(units_, swapped));
  std::vector<std::vector<UnitId>> merged = {{s[0][0], s[0][1], s[1][0]}};
  std::vector<std::vector<UnitId>> reordered = {{s[1][0], s[0][0], s[0][1]}};
  EXPECT_NE(stage_key(units_, merged), stage_key(units_, reordered));
  // Splitting a group changes the stage.
  std::vector<std::vector<UnitId>> split = {{s[0][0]}, {s[0][1]}, {s[1][0]}};
  EXPECT_NE(stage_key(units_, split), stage_key(units_, s));
}

TEST_F(StageKey, KeyNamesShapesAttributesAndLocalEdges) {
  std::vector<UnitId> chain = {unit(units_, "mixed_6c/branch7x7_1"),
                               unit(units_, "mixed_6c/branch7x7_2")};
  std::string key = group_key(units_, chain);
  EXPECT_NE(key.find("Conv{k1x1"), std::string::npos) << key;
  EXPECT_NE(key.find("Conv{k1x7"), std::string::npos) << key;
  EXPECT_NE(key.find("%0.0"), std::string::npos) << key;  // the second reads the first
  EXPECT_EQ(key.find("mixed"), std::string::npos) << "names must not enter the key: " << key;
}

TEST(StageKeyBatch, BatchSizeChangesTheKey) {
  auto one = std::make_shared<const ir::Graph>(
      models::build_zoo_model("squeezenet", {.batch = 1, .image_size = 64}));
  auto two = std::make_shared<const ir::Graph>(
      models::build_zoo_model("squeezenet", {.batch = 2, .image_size = 64}));
  ir::UnitGraph u1 = ir::fuse(one), u2 = ir::fuse(two);
  std::vector<UnitId> first = {UnitId{0}};
  EXPECT_NE(group_key(u1, first), group_key(u2, first));
}

}  // namespace
}  // namespace braid::cost
