// The planner: one default cost model per (model, device), given schedules run as given, auto
// and the schedulers planned alike; bench's bounds (critical path, work over lanes) of a DAG
// whose bounds are known by hand.
#include "tune/planner.h"

#include <gtest/gtest.h>

#include "base/error.h"
#include "cost/dag_cost.h"
#include "cost/roofline.h"
#include "ir/analysis.h"
#include "models/dag_json.h"
#include "models/loader.h"
#include "sched/schedule.h"
#include "tune/bench.h"

namespace braid::tune {
namespace {

// a -> {b, c} -> d with latencies 1, 2, 3, 1.5 ms (tests/golden/diamond.dag.json).
ir::UnitGraph diamond() {
  return models::parse_dag_json_text(R"({"format": "braid.dag/1", "name": "diamond",
    "nodes": [{"name": "a", "latency_ms": 1.0}, {"name": "b", "latency_ms": 2.0},
              {"name": "c", "latency_ms": 3.0}, {"name": "d", "latency_ms": 1.5}],
    "edges": [{"from": "a", "to": "b"}, {"from": "a", "to": "c"},
              {"from": "b", "to": "d"}, {"from": "c", "to": "d"}]})",
                                     "diamond");
}

TEST(Planner, TheDefaultCostModelIsTheDevicesOwn) {
  EXPECT_EQ(to_string(default_cost_name(Device::cpu(), false)), "cpu");
  EXPECT_EQ(to_string(default_cost_name(Device::cpu(), true)), "dag");
  EXPECT_EQ(to_string(default_cost_name(Device::cuda(2), false)), "cuda:2");
  EXPECT_EQ(to_string(default_cost_name(Device::cuda(2), true)), "dag");
  EXPECT_EQ(to_string(default_cost_name(Device::simulated("v100"), false)), "sim:v100");
  EXPECT_EQ(to_string(default_cost_name(Device::simulated("v100"), true)), "sim:v100");
  // The profiler prices units as the executor will run them; sim:NAME as the plan launches.
  PlanOptions o{.device = Device::simulated("v100")};
  o.measure.executor.threads_per_stream = 2;
  o.measure.graph_replay = false;
  o.measure.precision = Precision::kFp16;
  const CostSpec spec = plan_cost_spec(o, false);
  EXPECT_EQ(to_string(*spec.model), "sim:v100");
  EXPECT_EQ(spec.cpu.threads_per_stream, 2);
  EXPECT_TRUE(spec.eager);
  EXPECT_EQ(spec.precision, Precision::kFp16);
  o.cost.model = parse_cost_name("roofline");
  EXPECT_EQ(to_string(*plan_cost_spec(o, false).model), "roofline");
}

TEST(Planner, PlansANamedSchedulerAndRunsAGivenScheduleAsGiven) {
  const ir::UnitGraph units = diamond();
  // Options field by field: GCC 12 warns of designated temporaries here (a false positive).
  PlanOptions o;
  o.algorithm = "greedy";
  const Plan greedy = plan_model(units, nullptr, o);
  EXPECT_EQ(greedy.cost_model, "dag");
  EXPECT_EQ(greedy.summary, "greedy");
  ASSERT_TRUE(greedy.predicted_ms.has_value());
  EXPECT_DOUBLE_EQ(*greedy.predicted_ms, 5.5);  // a, c beside b, d
  EXPECT_FALSE(greedy.decision.has_value());
  o.algorithm = "no-such-scheduler";  // unused with a schedule
  o.schedule = sched::to_json(greedy.schedule, units);
  const Plan given = plan_model(units, nullptr, o);
  EXPECT_EQ(sched::to_json(given.schedule, units), sched::to_json(greedy.schedule, units));
  EXPECT_EQ(given.summary, "given (greedy)");
  EXPECT_TRUE(given.cost_model.empty());
  try {
    o.schedule.reset();
    plan_model(units, nullptr, o);
    FAIL() << "an unknown scheduler was planned";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
  }
}

