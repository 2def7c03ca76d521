// The allotment schedulers (moldable.h) on graphs whose units scale differently with cores.
#include "sched/moldable.h"

#include <gtest/gtest.h>

#include "base/error.h"
#include "cost/roofline.h"
#include "models/dag_json.h"
#include "models/loader.h"
#include "models/zoo.h"
#include "sched/lower.h"
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

// The DAG's latencies at one core; `scaling[u]` of the ideal speed-up at k cores.
class ScalingCost final : public cost::CostModel {
 public:
  ScalingCost(const ir::UnitGraph& g, std::vector<double> scaling, int cores)
      : CostModel(g), scaling_(std::move(scaling)), cores_(cores) {}
  std::string_view name() const override { return "scaling"; }
  Micros unit_latency(UnitId u) const override { return *units().unit(u).latency; }
  Micros stage_latency(std::span<const std::vector<UnitId>> groups) const override {
    std::vector<int> ones(groups.size(), 1);
    return stage_latency_at(groups, ones);
  }
  int max_threads() const override { return cores_; }
  Micros unit_latency_at(UnitId u, int k) const override {
    EXPECT_LE(k, cores_);
    const double s = scaling_[index(u)];
    return unit_latency(u) / (1 + s * (k - 1));
  }

 private:
  std::vector<double> scaling_;
  int cores_;
};

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

// Valid on every zoo model under the roofline on 2 and 4 cores.
TEST(Moldable, ValidOnZooModels) {
  for (const models::ZooEntry& e : models::zoo()) {
    const models::LoadedModel m = models::load_model(e.name, {.with_weights = false});
    for (int cores : {2, 4}) {
      const cost::RooflineCostModel cost(m.units, {.cores = cores});
      for (const char* name : {"moldable", "intra"}) {
        const Schedule s = make_scheduler(name, {.cores = cores})->schedule(m.units, cost);
        EXPECT_TRUE(first_error_free(m.units, s)) << e.name << ", " << name << ", " << cores;
      }
    }
  }
}

}  // namespace
}  // namespace braid::sched
