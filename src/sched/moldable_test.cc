// The allotment schedulers (moldable.h) on graphs whose units scale differently with cores.
#include "sched/moldable.h"

#include <gtest/gtest.h>

#include "base/error.h"
#include "cost/roofline.h"
#include "models/dag_json.h"
#include "models/loader.h"
#include "models/zoo.h"
#include "sched/lower.h"
#include "sched/predict.h"
#include "sched/test_graphs.h"
#include "sched/validate.h"

namespace braid::sched {
namespace {

// head -> {big, a -> b, c -> d} -> tail. `big` halves on two cores; the branch units do not
// speed up at all (too small to split).
ir::UnitGraph fork() {
  return models::parse_dag_json_text(R"({"format": "braid.dag/1", "name": "fork",
      "nodes": [{"name": "head", "latency_ms": 1}, {"name": "big", "latency_ms": 8},
                {"name": "a", "latency_ms": 2}, {"name": "b", "latency_ms": 2},
                {"name": "c", "latency_ms": 2}, {"name": "d", "latency_ms": 2},
                {"name": "tail", "latency_ms": 1}],
      "edges": [{"from": "head", "to": "big"}, {"from": "head", "to": "a"},
                {"from": "head", "to": "c"}, {"from": "a", "to": "b"}, {"from": "c", "to": "d"},
                {"from": "big", "to": "tail"}, {"from": "b", "to": "tail"},
                {"from": "d", "to": "tail"}]})",
                                     "fork");
}

bool first_error_free(const ir::UnitGraph& g, const Schedule& s) {
  for (const Diagnostic& d : check(g, s))
    if (d.severity == Severity::kError) {
      ADD_FAILURE() << d.message;
      return false;
    }
  return true;
}

using testing::ScalingCost;

TEST(Moldable, WidensTheBigUnitAndRunsBranchesSideBySide) {
  const ir::UnitGraph g = fork();
  // head, big, tail scale perfectly; the branches not at all.
  const ScalingCost cost(g, {1, 1, 0, 0, 0, 0, 1}, 2);
  const Schedule s = MoldableScheduler().schedule(g, cost);
  ASSERT_TRUE(first_error_free(g, s));
  EXPECT_EQ(s.cores, 2);
  const std::vector<int> threads = unit_threads(s, g.num_units(), 0);
  // CPA: the critical path head-big-tail (10 ms) is longer than the average area (18 ms of work
  // on 2 cores); big gains most from a second core (8 -> 4 ms), after which the critical path
  // (6 ms) is within the area (9.5 ms) and the allotment stops.
  EXPECT_EQ(threads[1], 2) << to_string(s, g);
  for (size_t u : {2, 3, 4, 5}) EXPECT_EQ(threads[u], 1) << to_string(s, g);
  // Sequential on one core: 18 ms; intra on two: 0.5 + 4 + 8 + 0.5 = 13 ms; moldable: head,
  // big on both cores, the two branches side by side, tail: 1 + 4 + 4 + 1 = 10 ms.
  const double intra = IntraOpScheduler().schedule(g, cost).predicted_latency->count();
  EXPECT_NEAR(intra, 13000, 1);
  EXPECT_NEAR(s.predicted_latency->count(), 10000, 1) << to_string(s, g);
  EXPECT_NO_THROW(lower(g, s));
}

// optimal-threads (optimal.h) finds what CPA's early stop misses: 18 ms of least work on two
// cores cannot take less than 9 ms, and head and tail on both cores, big on both, then the
// branches side by side reach it (0.5 + 4 + 4 + 0.5).
TEST(OptimalThreads, ReachesTheAreaBoundWhereMoldableStopsEarly) {
  const ir::UnitGraph g = fork();
  const ScalingCost cost(g, {1, 1, 0, 0, 0, 0, 1}, 2);
  const Schedule s = make_scheduler("optimal-threads")->schedule(g, cost);
  ASSERT_TRUE(first_error_free(g, s));
  EXPECT_EQ(s.cores, 2);
  EXPECT_NEAR(s.predicted_latency->count(), 9000, 1e-6) << to_string(s, g);
  EXPECT_NEAR(predicted_latency(g, s, cost).count(), 9000, 1e-6);
  EXPECT_NEAR(MoldableScheduler().schedule(g, cost).predicted_latency->count(), 10000, 1);
  EXPECT_NO_THROW(lower(g, s));
}

