#include "runtime/env.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "base/error.h"
#include "runtime/agents.h"
#include "runtime/runtime.h"
#include "runtime/scenario.h"

namespace braid::runtime {
namespace {

Scenario small_scenario(double duration_s = 0.6) {
  return {.models = {{"squeezenet", 300}, {"resnet50", 150, BlockGrouping::kStages}},
          .device = Device::simulated("a100_40gb"),
          .duration_s = duration_s,
          .image_size = 64,
          .scheduler = "sequential"};
}

// One runner for the file: loading and scheduling the models is the slow part.
ScenarioRunner& runner() {
  static ScenarioRunner r(small_scenario());
  return r;
}

std::vector<std::vector<double>> uniform_actions(const ModelSet& models, double launcher,
                                                 double blocks) {
  std::vector<std::vector<double>> a{std::vector<double>(models.size(), launcher)};
  for (size_t m = 0; m < models.size(); ++m) a.emplace_back(models.model(m).blocks.size(), blocks);
  return a;
}

// Every block's own value: block k of all ΣB blocks in bin k, so no two combine.
std::vector<std::vector<double>> singleton_actions(const ModelSet& models, double launcher) {
  size_t total = 0;
  for (size_t m = 0; m < models.size(); ++m) total += models.model(m).blocks.size();
  std::vector<std::vector<double>> a{std::vector<double>(models.size(), launcher)};
  size_t k = 0;
  for (size_t m = 0; m < models.size(); ++m) {
    a.emplace_back();
    for (size_t b = 0; b < models.model(m).blocks.size(); ++b)
      a.back().push_back((double(k++) + 0.5) / double(total));
  }
  return a;
}

TEST(Agents, LauncherActionsMapToIntervalsOnALogScale) {
  const ActionMapping mapping{.min_interval_us = 1e3, .max_interval_us = 1e6};
  const std::vector<double> a{0, 1, 0.5, -3, 7, std::nan("")};
  const std::vector<double> i = intervals_from_action(a, mapping);
  ASSERT_EQ(i.size(), a.size());
  EXPECT_DOUBLE_EQ(i[0], 1e3);
  EXPECT_NEAR(i[1], 1e6, 1e-6);
  EXPECT_NEAR(i[2], std::sqrt(1e3 * 1e6), 1e-6);  // the geometric middle
  EXPECT_DOUBLE_EQ(i[3], 1e3);                    // clamped
  EXPECT_NEAR(i[4], 1e6, 1e-6);
  EXPECT_DOUBLE_EQ(i[5], 1e3);  // NaN: the shortest
  for (double v : {0.0, 0.25, 0.9})
    EXPECT_NEAR(
        action_from_interval(intervals_from_action(std::vector<double>{v}, mapping)[0], mapping), v,
        1e-12);
  EXPECT_THROW(intervals_from_action(a, {.min_interval_us = 0}), Error);
}

TEST(Agents, BlockValuesInOneBinFormOneCombinedBlock) {
  const ModelSet& models = runner().models();
  const size_t b0 = models.model(0).blocks.size(), b1 = models.model(1).blocks.size();
  // Fig. 10: blocks in one bin combine, a bin alone is a block alone, every block once.
  const auto all = partition_from_actions(
      models,
      std::vector<std::vector<double>>{std::vector<double>(b0, 0.3), std::vector<double>(b1, 0.3)});
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].size(), b0 + b1);
  const auto singles = singleton_actions(models, 0);
  const auto single = partition_from_actions(models, std::span(singles).subspan(1));
  EXPECT_EQ(single.size(), b0 + b1);
  std::set<SubBlock> seen;
  for (const auto& c : single) {
    ASSERT_EQ(c.size(), 1u);
    seen.insert(c[0]);
  }
  EXPECT_EQ(seen.size(), b0 + b1);
  // Model 0's first block with model 1's first: one pair, the rest alone; 1.0 is the last bin.
  std::vector<std::vector<double>> pair = {std::vector<double>(b0, 1.0),
                                           std::vector<double>(b1, 1.0)};
  pair[0][0] = pair[1][0] = 0.0;
  const auto p = partition_from_actions(models, pair);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0], (std::vector<SubBlock>{{0, 0}, {1, 0}}));
  EXPECT_EQ(p[1].size(), b0 + b1 - 2);
  // One value per block, or an error naming the model.
  EXPECT_THROW(partition_from_actions(models, std::vector<std::vector<double>>{{0.1}, {0.2}}),
               Error);
}

