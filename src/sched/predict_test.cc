// sched::predicted_latency's stream form where lanes share slots and co-running units slow each
// other by the cost model's own price of the pair as a stage (predict.h). Fakes only: what a
// real CPU predicts against what it measures is a benchmark (bench/README.md), not a test.
#include "sched/predict.h"

#include <gtest/gtest.h>

#include <limits>

#include "cost/dag_cost.h"
#include "models/dag_json.h"
#include "sched/nimble.h"
#include "sched/test_graphs.h"
#include "sched/validate.h"

namespace braid::sched {
namespace {

using Millis = std::chrono::duration<double, std::milli>;

// A DAG's latencies on a device running `parallelism` units at once, where a stage of several
// groups takes `slowdown` times its slowest group (the CPU profiler's measured pairs); counts
// the pairs it is asked.
class CoRunCost final : public cost::CostModel {
 public:
  CoRunCost(const ir::UnitGraph& g, double parallelism, double slowdown)
      : CostModel(g), dag_(g), parallelism_(parallelism), slowdown_(slowdown) {}
  std::string_view name() const override { return "co_run"; }
  Micros unit_latency(UnitId u) const override { return dag_.unit_latency(u); }
  Micros stage_latency(std::span<const std::vector<UnitId>> groups) const override {
    if (groups.size() > 1) ++pairs;
    return dag_.stage_latency(groups) * (groups.size() > 1 ? slowdown_ : 1.0);
  }
  double parallelism() const override { return parallelism_; }
  mutable int pairs = 0;

 private:
  cost::DagCostModel dag_;
  double parallelism_, slowdown_;
};

ir::UnitGraph graph(const char* json) {
  return models::parse_dag_json_text(json, "g");
}

UnitId unit(const ir::UnitGraph& g, std::string_view name) {
  for (size_t i = 0; i < g.num_units(); ++i)
    if (g.unit(make_id<UnitId>(i)).name == name) return make_id<UnitId>(i);
  ADD_FAILURE() << "no unit " << name;
  return UnitId{};
}

// x (4 ms) and y (2 ms), independent, one lane each.
Schedule two_lanes(const ir::UnitGraph& g) {
  Schedule s;
  s.algorithm = "hand";
  s.model = g.name();
  s.lanes = {Lane{.stream = 0, .units = {unit(g, "x")}},
             Lane{.stream = 1, .units = {unit(g, "y")}}};
  validate_or_throw(g, s);
  return s;
}

constexpr const char* kTwo = R"({"format": "braid.dag/1", "name": "two",
    "nodes": [{"name": "x", "latency_ms": 4}, {"name": "y", "latency_ms": 2}], "edges": []})";

TEST(PredictCoRun, OverlapRunsAtThePairsMeasuredSlowdown) {
  const ir::UnitGraph g = graph(kTwo);
  const Schedule s = two_lanes(g);
  // Two slots, pairs 1.5x their slower unit: y's 2 ms overlap x's first 2 ms, both at 1/1.5
  // speed for 3 ms; y ends at 3, x has 2 ms left alone: 5.
  const CoRunCost slow(g, 2, 1.5);
  EXPECT_DOUBLE_EQ(Millis(predicted_latency(g, s, slow)).count(), 5);
  EXPECT_EQ(slow.pairs, 1);  // one overlap, priced once
  // Pairs at the speed of their slower unit: the old idealized overlap, 4.
  EXPECT_DOUBLE_EQ(Millis(predicted_latency(g, s, CoRunCost(g, 2, 1.0))).count(), 4);
  // A slowdown can be larger than running them one after another; the price is the model's.
  EXPECT_DOUBLE_EQ(Millis(predicted_latency(g, s, CoRunCost(g, 2, 2.0))).count(), 6);
  // One slot: y waits for x, nothing co-runs, no pair asked.
  const CoRunCost one(g, 1, 1.5);
  EXPECT_DOUBLE_EQ(Millis(predicted_latency(g, s, one)).count(), 6);
  EXPECT_EQ(one.pairs, 0);
  // No contention (a device per lane, as the papers' DAGs): lanes never share, never priced.
  const CoRunCost free(g, std::numeric_limits<double>::infinity(), 1.5);
  EXPECT_DOUBLE_EQ(Millis(predicted_latency(g, s, free)).count(), 4);
  EXPECT_EQ(free.pairs, 0);
}

TEST(PredictCoRun, ConsumersWaitForTheSlowedProducer) {
  // head, then a..d on four lanes over two slots, then tail. Pairs (a, b) then (c, d) co-run at
  // 1.5x: 1 + 3 + 3 + 1 = 8; without the slowdown 6 (Predict.StreamsShareTheUnits...).
  const ir::UnitGraph g = testing::fan4();
  const Schedule s = NimbleScheduler().schedule(g, cost::DagCostModel(g));
  ASSERT_EQ(s.lanes.size(), 4u);
  const CoRunCost slow(g, 2, 1.5);
  EXPECT_DOUBLE_EQ(Millis(predicted_latency(g, s, slow)).count(), 8);
  EXPECT_EQ(slow.pairs, 2);
  EXPECT_DOUBLE_EQ(Millis(predicted_latency(g, s, CoRunCost(g, 2, 1.0))).count(), 6);
}

}  // namespace
}  // namespace braid::sched