// The diamond's critical path a, c, d is 5.5 ms; its work, 7.5 ms, over lanes.
TEST(BenchBounds, CriticalPathAndWorkOverLanes) {
  const ir::UnitGraph units = diamond();
  const cost::DagCostModel dag(units);  // parallelism: unbounded
  const Bounds on_cpu = model_bounds(dag, Device::cpu());
  EXPECT_EQ(on_cpu.cost_model, dag.name());
  EXPECT_DOUBLE_EQ(on_cpu.critical_path_ms, 5.5);
  ASSERT_TRUE(on_cpu.work_ms.has_value());  // over this machine's CPUs
  EXPECT_GE(on_cpu.lanes, 1);
  EXPECT_DOUBLE_EQ(*on_cpu.work_ms, 7.5 / on_cpu.lanes);
  EXPECT_DOUBLE_EQ(on_cpu.max_ms(), std::max(5.5, 7.5 / on_cpu.lanes));
  const Bounds on_gpu = model_bounds(dag, Device::simulated("v100"));
  EXPECT_FALSE(on_gpu.work_ms.has_value());  // a GPU's units share it in other ways
  EXPECT_DOUBLE_EQ(on_gpu.max_ms(), 5.5);
  const nlohmann::json j = to_json(on_cpu);
  EXPECT_EQ(j["cost_model"], std::string(dag.name()));
  EXPECT_DOUBLE_EQ(j["max_ms"].get<double>(), on_cpu.max_ms());
}

// Moldable units (the roofline on 4 cores): the critical path takes each unit on all of them,
// the work is each unit on one over the 4.
TEST(BenchBounds, AllotmentsBoundAtEveryCoreAndAtOne) {
  models::LoadOptions load;
  load.zoo.image_size = 64;
  load.with_weights = false;
  const models::LoadedModel m = models::load_model("squeezenet", load);
  const cost::RooflineCostModel roofline(m.units, {.cores = 4});
  const Bounds b = model_bounds(roofline, Device::cpu());
  EXPECT_EQ(b.lanes, 4);
  std::vector<double> on_all;
  double work = 0;
  for (size_t u = 0; u < m.units.num_units(); ++u) {
    on_all.push_back(roofline.unit_latency_at(UnitId(u), 4).count() / 1e3);
    work += roofline.unit_latency_at(UnitId(u), 1).count() / 1e3;
  }
  EXPECT_DOUBLE_EQ(b.critical_path_ms, ir::critical_path(m.units, on_all).length);
  ASSERT_TRUE(b.work_ms.has_value());
  EXPECT_DOUBLE_EQ(*b.work_ms, work / 4);
}

// Each bench row carries its model's bounds and its distance to the larger; no prediction beats
// the critical path of the cost model that priced it.
TEST(BenchBounds, EveryRowIsAtLeastItsBound) {
  models::LoadOptions load;
  load.zoo.image_size = 64;
  const std::vector<std::string> models = {"squeezenet"};
  BenchOptions o;  // field by field: GCC 12 warns of designated ones here (a false positive)
  o.algorithms = {"sequential", "greedy", "ios"};
  o.cost.model = parse_cost_name("roofline");
  o.load = load;
  o.run = false;
  const std::vector<BenchRow> rows = bench(models, o);
  ASSERT_EQ(rows.size(), 3u);
  for (const BenchRow& r : rows) {
    ASSERT_FALSE(r.error) << *r.error;
    EXPECT_EQ(r.bounds.cost_model, "roofline");
    EXPECT_GT(r.bounds.critical_path_ms, 0);
    EXPECT_GE(r.predicted_ms, r.bounds.critical_path_ms * (1 - 1e-9)) << r.algorithm;
    EXPECT_DOUBLE_EQ(r.predicted_over_bound, r.predicted_ms / r.bounds.max_ms());
    EXPECT_FALSE(r.measured_over_bound.has_value());
    EXPECT_TRUE(to_json(r).contains("bounds"));
  }
  EXPECT_TRUE(rows[0].schedule.has_value());  // what it planned, for comparing front ends
}

}  // namespace
}  // namespace braid::tune
