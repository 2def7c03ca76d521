#include "tune/planner.h"

#include "base/error.h"
#include "sched/predict.h"
#include "sched/validate.h"
#include "sim/device_spec.h"

namespace braid::tune {
namespace {

// "sim:a40x2" (a device set, as a device or a cost model) gives schedules 2 devices unless the
// options name a count.
sched::ScheduleOptions schedule_options(const PlanOptions& o, const CostSpec& cost) {
  sched::ScheduleOptions s = o.schedule_options;
  if (s.num_devices != 1) return s;
  if (o.device.is_sim()) s.num_devices = sim::parse_device_set(o.device.sim).second;
  if (s.num_devices == 1 && cost.model && cost.model->is_sim())
    s.num_devices = sim::parse_device_set(cost.model->device.sim).second;
  return s;
}

Plan given(const ir::UnitGraph& units, const PlanOptions& o) {
  Plan p;
  p.schedule = o.schedule ? sched::schedule_from_json(*o.schedule, units)
                          : sched::read_schedule_file(o.schedule_file, units);
  sched::validate_or_throw(units, p.schedule);
  p.summary = "given (" + p.schedule.algorithm + ")";
  return p;
}

}  // namespace

CostName default_cost_name(const Device& device, bool weighted_dag) {
  using Kind = CostName::Kind;
  if (device.is_sim()) return {.kind = Kind::kSim, .device = device};
  if (weighted_dag) return {.kind = Kind::kDag};
  if (device.is_cuda()) return {.kind = Kind::kCuda, .device = device};
  return {.kind = Kind::kCpu};
}

CostSpec plan_cost_spec(const PlanOptions& o, bool weighted_dag) {
  CostSpec spec = o.cost;
  if (!spec.model) spec.model = default_cost_name(o.device, weighted_dag);
  spec.cpu.threads_per_stream = o.measure.executor.threads_per_stream;
  spec.cpu.layout = o.measure.executor.layout;
  if (o.device.is_gpu()) spec.eager = !o.measure.graph_replay;
  spec.precision = o.measure.precision;  // sim:NAME prices the plan in what it will run in
  return spec;
}

std::unique_ptr<cost::CostModel> make_plan_cost(const ir::UnitGraph& units,
                                                std::shared_ptr<const ir::Weights> weights,
                                                const PlanOptions& o) {
  return make_cost_model(plan_cost_spec(o, units.graph() == nullptr), units, std::move(weights));
}

Plan plan_model(const ir::UnitGraph& units, std::shared_ptr<const ir::Weights> weights,
                const PlanOptions& o) {
  if (o.schedule || !o.schedule_file.empty()) return given(units, o);
  check_algorithm_name(o.algorithm);  // before a (maybe measured) cost model is made
  const std::unique_ptr<cost::CostModel> cost = make_plan_cost(units, weights, o);
  return plan_model(units, std::move(weights), *cost, o);
}

Plan plan_model(const ir::UnitGraph& units, std::shared_ptr<const ir::Weights> weights,
                const cost::CostModel& cost, const PlanOptions& o, sched::SearchStats* stats) {
  if (o.schedule || !o.schedule_file.empty()) return given(units, o);
  check_algorithm_name(o.algorithm);
  const sched::ScheduleOptions options =
      schedule_options(o, plan_cost_spec(o, units.graph() == nullptr));
  Plan p;
  if (o.algorithm == kAuto) {
    BRAID_CHECK(!launched_by_mpi(), ErrorCode::kInvalidArgument,
                "auto runs on one device: under mpirun give --algo or --schedule");
    AutoOptions a{.schedule = options,
                  .measure = o.measure,
                  .max_measured = default_auto_max_measured(o.device),
                  .batch = o.batch,
                  .cache_dir = o.cache_dir,
                  .reuse_cached = o.reuse_cached};
    a.measure.device = o.device;
    a.measure.iters = o.auto_rounds > 0 ? o.auto_rounds : default_auto_rounds(o.device);
    a.measure.warmup = default_auto_warmup(o.device);
    a.measure.keep_outputs = false;
    a.measure.trace = nullptr;
    a.measure.sim_trace.clear();
    p.decision = auto_schedule(units, std::move(weights), cost, a);
    p.schedule = p.decision->schedule;
    p.summary = summary(*p.decision);
  } else {
    p.schedule = sched::make_scheduler(o.algorithm, options)->schedule(units, cost, stats);
    sched::validate_or_throw(units, p.schedule);
    p.summary = o.algorithm;
  }
  p.cost_model = std::string(cost.name());
  p.predicted_ms = sched::predicted_latency(units, p.schedule, cost).count() / 1e3;
  return p;
}

}  // namespace braid::tune
