// HIOS-LP and HIOS-MR (hios.txt Algorithms 1-3): valid multi-device schedules whose predicted
// latency is sched::predicted_latency's, never worse than their inter-device-only mapping,
// never below the critical path, and on small graphs never better than the best mapping.
#include "sched/hios.h"

#include <gtest/gtest.h>

#include "cost/dag_cost.h"
#include "cost/hios_stage_cost.h"
#include "sched/predict.h"
#include "sched/test_graphs.h"
#include "sched/validate.h"

namespace braid::sched {
namespace {

constexpr const char* kVariants[] = {"hios-lp", "hios-mr", "hios-lp-inter", "hios-mr-inter"};

// The longest path counting unit latencies only (transfers can vanish on one device).
double critical_path_us(const ir::UnitGraph& g, const cost::CostModel& cost) {
  std::vector<double> finish(g.num_units(), 0);
  double longest = 0;
  for (size_t u = 0; u < g.num_units(); ++u) {
    double start = 0;
    for (UnitId p : g.predecessors(UnitId(u))) start = std::max(start, finish[index(p)]);
    finish[u] = start + cost.unit_latency(UnitId(u)).count();
    longest = std::max(longest, finish[u]);
  }
  return longest;
}

TEST(Hios, ValidSchedulesPredictedExactlyAndNoWorseThanTheirMapping) {
  for (uint64_t seed = 0; seed < 150; ++seed) {
    const ir::UnitGraph g = testing::random_graph(seed, 3, 60);
    cost::DagCostModel cost(g);
    const double lower = critical_path_us(g, cost);
    for (int devices : {1, 2, 3, 4}) {
      std::map<std::string, double> latency;
      for (const char* name : kVariants) {
        SCOPED_TRACE(std::string(name) + " seed " + std::to_string(seed) + " devices " +
                     std::to_string(devices));
        const Schedule s =
            make_scheduler(name, {.num_devices = devices, .window = 3})->schedule(g, cost);
        ASSERT_NO_THROW(validate_or_throw(g, s));
        const double predicted = predicted_latency(g, s, cost).count();
        ASSERT_TRUE(s.predicted_latency.has_value());
        EXPECT_NEAR(s.predicted_latency->count(), predicted, 1e-6 * predicted);
        EXPECT_GE(predicted, lower * (1 - 1e-9));
        latency[name] = predicted;
      }
      EXPECT_LE(latency["hios-lp"], latency["hios-lp-inter"] * (1 + 1e-9));
      EXPECT_LE(latency["hios-mr"], latency["hios-mr-inter"] * (1 + 1e-9));
    }
  }
}

TEST(Hios, OnOneDeviceTheMappingIsSequential) {
  for (uint64_t seed = 0; seed < 20; ++seed) {
    const ir::UnitGraph g = testing::random_graph(seed);
    cost::DagCostModel cost(g);
    double total = 0;
    for (size_t u = 0; u < g.num_units(); ++u) total += cost.unit_latency(UnitId(u)).count();
    for (const char* name : {"hios-lp-inter", "hios-mr-inter"}) {
      const Schedule s = make_scheduler(name, {.num_devices = 1})->schedule(g, cost);
      EXPECT_NEAR(s.predicted_latency->count(), total, 1e-6 * total) << name;
    }
  }
}

// Two independent chains between a source and a sink, cheap transfers: each chain gets a
// device of its own, and the inference takes about one chain, not two.
TEST(Hios, IndependentChainsGoToDifferentDevices) {
  std::vector<ir::Unit> units;
  auto unit = [&](const char* name, double ms) {
    units.push_back({.name = name, .latency = Millis(ms)});
    return uint32_t(units.size() - 1);
  };
  const uint32_t s = unit("s", 1), a1 = unit("a1", 5), a2 = unit("a2", 5), b1 = unit("b1", 5),
                 b2 = unit("b2", 5), t = unit("t", 1);
  std::vector<ir::UnitEdge> edges;
  for (auto [from, to] : {std::pair{s, a1}, {a1, a2}, {a2, t}, {s, b1}, {b1, b2}, {b2, t}})
    edges.push_back({.from = UnitId(from), .to = UnitId(to), .transfer = Millis(0.1)});
  const ir::UnitGraph g = ir::UnitGraph::from_dag("chains", units, edges);
  cost::DagCostModel cost(g);
  for (const char* name : {"hios-lp-inter", "hios-mr-inter"}) {
    const Schedule sched = make_scheduler(name, {.num_devices = 2})->schedule(g, cost);
    // s, one transfer, a chain, one transfer, t: 12.2 ms; 12.1 when t sits with the chain that
    // its input from the other chain reaches no later (HIOS-MR finds that).
    EXPECT_LE(Millis(*sched.predicted_latency).count(), 12.2 + 1e-9) << name;
    EXPECT_GE(Millis(*sched.predicted_latency).count(), 12.1 - 1e-9) << name;
    EXPECT_EQ(sched.transfers.size(), 2u) << name;
  }
}

// Brute force on small graphs: no mapping scheduled in priority order beats the best one.
TEST(Hios, NeverBetterThanTheBestMapping) {
  for (uint64_t seed = 0; seed < 60; ++seed) {
    const ir::UnitGraph g = testing::random_graph(seed, 3, 8);
    cost::DagCostModel cost(g);
    const size_t n = g.num_units();
    const std::vector<Micros> priority = hios_priority(g, cost);
    std::vector<UnitId> order;
    for (size_t u = 0; u < n; ++u) order.push_back(UnitId(u));
    std::stable_sort(order.begin(), order.end(),
                     [&](UnitId a, UnitId b) { return priority[index(a)] > priority[index(b)]; });
    double best = 1e300;
    for (uint64_t mask = 0; mask < (uint64_t{1} << n); ++mask) {
      std::vector<double> finish(n), free(2, 0);
      double makespan = 0;
      for (UnitId v : order) {
        const int d = int(mask >> index(v) & 1);
        double start = free[d];
        for (uint32_t e : g.in_edges(v)) {
          const ir::UnitEdge& edge = g.edges()[e];
          const int du = int(mask >> index(edge.from) & 1);
          start = std::max(start, finish[index(edge.from)] +
                                      (du != d ? cost.transfer_latency(edge).count() : 0));
        }
        finish[index(v)] = start + cost.unit_latency(v).count();
        free[d] = finish[index(v)];
        makespan = std::max(makespan, finish[index(v)]);
      }
      best = std::min(best, makespan);
    }
    for (const char* name : {"hios-lp-inter", "hios-mr-inter"}) {
      const Schedule s = make_scheduler(name, {.num_devices = 2})->schedule(g, cost);
      EXPECT_GE(s.predicted_latency->count(), best * (1 - 1e-9)) << name << " seed " << seed;
    }
  }
}

// The diamond s -> {a, b} -> t (1, 4, 4, 1 ms; transfers 0.5 ms) on two devices, by hand.
ir::UnitGraph diamond() {
  std::vector<ir::Unit> units;
  for (auto [name, ms] : {std::pair{"s", 1.0}, {"a", 4.0}, {"b", 4.0}, {"t", 1.0}})
    units.push_back({.name = name, .latency = Millis(ms)});
  std::vector<ir::UnitEdge> edges;
  for (auto [from, to] : {std::pair{0, 1}, {0, 2}, {1, 3}, {2, 3}})
    edges.push_back({.from = UnitId(from), .to = UnitId(to), .transfer = Millis(0.5)});
  return ir::UnitGraph::from_dag("diamond", units, edges);
}

// A fixed schedule: device 0 runs s, a, t; device 1 runs b. Paper rule: b starts at s's finish
// + 0.5 = 1.5, ends 5.5; t starts at max(a's 5, b's 5.5 + 0.5) = 6, ends 7. Code rule: b waits
// for device 0's timeline when b comes up (after s and a: 5) + 0.5 = 5.5, ends 9.5; t starts at
// 9.5 + 0.5 = 10, ends 11.
TEST(HiosStartRule, PredictedLatencyOfAHandSchedule) {
  const ir::UnitGraph g = diamond();
  Schedule s{.num_devices = 2};
  for (auto [device, unit] : {std::pair{0, 0}, {0, 1}, {1, 2}, {0, 3}})
    s.stages.push_back({.device = device, .groups = {{UnitId(unit)}}});
  s.transfers = {{UnitId(0), UnitId(2), 0, 1}, {UnitId(2), UnitId(3), 1, 0}};
  ASSERT_NO_THROW(validate_or_throw(g, s));
  const cost::HiosStageCostModel paper(g, 0.5, cost::StartRule::kProducerFinish);
  const cost::HiosStageCostModel code(g, 0.5, cost::StartRule::kProducerDevice);
  EXPECT_NEAR(Millis(predicted_latency(g, s, paper)).count(), 7.0, 1e-9);
  EXPECT_NEAR(Millis(predicted_latency(g, s, code)).count(), 11.0, 1e-9);
}

// HIOS-LP on the diamond. Its first path is s, a, t (7 ms with the transfers), on device 0
// (6 ms either way; ties keep the first). Then b: on device 0, 10 ms; on device 1, paper rule 7
// (the schedule above), code rule 11 (the schedule above: b waits for s and a's device 0). So
// the paper rule splits the diamond (7 ms, two transfers) and the code rule keeps it on one
// device (10 ms, no transfer).
TEST(HiosStartRule, LongestPathMapsTheDiamondDifferently) {
  const ir::UnitGraph g = diamond();
  const cost::HiosStageCostModel paper(g, 0.5, cost::StartRule::kProducerFinish);
  const cost::HiosStageCostModel code(g, 0.5, cost::StartRule::kProducerDevice);
  const auto lp = make_scheduler("hios-lp-inter", {.num_devices = 2});
  const Schedule a = lp->schedule(g, paper), b = lp->schedule(g, code);
  EXPECT_NEAR(Millis(*a.predicted_latency).count(), 7.0, 1e-9);
  EXPECT_EQ(a.transfers.size(), 2u);
  EXPECT_NEAR(Millis(*b.predicted_latency).count(), 10.0, 1e-9);
  EXPECT_EQ(b.transfers.size(), 0u);
  EXPECT_NEAR(Millis(predicted_latency(g, b, code)).count(), 10.0, 1e-9);
}

// Under the code rule every HIOS variant's schedule is valid and predicted exactly by
// sched::predicted_latency (which follows the rule too), and the same schedule priced by the
// paper rule is never slower (a producer's device timeline is never before its finish).
TEST(HiosStartRule, CodeRuleSchedulesPredictedExactlyAndNoFasterThanPaper) {
  for (uint64_t seed = 0; seed < 60; ++seed) {
    const ir::UnitGraph g = testing::random_graph(seed, 3, 40);
    const cost::HiosStageCostModel paper(g, 0.5, cost::StartRule::kProducerFinish);
    const cost::HiosStageCostModel code(g, 0.5, cost::StartRule::kProducerDevice);
    for (int devices : {2, 3}) {
      for (const char* name : kVariants) {
        SCOPED_TRACE(std::string(name) + " seed " + std::to_string(seed) + " devices " +
                     std::to_string(devices));
        const Schedule s =
            make_scheduler(name, {.num_devices = devices, .window = 2})->schedule(g, code);
        ASSERT_NO_THROW(validate_or_throw(g, s));
        const double predicted = predicted_latency(g, s, code).count();
        EXPECT_NEAR(s.predicted_latency->count(), predicted, 1e-6 * predicted);
        EXPECT_LE(predicted_latency(g, s, paper).count(), predicted * (1 + 1e-9));
      }
    }
  }
}

}  // namespace
}  // namespace braid::sched
