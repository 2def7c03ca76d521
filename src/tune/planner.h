// One planning pipeline, model -> cost model -> schedule, that every front end calls: `braid
// run`, session::Session (and so Python), tune::bench and the runtime's ScenarioRunner (and so
// `braid top` and `braid serve`). The defaults are decided here once, as functions of the model
// and the device (the cost model, auto's rounds and candidates, a simulated device set's
// devices), so that the same model, device and options give the same plan on every front end;
// a new plan dimension is added here, not four times.
//
//   tune::PlanOptions o{.device = parse_device("sim:a100_40gb"), .algorithm = "ios"};
//   tune::Plan p = tune::plan_model(m.units, weights, o);
//   p.schedule;  p.cost_model;  p.predicted_ms;  p.decision (auto's, with what it measured)
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "base/device.h"
#include "cost/cost_model.h"
#include "sched/registry.h"
#include "sched/schedule.h"
#include "tune/auto_schedule.h"
#include "tune/cost_models.h"
#include "tune/measure.h"

namespace braid::tune {

struct PlanOptions {
  Device device;  // where the plan runs, and where auto measures its candidates
  // "auto" (auto_schedule.h: measured on the device) or a scheduler of the registry.
  std::string algorithm = std::string(kAuto);
  // A schedule to run as given instead of searching one (braid.schedule/1 JSON, or a file of
  // it); validated against the model. No cost model is made for it.
  std::optional<nlohmann::json> schedule;
  std::filesystem::path schedule_file;
  // The cost model; none named: default_cost_name(device, the model is a weighted DAG). Its
  // CPU profiler threads and layout and its sim pricing (eager or replayed) come from `measure`.
  CostSpec cost;
  sched::ScheduleOptions schedule_options;
  // How auto runs its candidates: executor options, graph replay, TF32, inputs and their seed.
  // Its device is `device`; its iters and warmup are auto_rounds and the device's default.
  MeasureOptions measure;
  int auto_rounds = 0;  // 0: default_auto_rounds(device)
  int64_t batch = 1;    // for auto's decision cache key
  // Where auto's decisions are cached; nullopt: neither read nor written.
  std::optional<std::filesystem::path> cache_dir;
  bool reuse_cached = true;  // false: auto measures afresh (--retune)
};

struct Plan {
  sched::Schedule schedule;
  std::optional<AutoDecision> decision;  // auto's: the candidates, measured and skipped
  std::string cost_model;                // the name of the cost model that priced it; "" if given
  std::optional<double> predicted_ms;    // its latency under that cost model
  // auto: "WINNER (measured X.XXx over the best intra-operator run, ...)"; given: "given (ALGO)";
  // else the name.
  std::string summary;
};

// The cost model a plan is priced with unless one is named, for every front end alike: the
// device's own (cuda:N: measured on that GPU; sim:NAME: the simulator) and on the CPU the
// measured CPU profiler; a weighted DAG, which has no operators to measure, its own latencies
// ("dag") unless simulated.
CostName default_cost_name(const Device& device, bool weighted_dag);

// options.cost with the defaults filled in: the name, the CPU profiler's threads per stream and
// layout (units priced as they will run), sim:NAME's eager pricing on a GPU device.
CostSpec plan_cost_spec(const PlanOptions& options, bool weighted_dag);
// The cost model of plan_cost_spec; `units` must outlive it.
std::unique_ptr<cost::CostModel> make_plan_cost(const ir::UnitGraph& units,
                                                std::shared_ptr<const ir::Weights> weights,
                                                const PlanOptions& options);

// The plan options ask for. Throws what loading a schedule, making a cost model, scheduling and
// measuring throw: kNotFound for an unknown algorithm, kInvalidSchedule for a given schedule
// that does not fit the model, kInvalidArgument for auto under several devices.
Plan plan_model(const ir::UnitGraph& units, std::shared_ptr<const ir::Weights> weights,
                const PlanOptions& options);
// The same under a cost model the caller keeps (bench and the runtime price more with it);
// `stats`, when given, receives the scheduler's search statistics.
Plan plan_model(const ir::UnitGraph& units, std::shared_ptr<const ir::Weights> weights,
                const cost::CostModel& cost, const PlanOptions& options,
                sched::SearchStats* stats = nullptr);

}  // namespace braid::tune