// With no unit gaining from cores, moldable is LIOS-like list scheduling on one core each.
TEST(Moldable, WithoutScalingKeepsOneThreadPerUnit) {
  const ir::UnitGraph g = fork();
  const ScalingCost cost(g, std::vector<double>(7, 0), 2);
  const Schedule s = MoldableScheduler().schedule(g, cost);
  ASSERT_TRUE(first_error_free(g, s));
  for (int k : unit_threads(s, g.num_units(), 0)) EXPECT_EQ(k, 1);
  EXPECT_EQ(s.lanes.size(), 2u);
  EXPECT_NEAR(s.predicted_latency->count(), 10000, 1);  // 1 + 8 + 1 with both branches beside
}

TEST(Moldable, CoresComeFromOptionsOrTheCostModel) {
  const ir::UnitGraph g = fork();
  const ScalingCost cost(g, std::vector<double>(7, 1), 4);
  EXPECT_EQ(MoldableScheduler().schedule(g, cost).cores, 4);
  EXPECT_EQ(MoldableScheduler({.cores = 3}).schedule(g, cost).cores, 3);
  const Schedule intra = IntraOpScheduler({.cores = 2}).schedule(g, cost);
  EXPECT_EQ(intra.cores, 2);
  for (int k : unit_threads(intra, g.num_units(), 0)) EXPECT_EQ(k, 2);
  EXPECT_THROW(make_scheduler("moldable", {.cores = -1}), Error);
}

// Valid on every zoo model under the roofline on 2 and 4 cores (optimal-threads where its
// blocks fit its search, never worse than moldable there).
TEST(Moldable, ValidOnZooModels) {
  int exact = 0;
  for (const models::ZooEntry& e : models::zoo()) {
    const models::LoadedModel m = models::load_model(e.name, {.with_weights = false});
    for (int cores : {2, 4}) {
      const cost::RooflineCostModel cost(m.units, {.cores = cores});
      for (const char* name : {"moldable", "intra"}) {
        const Schedule s = make_scheduler(name, {.cores = cores})->schedule(m.units, cost);
        EXPECT_TRUE(first_error_free(m.units, s)) << e.name << ", " << name << ", " << cores;
      }
      try {
        const Schedule s =
            make_scheduler("optimal-threads", {.cores = cores})->schedule(m.units, cost);
        EXPECT_TRUE(first_error_free(m.units, s)) << e.name << ", optimal-threads, " << cores;
        EXPECT_LE(
            s.predicted_latency->count(),
            MoldableScheduler({.cores = cores}).schedule(m.units, cost).predicted_latency->count() *
                (1 + 1e-9))
            << e.name << ", " << cores;
        ++exact;
      } catch (const Error& error) {
        EXPECT_NE(std::string(error.what()).find("max_block_units"), std::string::npos)
            << error.what();
      }
    }
  }
  EXPECT_GT(exact, 0);
}

