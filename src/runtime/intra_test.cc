// GPG's view of combined blocks (intra.h), its environment (intra_env.h) and the loading of a
// trained GPG (gpg.h), under the simulated A100's stage cost. Training and the trained policy's
// schedules are tests/python_train (Debian's PyTorch); its run without PyTorch,
// tests/python/test_gpg_policy.py.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "base/error.h"
#include "runtime/gpg.h"
#include "runtime/intra.h"
#include "runtime/intra_env.h"
#include "runtime/sim_backend.h"
#include "sim/device_spec.h"

namespace braid::runtime {
namespace {

struct Fixture {
  ModelSet models;
  std::unique_ptr<SimBackend> gpu;
  std::unique_ptr<CombinedScheduler> combiner;
  Fixture() {
    const models::LoadOptions load{.zoo = {.batch = 1, .image_size = 128}, .with_weights = false};
    models.add("squeezenet", {.load = load});
    models.add("inception_v3", {.load = load});
    gpu = std::make_unique<SimBackend>(models, sim::load_device("a100_40gb"));
    combiner = std::make_unique<CombinedScheduler>(models, gpu->stage_cost());
  }
};
Fixture& fixture() {
  static Fixture f;
  return f;
}

// The claim GPG's action rests on: the sub-blocks share no edge, so the endings of the union are
// exactly the choices of one ending or none per sub-block, not all none, within s groups.
TEST(Intra, UnionEndingsAreOneEndingOrNonePerSubBlock) {
  Fixture& f = fixture();
  const std::vector<SubBlock> combination{{0, 2}, {0, 5}, {1, 4}};
  const IntraBlock b = intra_block(f.models, f.gpu->stage_cost(), combination);
  ASSERT_EQ(b.sub_blocks.size(), 3u);
  ASSERT_LE(b.size(), 64u);
  // The union's graph: the sub-blocks' masks side by side.
  sched::EndingGraph all;
  for (size_t k = 0; k < 3; ++k)
    for (size_t i = 0; i < b.edges[k].size(); ++i) {
      all.succ.push_back(b.edges[k].succ[i] << b.offset[k]);
      all.pred.push_back(b.edges[k].pred[i] << b.offset[k]);
      all.adj.push_back(b.edges[k].adj[i] << b.offset[k]);
    }
  const sched::EndingLimits limits{.group_size = 3, .groups = 4};
  std::vector<sched::UnitMask> left = b.all();
  // A state part way: the last stage of sub-block 2 taken off.
  left[2] = left[2] & ~sched::sinks_of(b.edges[2], left[2]);
  sched::UnitMask state = 0;
  for (size_t k = 0; k < 3; ++k) state |= left[k] << b.offset[k];
  std::set<sched::UnitMask> of_union;
  sched::for_each_ending(all, state, limits, [&](sched::UnitMask e, int) { of_union.insert(e); });
  std::set<sched::UnitMask> products;
  const auto candidates = intra_candidates(b, left, limits);
  auto with_none = [&](size_t k) {
    std::vector<std::pair<sched::UnitMask, int>> out{{0, 0}};
    for (const IntraCandidate& c : candidates[k])
      out.emplace_back(c.ending << b.offset[k], c.groups);
    return out;
  };
  for (auto [e0, g0] : with_none(0))
    for (auto [e1, g1] : with_none(1))
      for (auto [e2, g2] : with_none(2))
        if ((e0 | e1 | e2) != 0 && g0 + g1 + g2 <= limits.groups) products.insert(e0 | e1 | e2);
  EXPECT_GT(of_union.size(), 10u);
  EXPECT_EQ(of_union, products);
}

TEST(IntraEnv, EpisodesScheduleEveryUnitOnceAndAreSeeded) {
  Fixture& f = fixture();
  IntraEnv env(*f.combiner, {.min_sub_blocks = 2, .max_sub_blocks = 4});
  for (uint64_t seed : {1, 2, 3}) {
    env.reset(seed);
    const std::vector<SubBlock> drawn = env.block().sub_blocks;
    EXPECT_GE(drawn.size(), 2u);
    EXPECT_LE(drawn.size(), 4u);
    double latency = 0, reward = 0;
    while (!env.done()) {
      // Every sub-block's first ending, within s.
      std::vector<int> choice(env.candidates().size(), -1);
      int groups = 0;
      for (size_t k = 0; k < choice.size(); ++k)
        if (!env.candidates()[k].empty() && groups + env.candidates()[k][0].groups <= 8) {
          choice[k] = 0;
          groups += env.candidates()[k][0].groups;
        }
      const IntraStep s = env.step(choice);
      latency += s.latency_us;
      reward += s.reward;
    }
    EXPECT_NEAR(reward, -latency / env.zip_us(), 1e-9);
    const CombinedSchedule s{.sub_blocks = drawn, .stages = env.stages()};
    EXPECT_NO_THROW(check_combined_schedule(f.models, s));
    EXPECT_NEAR(stages_cost(f.gpu->stage_cost(), s.stages).count(), latency, 1e-6);
    env.reset(seed);
    EXPECT_EQ(env.block().sub_blocks, drawn) << "the same seed draws the same combination";
  }
}

TEST(IntraEnv, RefusesBadChoices) {
  Fixture& f = fixture();
  IntraEnv env(*f.combiner, {.min_sub_blocks = 2, .max_sub_blocks = 2});
  EXPECT_THROW(env.step(std::vector<int>{0, 0}), Error);  // before reset
  env.reset(std::vector<SubBlock>{{1, 4}, {0, 2}});
  EXPECT_EQ(env.block().sub_blocks[0], (SubBlock{0, 2}));  // sorted
  EXPECT_THROW(env.step(std::vector<int>{0}), Error);
  EXPECT_THROW(env.step(std::vector<int>{-1, -1}), Error);
  EXPECT_THROW(env.step(std::vector<int>{0, 100000}), Error);
  IntraEnv tight(*f.combiner, {.max_sub_blocks = 2, .limits = {.group_size = 3, .groups = 1}});
  tight.reset(std::vector<SubBlock>{{0, 2}, {1, 4}});
  EXPECT_THROW(tight.step(std::vector<int>{0, 0}), Error);  // two groups, s = 1
  EXPECT_THROW(IntraEnv(*f.combiner, {.min_sub_blocks = 3, .max_sub_blocks = 2}), Error);
}

TEST(Gpg, BadNamesAndDirectoriesAreRefused) {
  EXPECT_EQ(make_intra_scheduler("dp"), nullptr);
  try {
    make_intra_scheduler("greedy");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("known: dp, gpg:DIR"), std::string::npos);
  }
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "braid_gpg_test";
  std::filesystem::create_directories(dir);
  std::filesystem::remove(dir / "policy.json");
  try {
    make_intra_scheduler("gpg:" + dir.string());
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
  }
  std::ofstream(dir / "policy.json") << R"({"format": "braid.policy/1", "kind": "maddpg"})";
  try {
    make_intra_scheduler("gpg:" + dir.string());
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("cannot run as a gpg policy"), std::string::npos);
  }
  std::ofstream(dir / "policy.json")
      << R"({"format": "braid.policy/1", "kind": "gpg", "features": ["op:Conv"]})";
  try {
    make_intra_scheduler("gpg:" + dir.string());
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("node features unlike this braid's"), std::string::npos);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace braid::runtime
