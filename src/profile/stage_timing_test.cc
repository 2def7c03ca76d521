// The arithmetic of GPU stage timing, without a GPU: copies chosen from an estimate, and the
// launch of an empty graph subtracted per replay before dividing by the copies.
#include "profile/stage_timing.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/error.h"
#include "models/loader.h"

namespace braid::profile {
namespace {

TEST(StageTiming, CopiesFillTheTargetWithinBounds) {
  const CopiesOptions o{.target = Micros(200), .max_copies = 32};
  EXPECT_EQ(copies_for(Micros(50), o), 4);
  EXPECT_EQ(copies_for(Micros(60), o), 4);   // ceil(3.33)
  EXPECT_EQ(copies_for(Micros(500), o), 1);  // one copy is already long enough
  EXPECT_EQ(copies_for(Micros(1), o), 32);   // capped
  EXPECT_EQ(copies_for(Micros(0), o), 32);   // nothing measurable: as many as allowed
}

TEST(StageTiming, EstimatesAStageFromItsSlowestGroupOnceEveryUnitIsMeasured) {
  const std::vector<std::optional<Micros>> costs = {Micros(5), Micros(7), Micros(20), std::nullopt};
  const std::vector<std::vector<UnitId>> stage = {{UnitId(0), UnitId(1)}, {UnitId(2)}};
  EXPECT_EQ(stage_estimate(stage, costs), Micros(20));
  const std::vector<std::vector<UnitId>> chain = {{UnitId(0), UnitId(1)}};
  EXPECT_EQ(stage_estimate(chain, costs), Micros(12));
  const std::vector<std::vector<UnitId>> unmeasured = {{UnitId(0)}, {UnitId(3)}};
  EXPECT_FALSE(stage_estimate(unmeasured, costs).has_value());
  const std::vector<std::vector<UnitId>> out_of_range = {{UnitId(9)}};
  EXPECT_FALSE(stage_estimate(out_of_range, costs).has_value());
}

TEST(StageTiming, SubtractsTheEmptyLaunchPerReplayThenDividesByCopies) {
  // A 10 us stage, 4 copies, graph launches costing 6..8 us.
  const std::vector<double> empty = {6, 7, 8, 7, 6};
  std::vector<double> stage;
  for (double e : empty) stage.push_back(e + 4 * 10.0);
  const cost::Measurement m = summarize_stage_times(stage, empty, 4);
  EXPECT_DOUBLE_EQ(m.median.count(), 10.0);
  EXPECT_DOUBLE_EQ(m.p10.count(), 10.0);
  EXPECT_EQ(m.runs, 5);
  EXPECT_EQ(m.number, 4);
}

TEST(StageTiming, NeverNegativeAndSummarizesTheSpread) {
  const std::vector<double> empty = {10, 10, 10, 10};
  const std::vector<double> stage = {8, 14, 18, 30};  // per copy (2): 0, 2, 4, 10
  const cost::Measurement m = summarize_stage_times(stage, empty, 2);
  EXPECT_DOUBLE_EQ(m.median.count(), 3.0);
  EXPECT_GE(m.p10.count(), 0.0);
  EXPECT_LE(m.p10, m.median);
  EXPECT_GE(m.p90, m.median);
}

// The models the rule was measured on (docs/gpu.md), with an H100's 50 MiB L2: the two whose
// unit costs added up within 6% of their sequential run only with the L2 evicted are evicted;
// the 64x64 SqueezeNet (32% above when evicted, within 15% when not) is not.
TEST(StageTiming, EvictsTheL2ForModelsLargerThanHalfOfIt) {
  constexpr int64_t kH100L2 = 50 << 20;
  const auto bytes = [](const std::string& name, int64_t image_size) {
    models::LoadOptions load;
    load.zoo.image_size = image_size;
    return model_bytes(*models::load_model(name, load).graph);
  };
  EXPECT_TRUE(evict_l2_between_copies(bytes("tv_inception_v3", 0), kH100L2));
  EXPECT_TRUE(evict_l2_between_copies(bytes("resnet50", 0), kH100L2));
  EXPECT_TRUE(evict_l2_between_copies(bytes("googlenet", 0), kH100L2));
  EXPECT_FALSE(evict_l2_between_copies(bytes("squeezenet", 64), kH100L2));
  EXPECT_FALSE(evict_l2_between_copies(0, 0 + kH100L2));
  EXPECT_TRUE(evict_l2_between_copies(kH100L2 / 2 + 1, kH100L2));
}

TEST(StageTiming, RejectsSeriesThatDoNotPair) {
  // Unpaired series would subtract launches measured at another time from a stage's replays.
  const std::vector<double> two = {1, 2}, one = {1};
  EXPECT_THROW(summarize_stage_times(two, one, 1), Error);
  EXPECT_THROW(summarize_stage_times({}, {}, 1), Error);
  EXPECT_THROW(summarize_stage_times(two, two, 0), Error);
}

}  // namespace
}  // namespace braid::profile