// Every stage schedule of `rest` (the units left, closed under predecessors) with every
// allotment: the last stage is any non-empty set of units of `rest` none of whose successors
// stay behind, its groups the connected parts, their threads any counts of at least one
// summing to at most `cores`. Each complete schedule is priced by predicted_latency, not by
// the recurrence the DP evaluates.
void brute_force(const ir::UnitGraph& g, const cost::CostModel& cost, int cores, uint32_t rest,
                 std::vector<Stage>& tail, double& best) {
  if (rest == 0) {
    Schedule s;
    s.cores = cores;
    s.stages.assign(tail.rbegin(), tail.rend());
    best = std::min(best, predicted_latency(g, s, cost).count());
    return;
  }
  const size_t n = g.num_units();
  for (uint32_t ending = rest; ending != 0; ending = (ending - 1) & rest) {
    bool closed = true;
    for (size_t u = 0; u < n && closed; ++u)
      if (ending >> u & 1)
        for (UnitId v : g.successors(make_id<UnitId>(u)))
          if ((rest >> index(v) & 1) && !(ending >> index(v) & 1)) closed = false;
    if (!closed) continue;
    // Connected parts of the ending, each in id (topological) order.
    std::vector<int> part(n, -1);
    int parts = 0;
    for (size_t u = 0; u < n; ++u) {
      if (!(ending >> u & 1) || part[u] >= 0) continue;
      std::vector<size_t> stack = {u};
      part[u] = parts;
      while (!stack.empty()) {
        const size_t x = stack.back();
        stack.pop_back();
        auto visit = [&](UnitId y) {
          if ((ending >> index(y) & 1) && part[index(y)] < 0) {
            part[index(y)] = parts;
            stack.push_back(index(y));
          }
        };
        for (UnitId y : g.successors(make_id<UnitId>(x))) visit(y);
        for (UnitId y : g.predecessors(make_id<UnitId>(x))) visit(y);
      }
      ++parts;
    }
    if (parts > cores) continue;
    Stage stage;
    stage.groups.resize(parts);
    for (size_t u = 0; u < n; ++u)
      if (part[u] >= 0) stage.groups[part[u]].push_back(make_id<UnitId>(u));
    stage.threads.assign(parts, 1);
    // Every allotment of the parts: counts 1..cores with a sum of at most cores.
    auto assign = [&](auto& self, int k, int left) -> void {
      if (k == parts) {
        tail.push_back(stage);
        brute_force(g, cost, cores, rest & ~ending, tail, best);
        tail.pop_back();
        return;
      }
      for (int t = 1; t <= left - (parts - k - 1); ++t) {
        stage.threads[k] = t;
        self(self, k + 1, left - t);
      }
    };
    assign(assign, 0, cores);
  }
}

// ios-threads evaluates the same space by its recurrence (memoized on the units left, each
// stage at its best allotment): on small DAGs its optimum is the brute force's.
TEST(IosThreads, EqualsBruteForceOnSmallDags) {
  int compared = 0, widened = 0;
  for (uint64_t seed = 0; seed < 60; ++seed) {
    const ir::UnitGraph g = testing::random_graph(5000 + seed, 3, 6, 4);
    std::mt19937_64 rng(seed);
    std::vector<double> scaling(g.num_units());
    for (double& x : scaling) x = (rng() % 5) / 4.0;  // 0, 0.25, ..., 1
    for (int cores : {2, 3}) {
      const ScalingCost cost(g, scaling, cores);
      const ScheduleOptions options{.max_streams = 0, .max_group_size = 0, .max_groups = 0};
      const Schedule s = make_scheduler("ios-threads", options)->schedule(g, cost);
      ASSERT_TRUE(first_error_free(g, s)) << "seed " << seed;
      std::vector<Stage> tail;
      double best = std::numeric_limits<double>::infinity();
      brute_force(g, cost, cores, (1u << g.num_units()) - 1, tail, best);
      EXPECT_NEAR(s.predicted_latency->count(), best, 1e-6 * best)
          << "seed " << seed << ", " << cores << " cores\n"
          << to_string(s, g);
      EXPECT_NEAR(predicted_latency(g, s, cost).count(), best, 1e-6 * best) << "seed " << seed;
      ++compared;
      for (int k : unit_threads(s, g.num_units(), 1)) widened += k > 1;
    }
  }
  EXPECT_EQ(compared, 120);
  EXPECT_GT(widened, 100);  // the allotments matter: many units run on more than one core
}

}  // namespace
}  // namespace braid::sched