TEST(Agents, OffsetsKeepBlocksAloneAtTheNeutralValue) {
  const ModelSet& models = runner().models();
  const size_t b0 = models.model(0).blocks.size(), b1 = models.model(1).blocks.size();
  const size_t total = b0 + b1;
  ASSERT_GT(total, size_t(kOffsetReach) + 1);
  const auto of = [&](double v0, double v1) {
    return partition_from_actions(
        models,
        std::vector<std::vector<double>>{std::vector<double>(b0, v0), std::vector<double>(b1, v1)},
        PartitionEncoding::kOffsets);
  };
  // 0.5 everywhere (an untrained actor): every block alone, where Fig. 10's bins combine all.
  EXPECT_EQ(of(0.5, 0.5).size(), total);
  // All the way down: the first kOffsetReach + 1 home bins pile into bin 0, the rest move
  // kOffsetReach bins and stay apart; likewise up.
  for (double v : {0.0, 1.0}) {
    const auto p = of(v, v);
    ASSERT_EQ(p.size(), total - kOffsetReach);
    const size_t edge = v == 0.0 ? 0 : p.size() - 1;
    EXPECT_EQ(p[edge].size(), size_t(kOffsetReach) + 1);
  }
  // One block moved a bin up joins its neighbour in depth order: one pair, every block once.
  std::vector<std::vector<double>> one = {std::vector<double>(b0, 0.5),
                                          std::vector<double>(b1, 0.5)};
  one[0][0] = 0.7;  // lround((2 * 0.7 - 1) * 3) = 1
  const auto p = partition_from_actions(models, one, PartitionEncoding::kOffsets);
  ASSERT_EQ(p.size(), total - 1);
  std::set<SubBlock> seen;
  for (const auto& c : p) {
    if (c.size() == 2) {
      EXPECT_TRUE(c[0] == (SubBlock{0, 0}) || c[1] == (SubBlock{0, 0}));
    }
    EXPECT_LE(c.size(), 2u);
    seen.insert(c.begin(), c.end());
  }
  EXPECT_EQ(seen.size(), total);
  EXPECT_EQ(parse_partition_encoding("offsets"), PartitionEncoding::kOffsets);
  EXPECT_EQ(partition_encoding_name(parse_partition_encoding("bins")), "bins");
  try {
    parse_partition_encoding("grid");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("known: bins, offsets"), std::string::npos) << e.what();
  }
}

// The stepped loop is the loop: paused every 7 ms, it logs the same events as a whole run.
TEST(Episode, SteppedInSmallIncrementsItRunsAsTheWholeRun) {
  ScenarioRunner& r = runner();
  for (const std::string name : {"static", "top-heuristic"}) {
    const Report whole = r.run(name, 3, [](RuntimeOptions& o) { o.keep_event_log = true; });
    auto policy = r.make_policy(name);
    RuntimeOptions options = r.runtime_options();
    options.keep_event_log = true;
    Episode ep(r.models(), r.backend(), *policy, &r.combiner(), options, r.arrivals(3));
    int pauses = 0;
    while (ep.advance(ep.now_us() + 7e3)) ++pauses;
    EXPECT_TRUE(ep.over());
    const Report stepped = ep.finish();
    EXPECT_GT(pauses, 10) << name;
    EXPECT_EQ(stepped.event_log_sha256, whole.event_log_sha256) << name;
    EXPECT_EQ(stepped.steps, whole.steps) << name;
    EXPECT_THROW(ep.advance(1e9), Error);
  }
}

