// Properties every registered scheduler must have (STYLE §5), checked for each name that
// scheduler_names() lists when the test binary starts: a scheduler is covered the moment it is
// registered. Failures name the scheduler and the seed, so each one replays alone:
//   sched_test --gtest_filter='Properties/EveryScheduler.*/ios'
//  1. valid (validate.h) on 1,000 seeded random DAGs, predicted latency >= the critical path;
//  2. on small random DAGs, with 2 and 3 streams, never faster than `optimal` with the same
//     options (the exact minimum of the lane model, which every stage schedule maps into when
//     a stage costs its slowest group: optimal.h) and never more streams than allowed;
//  3. valid on every zoo model under the roofline cost model (optimal only where its blocks
//     fit its search).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <random>
#include <string>

#include "base/error.h"
#include "cost/dag_cost.h"
#include "cost/roofline.h"
#include "ir/analysis.h"
#include "models/loader.h"
#include "models/random_dag.h"
#include "models/zoo.h"
#include "sched/optimal.h"
#include "sched/predict.h"
#include "sched/registry.h"
#include "sched/test_graphs.h"
#include "sched/validate.h"

namespace braid::sched {
namespace {

constexpr double kTolerance = 1e-9;  // microseconds, relative to the larger side
constexpr int kRandomDags = 1000;
constexpr int kSmallDags = 300;

// Graphs of min_ops..max_ops units in at most 8 + 2 layers (test_graphs.h).
ir::UnitGraph random_graph(uint64_t seed, int min_ops, int max_ops) {
  return testing::random_graph(seed, min_ops, max_ops, 8);
}

Micros critical_path(const ir::UnitGraph& g, const cost::CostModel& cost) {
  std::vector<double> latency(g.num_units());
  for (size_t i = 0; i < g.num_units(); ++i)
    latency[i] = cost.unit_latency(make_id<UnitId>(i)).count();
  return Micros{ir::critical_path(g, latency).length};
}

// Whether `optimal` accepts the graph: every block that needs a search fits its limit.
bool optimal_fits(const ir::UnitGraph& g) {
  for (const ir::Block& b : ir::block_partition(g))
    if (!b.is_chain && b.units.size() > OptimalOptions::kDefaultMaxBlockUnits) return false;
  return true;
}

std::string errors_of(const ir::UnitGraph& g, const Schedule& s) {
  std::string out;
  for (const Diagnostic& d : check(g, s))
    if (d.severity == Severity::kError) out += to_string(d) + "\n";
  return out;
}

double elapsed_s(std::chrono::steady_clock::time_point begin) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
}

class EveryScheduler : public ::testing::TestWithParam<std::string> {};

// 1. Random DAGs of 3..16 units (HIOS's generator): wider ones make the IOS DP (exponential
// in the width, ios.txt §4.2) take seconds each; the zoo covers the large graphs.
TEST_P(EveryScheduler, ValidAndAboveCriticalPathOnRandomDags) {
  const std::string name = GetParam();
  const std::unique_ptr<Scheduler> scheduler = make_scheduler(name);
  const auto begin = std::chrono::steady_clock::now();
  int scheduled = 0, skipped = 0;
  for (uint64_t seed = 0; seed < kRandomDags; ++seed) {
    const ir::UnitGraph g = random_graph(seed, 3, 16);
    if (name == "optimal" && !optimal_fits(g)) {
      ++skipped;
      continue;
    }
    SCOPED_TRACE(name + ", seed " + std::to_string(seed) + " (" + g.name() + ", " +
                 std::to_string(g.num_units()) + " units)");
    const cost::DagCostModel cost(g);
    const Schedule s = scheduler->schedule(g, cost);
    const std::string errors = errors_of(g, s);
    ASSERT_EQ(errors, "");
    const double latency = predicted_latency(g, s, cost).count();
    const double cp = critical_path(g, cost).count();
    EXPECT_GE(latency, cp - kTolerance * std::max(1.0, cp)) << "below the critical path";
    ++scheduled;
  }
  std::printf("[properties] %s: %d random DAGs scheduled, %d skipped, %.2f s\n", name.c_str(),
              scheduled, skipped, elapsed_s(begin));
  EXPECT_GT(scheduled, name == "optimal" ? kRandomDags / 4 : kRandomDags - 1);
}

// 2. Small random DAGs (3..10 units), 2 and 3 streams, the other options at their defaults.
TEST_P(EveryScheduler, NeverBeatsOptimalOnSmallDags) {
  const std::string name = GetParam();
  const auto begin = std::chrono::steady_clock::now();
  for (int streams : {2, 3}) {
    const ScheduleOptions options{.max_streams = streams};
    const std::unique_ptr<Scheduler> scheduler = make_scheduler(name, options);
    const std::unique_ptr<Scheduler> optimal = make_scheduler("optimal", options);
    for (uint64_t seed = 0; seed < kSmallDags; ++seed) {
      const ir::UnitGraph g = random_graph(100000 + seed, 3, 10);
      SCOPED_TRACE(name + ", " + std::to_string(streams) + " streams, seed " +
                   std::to_string(100000 + seed) + " (" + std::to_string(g.num_units()) +
                   " units)");
      const cost::DagCostModel cost(g);
      const Schedule s = scheduler->schedule(g, cost);
      const std::string errors = errors_of(g, s);
      ASSERT_EQ(errors, "");
      // Nimble (one stream per chain) and Opara (streams by inheritance) open the streams
      // their algorithm needs and ignore max_streams, as in their papers; they are held to
      // the optimum with as many streams as they used.
      const bool own_streams = name == "nimble" || name == "opara";
      const int used = num_streams(s);
      if (!own_streams) {
        EXPECT_LE(used, streams) << "more streams than max_streams";
      }
      const double latency = predicted_latency(g, s, cost).count();
      const double best =
          used > streams
              ? predicted_latency(
                    g, make_scheduler("optimal", {.max_streams = used})->schedule(g, cost), cost)
                    .count()
              : predicted_latency(g, optimal->schedule(g, cost), cost).count();
      EXPECT_GE(latency, best - kTolerance * std::max(1.0, best))
          << "beats optimal by " << best - latency << " us";
    }
  }
  std::printf("[properties] %s: %d small DAGs x 2 stream counts, %.2f s\n", name.c_str(),
              kSmallDags, elapsed_s(begin));
}

// 3. The zoo, fused, without weights; latencies from the roofline.
const std::vector<models::LoadedModel>& zoo_models() {
  static const std::vector<models::LoadedModel> loaded = [] {
    std::vector<models::LoadedModel> all;
    for (const models::ZooEntry& e : models::zoo())
      all.push_back(models::load_model(e.name, {.with_weights = false}));
    return all;
  }();
  return loaded;
}

TEST_P(EveryScheduler, ValidOnZooModels) {
  const std::string name = GetParam();
  const std::unique_ptr<Scheduler> scheduler = make_scheduler(name);
  for (const models::LoadedModel& m : zoo_models()) {
    const ir::UnitGraph& g = m.units;
    if (name == "optimal" && !optimal_fits(g)) {
      std::printf("[properties] optimal: %s skipped (a block above %d units)\n", m.spec.c_str(),
                  OptimalOptions::kDefaultMaxBlockUnits);
      continue;
    }
    SCOPED_TRACE(name + " on " + m.spec + " (" + std::to_string(g.num_units()) + " units)");
    const auto begin = std::chrono::steady_clock::now();
    const cost::RooflineCostModel cost(g);
    const Schedule s = scheduler->schedule(g, cost);
    const std::string errors = errors_of(g, s);
    ASSERT_EQ(errors, "");
    const double latency = predicted_latency(g, s, cost).count();
    const double cp = critical_path(g, cost).count();
    EXPECT_GE(latency, cp - kTolerance * std::max(1.0, cp)) << "below the critical path";
    std::printf("[properties] %s on %s: %.3f ms predicted, %.2f s\n", name.c_str(), m.spec.c_str(),
                latency / 1000, elapsed_s(begin));
  }
}

std::vector<std::string> registered_names() {
  std::vector<std::string> names;
  for (std::string_view n : scheduler_names()) names.emplace_back(n);
  return names;
}

INSTANTIATE_TEST_SUITE_P(Properties, EveryScheduler, ::testing::ValuesIn(registered_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string id = info.param;  // gtest allows [A-Za-z0-9_] only
                           std::replace(id.begin(), id.end(), '-', '_');
                           return id;
                         });

}  // namespace
}  // namespace braid::sched
