// Combined blocks and the stage dict (combined.h) under the simulated A100's stage cost:
// lookups, superblocks, the schedules' validity (checked here, against the models' own
// graphs), and what concurrency of two sub-blocks buys in the simulator.
#include "runtime/combined.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <thread>

#include "base/error.h"
#include "runtime/sim_backend.h"
#include "sim/device_spec.h"
#include "sim/sim_cost.h"

namespace braid::runtime {
namespace {

constexpr uint32_t kSqueezenet = 0, kInception = 1;

// Squeezenet and Inception V3 at 224x224, batch 1, and the simulated A100 over them.
struct Fixture {
  ModelSet models;
  std::unique_ptr<SimBackend> gpu;
  Fixture() {
    const models::LoadOptions load{.zoo = {.batch = 1, .image_size = 224}, .with_weights = false};
    models.add("squeezenet", {.load = load});
    models.add("inception_v3", {.load = load});
    gpu = std::make_unique<SimBackend>(models, sim::load_device("a100_40gb"));
  }
};
Fixture& fixture() {
  static Fixture f;
  return f;
}

// Every unit of the combination exactly once, and every edge between two of its units of one
// sub-block from an earlier stage, or earlier in the same group.
void expect_valid(const ModelSet& models, const CombinedSchedule& s) {
  std::map<UnitRef, std::tuple<size_t, size_t, size_t>> at;  // stage, group, position
  for (size_t k = 0; k < s.stages.size(); ++k)
    for (size_t g = 0; g < s.stages[k].size(); ++g) {
      ASSERT_FALSE(s.stages[k][g].empty()) << "empty group";
      for (size_t i = 0; i < s.stages[k][g].size(); ++i)
        ASSERT_TRUE(at.emplace(s.stages[k][g][i], std::tuple(k, g, i)).second) << "twice";
    }
  size_t expected = 0;
  for (const SubBlock& sb : s.sub_blocks) {
    const RuntimeModel& m = models.model(sb.model);
    expected += m.blocks[sb.block].units.size();
    for (UnitId u : m.blocks[sb.block].units) {
      ASSERT_TRUE(at.count({sb.model, u})) << m.units().unit(u).name << " missing";
      for (UnitId p : m.units().predecessors(u)) {
        if (m.block_of_unit[index(p)] != sb.block) continue;
        const auto [ks, gs, is] = at.at({sb.model, p});
        const auto [kd, gd, id] = at.at({sb.model, u});
        EXPECT_TRUE(ks < kd || (ks == kd && gs == gd && is < id))
            << m.units().unit(p).name << " -> " << m.units().unit(u).name;
      }
    }
  }
  EXPECT_EQ(at.size(), expected);
}

TEST(CombinedScheduler, PermutedCombinationIsAHitReturningTheSameSchedule) {
  Fixture& f = fixture();
  CombinedScheduler dict(f.models, f.gpu->stage_cost());
  const std::vector<SubBlock> ab = {{kInception, 3}, {kSqueezenet, 4}};
  const std::vector<SubBlock> ba = {{kSqueezenet, 4}, {kInception, 3}};
  const CombinedSchedule& first = dict.schedule(ab);
  const CombineStats cold = dict.stats();
  EXPECT_EQ(cold.lookups, 1);
  EXPECT_EQ(cold.hits, 0);
  EXPECT_EQ(cold.searched, 3);  // the combination and its two sub-blocks alone
  const CombinedSchedule& second = dict.schedule(ba);
  EXPECT_EQ(&first, &second);
  const CombineStats warm = dict.stats();
  EXPECT_EQ(warm.lookups, 2);
  EXPECT_EQ(warm.hits, 1);
  EXPECT_EQ(warm.searched, 3);
  EXPECT_EQ(first.sub_blocks, (std::vector<SubBlock>{{kSqueezenet, 4}, {kInception, 3}}));
  // A sub-block alone was searched while scheduling the pair: a hit, not a new search.
  const CombinedSchedule& alone = dict.single({kSqueezenet, 4});
  EXPECT_EQ(alone.method, CombineMethod::kSingle);
  EXPECT_EQ(dict.stats().searched, 3);
  EXPECT_EQ(dict.stats().hits, 2);
}

TEST(CombinedScheduler, RejectsBadCombinationsAndOptions) {
  Fixture& f = fixture();
  CombinedScheduler dict(f.models, f.gpu->stage_cost());
  const std::vector<SubBlock> twice = {{kSqueezenet, 1}, {kSqueezenet, 1}};
  const std::vector<SubBlock> missing = {{kSqueezenet, 999}};
  const std::vector<SubBlock> no_model = {{7, 0}};
  for (const auto& bad : {twice, missing, no_model, std::vector<SubBlock>{}}) {
    try {
      dict.schedule(bad);
      ADD_FAILURE() << "accepted a bad combination";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    }
  }
  EXPECT_THROW(CombinedScheduler(f.models, f.gpu->stage_cost(), {.max_sub_blocks = 0}), Error);
  EXPECT_THROW(CombinedScheduler(f.models, f.gpu->stage_cost(), {.max_group_size = 0}), Error);
}

TEST(CombinedScheduler, OverHIsASuperblockNeverSearched) {
  Fixture& f = fixture();
  CombinedScheduler dict(f.models, f.gpu->stage_cost(), {.max_sub_blocks = 2});
  const std::vector<SubBlock> three = {{kSqueezenet, 2}, {kSqueezenet, 5}, {kInception, 4}};
  const CombinedSchedule& s = dict.schedule(three);
  EXPECT_EQ(s.method, CombineMethod::kSuperblock);
  EXPECT_FALSE(s.optimized());
  expect_valid(f.models, s);
  const CombineStats stats = dict.stats();
  EXPECT_EQ(stats.superblocks, 1);
  EXPECT_EQ(stats.searched, 3);  // its sub-blocks alone, never the combination
  EXPECT_EQ(stats.dp + stats.zip, 0);
  // Its stages are its sub-blocks' own, zipped.
  size_t longest = 0;
  for (const SubBlock& sb : three) longest = std::max(longest, dict.single(sb).stages.size());
  EXPECT_EQ(s.stages.size(), longest);
  // Within H, the same kind of combination is optimized.
  const std::vector<SubBlock> two = {{kSqueezenet, 2}, {kInception, 4}};
  EXPECT_TRUE(dict.schedule(two).optimized());
}

TEST(CombinedScheduler, EverySchedulePlacesEachUnitOnceAfterItsProducers) {
  Fixture& f = fixture();
  CombinedScheduler dict(f.models, f.gpu->stage_cost());
  const size_t sq = f.models.model(kSqueezenet).blocks.size();
  const size_t in = f.models.model(kInception).blocks.size();
  std::vector<std::vector<SubBlock>> combinations;
  for (uint32_t b = 0; b < sq; ++b) combinations.push_back({{kSqueezenet, b}});
  for (uint32_t b = 0; b < in; ++b) combinations.push_back({{kInception, b}});
  for (uint32_t b = 0; b < in; ++b)
    combinations.push_back({{kSqueezenet, uint32_t(b % sq)}, {kInception, b}});
  combinations.push_back({{kSqueezenet, 3}, {kSqueezenet, 7}, {kInception, 2}});
  combinations.push_back({{kSqueezenet, 1}, {kSqueezenet, 6}, {kInception, 0}, {kInception, 12}});
  combinations.push_back({{kSqueezenet, 0},
                          {kSqueezenet, 4},
                          {kSqueezenet, 8},
                          {kInception, 5},
                          {kInception, 9}});  // a superblock
  for (const auto& c : combinations) {
    const CombinedSchedule& s = dict.schedule(c);
    SCOPED_TRACE(::testing::Message() << c.size() << " sub-blocks, " << to_string(s.method));
    expect_valid(f.models, s);
    EXPECT_GT(s.predicted.count(), 0);
  }
}

// A sub-block's stages beside another's: on an A100 at batch 1 one small block leaves most SMs
// idle, so the pair takes less than the two one after another.
TEST(CombinedScheduler, ZipOfTwoSubBlocksBeatsThemAlone) {
  Fixture& f = fixture();
  CombinedScheduler dict(f.models, f.gpu->stage_cost(), {.dp_state_limit = 0});  // zip only
  const size_t sq = f.models.model(kSqueezenet).blocks.size();
  const size_t in = f.models.model(kInception).blocks.size();
  double zipped = 0, alone = 0;
  for (uint32_t b = 0; b < in; ++b) {
    const SubBlock a{kSqueezenet, uint32_t(b % sq)}, c{kInception, b};
    const std::vector<SubBlock> pair = {a, c};
    const CombinedSchedule& s = dict.schedule(pair);
    ASSERT_EQ(s.method, CombineMethod::kZip);
    const double sum = dict.single(a).predicted.count() + dict.single(c).predicted.count();
    std::printf("squeezenet:%u + inception_v3:%u  zip %.1f us  alone %.1f us  (%.2fx)\n", a.block,
                c.block, s.predicted.count(), sum, sum / s.predicted.count());
    EXPECT_LE(s.predicted.count(), sum * 1.0001);
    zipped += s.predicted.count();
    alone += sum;
  }
  std::printf("all pairs: zip %.1f us, alone %.1f us (%.2fx)\n", zipped, alone, alone / zipped);
  EXPECT_LT(zipped, 0.9 * alone);
}

// IOS's DP over the union finds schedules no worse than the zip, and strictly better somewhere
// (the zip keeps each sub-block's stage boundaries, the DP need not).
TEST(CombinedScheduler, DpOverTheUnionIsNoWorseThanZip) {
  Fixture& f = fixture();
  CombinedScheduler zip_only(f.models, f.gpu->stage_cost(), {.dp_state_limit = 0});
  CombinedScheduler with_dp(f.models, f.gpu->stage_cost(), {.dp_state_limit = 200000});
  const size_t sq = f.models.model(kSqueezenet).blocks.size();
  int better = 0;
  for (uint32_t b = 0; b + 1 < sq; ++b) {
    const std::vector<SubBlock> pair = {{kSqueezenet, b}, {kSqueezenet, b + 1}};
    const CombinedSchedule& z = zip_only.schedule(pair);
    const CombinedSchedule& d = with_dp.schedule(pair);
    expect_valid(f.models, d);
    EXPECT_LE(d.predicted.count(), z.predicted.count());
    if (d.method == CombineMethod::kDp) {
      ++better;
      EXPECT_LT(d.predicted.count(), z.predicted.count());
    }
    std::printf("squeezenet:%u + squeezenet:%u  zip %.1f us  %s %.1f us\n", b, b + 1,
                z.predicted.count(), std::string(to_string(d.method)).c_str(), d.predicted.count());
  }
  EXPECT_GT(better, 0);
  EXPECT_EQ(with_dp.stats().dp, better);
}

TEST(CombinedScheduler, ConcurrentLookupsShareOneEntry) {
  Fixture& f = fixture();
  CombinedScheduler dict(f.models, f.gpu->stage_cost());
  const std::vector<std::vector<SubBlock>> combinations = {
      {{kSqueezenet, 2}, {kInception, 1}}, {{kSqueezenet, 3}}, {{kInception, 7}, {kSqueezenet, 9}}};
  std::vector<std::vector<const CombinedSchedule*>> seen(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < seen.size(); ++t)
    threads.emplace_back([&, t] {
      for (const auto& c : combinations) seen[t].push_back(&dict.schedule(c));
    });
  for (auto& t : threads) t.join();
  for (size_t t = 1; t < seen.size(); ++t) EXPECT_EQ(seen[t], seen[0]);
  EXPECT_EQ(dict.stats().lookups, int64_t(seen.size() * combinations.size()));
}

TEST(ModelStageCost, OneModelAsksItsCostModelMixedStagesTheBound) {
  Fixture& f = fixture();
  sim::SimCostModel sq(f.models.model(kSqueezenet).units(), sim::load_device("a100_40gb"));
  sim::SimCostModel in(f.models.model(kInception).units(), sim::load_device("a100_40gb"));
  ModelStageCost cost({&sq, &in});
  const UnitRef a{kSqueezenet, UnitId(3)}, b{kSqueezenet, UnitId(4)}, c{kInception, UnitId(5)};
  const std::vector<std::vector<UnitRef>> own = {{a}, {b}};
  const std::vector<std::vector<UnitId>> own_ids = {{UnitId(3)}, {UnitId(4)}};
  EXPECT_EQ(cost.stage(own), sq.stage_latency(own_ids));
  const std::vector<std::vector<UnitRef>> mixed = {{a, b}, {c}};
  EXPECT_EQ(cost.stage(mixed), std::max(cost.unit(a) + cost.unit(b), cost.unit(c)));
  EXPECT_THROW(ModelStageCost({&sq, nullptr}), Error);
}

}  // namespace
}  // namespace braid::runtime