TEST(TopEnv, ShapesAndOneEpisode) {
  ScenarioRunner& r = runner();
  TopEnv env(r, {.step_s = 0.1, .samples = 4});
  const ModelSet& models = r.models();
  EXPECT_EQ(env.num_agents(), models.size() + 1);
  const size_t row = models.size() + models.model(0).blocks.size() + models.model(1).blocks.size();
  EXPECT_EQ(env.observation_size(), 4 * row);
  EXPECT_EQ(env.action_sizes(),
            (std::vector<size_t>{2, models.model(0).blocks.size(), models.model(1).blocks.size()}));
  EXPECT_THROW(env.step(uniform_actions(models, 0, 0)), Error);  // before reset
  const std::vector<float> first = env.reset(1);
  EXPECT_EQ(first.size(), env.observation_size());
  int steps = 0;
  EnvStep s;
  do {
    s = env.step(singleton_actions(models, 0.2));
    ++steps;
    EXPECT_EQ(s.observation.size(), env.observation_size());
    EXPECT_EQ(s.rewards.size(), env.num_agents());
    for (double x : s.rewards) EXPECT_TRUE(std::isfinite(x));
    EXPECT_FALSE(s.superblock);
  } while (!s.done && steps < 100);
  EXPECT_EQ(steps, 6);                                            // 0.6 s in steps of 0.1 s
  EXPECT_THROW(env.step(singleton_actions(models, 0.2)), Error);  // after done
  const Report report = env.finish();
  EXPECT_GT(report.models[0].completed + report.models[1].completed, 0u);
  // Wrong shapes name what is wrong.
  env.reset(1);
  EXPECT_THROW(env.step(std::vector<std::vector<double>>{{0.1, 0.1}}), Error);
}

TEST(TopEnv, TheSameSeedAndActionsGiveTheSameEpisode) {
  ScenarioRunner& r = runner();
  const ModelSet& models = r.models();
  auto episode = [&](uint64_t seed) {
    TopEnv env(r, {.step_s = 0.15, .samples = 3});
    std::vector<double> trace;
    for (float x : env.reset(seed)) trace.push_back(x);
    for (int k = 0; k < 4; ++k) {
      const EnvStep s = env.step(singleton_actions(models, 0.1 * k));
      trace.insert(trace.end(), s.observation.begin(), s.observation.end());
      trace.insert(trace.end(), s.rewards.begin(), s.rewards.end());
    }
    return trace;
  };
  EXPECT_EQ(episode(5), episode(5));
  EXPECT_NE(episode(5), episode(6));
}

// Rewards point the right way: a launcher that dequeues 1 task/s while 450 arrive each second
// leaves the backlog growing, and scores below one that dequeues as tasks come; a partition
// with more than H blocks in one bin scores 0 (Algorithm 1, line 9).
TEST(TopEnv, RewardsPreferServingAndZeroASuperblock) {
  ScenarioRunner& r = runner();
  const ModelSet& models = r.models();
  auto total = [&](double launcher) {
    TopEnv env(r, {.step_s = 0.2, .samples = 2});
    env.reset(2);
    std::vector<double> sum(env.num_agents(), 0.0);
    for (int k = 0; k < 3; ++k) {
      const EnvStep s = env.step(singleton_actions(models, launcher));
      for (size_t i = 0; i < sum.size(); ++i) sum[i] += s.rewards[i];
    }
    return sum;
  };
  const auto serving = total(0.0), starving = total(1.0);
  for (size_t i = 0; i < serving.size(); ++i) EXPECT_GT(serving[i], starving[i]) << "agent " << i;

  // A superblock: 0 under the paper's reward (the floor of its range); scale-free, what the step
  // earned (from its own numbers) less kSuperblockPenalty.
  for (const RewardKind kind : {RewardKind::kPaper, RewardKind::kScaleFree}) {
    TopEnv env(r, {.step_s = 0.2, .samples = 2, .reward = kind});
    env.reset(2);
    const EnvStep s = env.step(uniform_actions(models, 0.0, 0.5));  // every block in one bin
    EXPECT_TRUE(s.superblock);
    if (kind == RewardKind::kPaper) {
      for (double x : s.rewards) EXPECT_EQ(x, 0.0);
      continue;
    }
    const double sigma = s.variance / (1 + s.variance);
    double mean_lat = 0;
    for (size_t m = 0; m < models.size(); ++m) {
      // The env's l_ref: the model's predicted latency, 1 µs without one (as here: sequential).
      const auto& predicted = models.model(m).schedule.predicted_latency;
      const double ref = predicted && predicted->count() > 0 ? predicted->count() : 1.0;
      const double lat =
          s.latency_ms[m] > 0 ? std::log(std::max(s.latency_ms[m] * 1e3, 1.0) / ref) : 0.0;
      mean_lat += lat / double(models.size());
      EXPECT_NEAR(s.rewards[m + 1],
                  0.4 * s.utilization - 0.4 * lat - 0.2 * sigma - kSuperblockPenalty, 1e-6);
    }
    EXPECT_NEAR(s.rewards[0],
                0.4 * s.utilization - 0.4 * mean_lat - 0.2 * sigma - kSuperblockPenalty, 1e-6);
  }
}

}  // namespace
}  // namespace braid::runtime
