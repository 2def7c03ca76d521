#include "runtime/model_set.h"

#include <gtest/gtest.h>

#include <iostream>
#include <string>

#include "base/error.h"
#include "sched/registry.h"
#include "test_env.h"

namespace braid::runtime {
namespace {

// Structure only: block counts need no weights (and load in milliseconds without them).
AddOptions shapes_only(int64_t image_size, BlockGrouping grouping = BlockGrouping::kIr) {
  AddOptions o;
  o.load.zoo.image_size = image_size;
  o.load.with_weights = false;
  o.blocks = grouping;
  return o;
}

// The blocks partition the model: consecutive IR-block ranges from 0 to the last IR block,
// their units in id order covering every unit once, block_of_unit agreeing.
void expect_partition(const RuntimeModel& m) {
  ASSERT_FALSE(m.blocks.empty());
  const size_t num_ir_blocks = ir::block_partition(m.units()).size();
  size_t next_ir = 0, next_unit = 0;
  for (size_t b = 0; b < m.blocks.size(); ++b) {
    const TopBlock& block = m.blocks[b];
    EXPECT_EQ(block.ir_first, next_ir) << "block " << b;
    EXPECT_LT(block.ir_first, block.ir_last) << "block " << b;
    next_ir = block.ir_last;
    for (UnitId u : block.units) {
      EXPECT_EQ(index(u), next_unit++) << "block " << b;
      EXPECT_EQ(m.block_of_unit.at(index(u)), b);
    }
  }
  EXPECT_EQ(next_ir, num_ir_blocks);
  EXPECT_EQ(next_unit, m.units().num_units());
  EXPECT_EQ(m.block_of_unit.size(), m.units().num_units());
}

// top.txt Table II: Inception V3 13 blocks / 119 operators, ResNet-50 5 / 87, SqueezeNet
// 12 / 50, all at 3x224x224 (§VI-B).
TEST(ModelSet, BlockCountsBesideTableII) {
  ModelSet set;
  const RuntimeModel& inception = set.add("inception_v3", shapes_only(224));
  EXPECT_EQ(inception.blocks.size(), 13u);
  EXPECT_EQ(inception.units().num_units(), 119u);
  const RuntimeModel& squeezenet = set.add("squeezenet", shapes_only(224));
  EXPECT_EQ(squeezenet.blocks.size(), 12u);
  EXPECT_EQ(squeezenet.units().num_units(), 50u);
  const RuntimeModel& resnet = set.add("resnet50", shapes_only(224));
  EXPECT_EQ(resnet.blocks.size(), 18u);        // ours: each bottleneck, the stem and the head
  EXPECT_EQ(resnet.units().num_units(), 56u);  // conv3 and its residual Add: one unit
  for (size_t m = 0; m < set.size(); ++m) expect_partition(set.model(m));
}

// ResNet-50 by stage: the stem (conv1, maxpool), layer1..layer4 (3, 4, 6, 3 bottlenecks), the
// head (pool, fc) joined to layer4: the paper's 5 blocks.
TEST(ModelSet, ResNetStagesGiveFiveBlocks) {
  ModelSet set;
  const RuntimeModel& resnet = set.add("resnet50", shapes_only(224, BlockGrouping::kStages));
  expect_partition(resnet);
  ASSERT_EQ(resnet.blocks.size(), 5u);
  const size_t ir_blocks_per_block[] = {1, 3, 4, 6, 3 + 1};
  for (size_t b = 0; b < 5; ++b)
    EXPECT_EQ(resnet.blocks[b].ir_last - resnet.blocks[b].ir_first, ir_blocks_per_block[b])
        << "block " << b;
  EXPECT_EQ(resnet.units().unit(resnet.blocks[0].units.front()).name.rfind("conv1", 0), 0u);
}

// Inception's and SqueezeNet's modules each change the output shape or not; whatever the
// grouping gives, it is a partition, with no more blocks than IR blocks.
TEST(ModelSet, StageGroupingIsAPartition) {
  for (const char* name : {"inception_v3", "squeezenet", "googlenet"}) {
    SCOPED_TRACE(name);
    ModelSet set;
    const RuntimeModel& by_ir = set.add(name, shapes_only(224));
    AddOptions stages = shapes_only(224, BlockGrouping::kStages);
    stages.load.name = std::string(name) + "_stages";
    const RuntimeModel& by_stage = set.add(name, stages);
    expect_partition(by_stage);
    EXPECT_LE(by_stage.blocks.size(), by_ir.blocks.size());
    EXPECT_GE(by_stage.blocks.size(), 1u);
    std::cout << name << ": " << by_ir.blocks.size() << " IR blocks, " << by_stage.blocks.size()
              << " by stage\n";
  }
}

TEST(ModelSet, SetScheduleLowersOnePlanPerModel) {
  ModelSet set;
  set.add("squeezenet", shapes_only(64));
  const RuntimeModel& m = set.model(0);
  set.set_schedule(0, sched::make_scheduler("sequential")->schedule(m.units()));
  EXPECT_EQ(m.plan.num_blocks, m.blocks.back().ir_last);
  EXPECT_EQ(m.plan.num_blocks, 12u);
  EXPECT_FALSE(m.plan.lanes.empty());
  EXPECT_TRUE(m.schedule.is_stage_based() || m.schedule.is_stream_based());
}

// A schedule that leaves a unit out would never run it; set_schedule refuses it as lower does.
TEST(ModelSet, SetScheduleRejectsAnInvalidSchedule) {
  ModelSet set;
  set.add("squeezenet", shapes_only(64));
  sched::Schedule s;
  s.lanes.push_back({});
  for (size_t u = 0; u + 1 < set.model(0).units().num_units(); ++u)
    s.lanes.back().units.push_back(make_id<UnitId>(u));
  try {
    set.set_schedule(0, s);
    FAIL() << "expected braid::Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidSchedule) << e.what();
  }
  EXPECT_TRUE(set.model(0).plan.lanes.empty()) << "a refused schedule must not be kept";
  try {
    set.set_schedule(1, s);
    FAIL() << "expected braid::Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
  }
}

// Two models under one name would make index() ambiguous and reports unreadable.
TEST(ModelSet, DuplicateNameIsRejected) {
  ModelSet set;
  set.add("squeezenet", shapes_only(64));
  try {
    set.add("squeezenet", shapes_only(64));
    FAIL() << "expected braid::Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("already loaded"), std::string::npos) << e.what();
  }
  AddOptions renamed = shapes_only(64);
  renamed.load.name = "squeezenet_b";
  set.add("squeezenet", renamed);
  EXPECT_EQ(set.size(), 2u);
  EXPECT_EQ(set.index("squeezenet_b"), 1u);
}

// A weighted DAG has latencies but no tensors: nothing to compute for a task.
TEST(ModelSet, WeightedDagIsRejected) {
  ModelSet set;
  const std::string dag = (testing::source_dir() / "tests/golden/diamond.dag.json").string();
  try {
    set.add(dag);
    FAIL() << "expected braid::Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("weighted DAG"), std::string::npos) << e.what();
  }
  EXPECT_EQ(set.size(), 0u);
}

TEST(ModelSet, UnknownNameListsTheLoadedOnes) {
  ModelSet set;
  try {
    set.index("resnet50");
    FAIL() << "expected braid::Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_NE(std::string(e.what()).find("none"), std::string::npos) << e.what();
  }
  set.add("squeezenet", shapes_only(64));
  try {
    set.index("resnet50");
    FAIL() << "expected braid::Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_NE(std::string(e.what()).find("loaded: squeezenet"), std::string::npos) << e.what();
  }
  try {
    set.add("no_such_model", shapes_only(64));
    FAIL() << "expected braid::Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound) << e.what();
  }
}

}  // namespace
}  // namespace braid::runtime
