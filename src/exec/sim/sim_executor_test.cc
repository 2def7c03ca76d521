// The sim executor: whole runs and block-by-block runs of lowered plans, observer events with
// simulated times, and clear errors for plans the given devices cannot hold.
#include "exec/sim/sim_executor.h"

#include <gtest/gtest.h>

#include "base/error.h"
#include "cost/roofline.h"
#include "models/loader.h"
#include "sched/registry.h"

namespace braid::exec {
namespace {

struct Recorder final : RunObserver {
  std::vector<std::tuple<size_t, UnitId, double, double>> units;
  void on_unit(size_t lane, UnitId unit, Micros begin, Micros end) override {
    units.emplace_back(lane, unit, begin.count(), end.count());
  }
};

models::LoadedModel load(const std::string& name) {
  models::LoadOptions options;
  options.with_weights = false;
  return models::load_model(name, options);
}

// A prepared model owns what it runs: the units and plan it was prepared from may go away
// (the TOP runtime keeps prepared models, not the plans they came from).
TEST(SimExecutor, OutlivesTheUnitsAndPlanItWasPreparedFrom) {
  const models::LoadedModel m = load("googlenet");
  cost::RooflineCostModel roofline(m.units);
  auto executor =
      make_sim_executor({.devices = {sim::load_device("v100")}, .compute_values = false});
  const sched::Schedule s = sched::make_scheduler("lios", {})->schedule(m.units, roofline);
  const sched::ExecutionPlan kept = sched::lower(m.units, s);
  auto reference = executor->prepare({m.graph, nullptr, &m.units, &kept});
  auto units = std::make_unique<ir::UnitGraph>(m.units);
  auto plan = std::make_unique<sched::ExecutionPlan>(kept);
  auto model = executor->prepare({m.graph, nullptr, units.get(), plan.get()});
  units.reset();
  plan.reset();
  auto a = reference->new_request(), b = model->new_request();
  reference->run(*a);
  const RunStats stats = model->run(*b);
  EXPECT_EQ(last_simulation(*b)->makespan_us, last_simulation(*a)->makespan_us);
  EXPECT_EQ(stats.device_time.count(), last_simulation(*b)->makespan_us);  // run_blocks says it
}

TEST(SimExecutor, RunsWholeAndBlockByBlock) {
  const models::LoadedModel m = load("inception_v3");
  cost::RooflineCostModel roofline(m.units);
  for (const char* algo : {"sequential", "ios", "lios"}) {
    SCOPED_TRACE(algo);
    const sched::Schedule s = sched::make_scheduler(algo, {})->schedule(m.units, roofline);
    const sched::ExecutionPlan plan = sched::lower(m.units, s);
    auto executor =
        make_sim_executor({.devices = {sim::load_device("v100")}, .compute_values = false});
    auto model = executor->prepare({m.graph, nullptr, &m.units, &plan});
    auto request = model->new_request();
    Recorder recorder;
    model->run(*request, &recorder);
    const double whole = last_simulation(*request)->makespan_us;
    EXPECT_GT(whole, 0);
    for (const auto& [lane, unit, begin, end] : recorder.units) {
      EXPECT_LT(lane, plan.lanes.size());
      EXPECT_LE(begin, end);
      EXPECT_LE(end, whole + 1e-9);
    }
    // Every unit that launches a kernel is reported once.
    EXPECT_GT(recorder.units.size(), m.units.num_units() / 2);
    double blocks = 0;
    for (size_t b = 0; b < model->num_blocks(); ++b) {
      model->run_blocks(*request, b, b + 1);
      const double t = last_simulation(*request)->makespan_us;
      EXPECT_GT(t, 0) << "block " << b;
      blocks += t;
    }
    // Blocks one at a time cannot overlap one another: never faster than the whole run.
    EXPECT_GE(blocks, 0.999 * whole);
  }
}

TEST(SimExecutor, APlanOnMoreDevicesThanGivenIsAnError) {
  const models::LoadedModel m = load("squeezenet");
  cost::RooflineCostModel roofline(m.units);
  const sched::Schedule s = sched::make_scheduler("sequential", {})->schedule(m.units, roofline);
  sched::ExecutionPlan plan = sched::lower(m.units, s);
  plan.lanes.front().device = 1;  // as a two-device plan would place it
  auto executor =
      make_sim_executor({.devices = {sim::load_device("v100")}, .compute_values = false});
  try {
    executor->prepare({m.graph, nullptr, &m.units, &plan});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("device 1"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace braid::exec
