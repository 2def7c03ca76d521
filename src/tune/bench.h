// Schedulers side by side on models: what `braid bench` prints and `braid.bench()` returns. For
// each model, every named scheduler's search time, predicted latency (the cost model's) and,
// unless told not to, the latency measured on the device, all of a model's schedules timed
// interleaved (measure_interleaved: drift hits all alike); speed-ups over sequential (always
// scheduled first, as the reference) and the gap to `optimal` where it was computed. `auto` is
// a row like the others (its search time includes measuring its candidates). A scheduler that
// cannot schedule a model gives a row with its error, not an exception. Every schedule comes from
// the planner (planner.h), as `braid run`'s and a Session's do. Each model also gets its lower
// bounds (critical path, work over cores) and each row its distance to the larger.
//
//   tune::BenchOptions o{.algorithms = {"sequential", "greedy", "ios"},
//                        .cost = {.model = tune::parse_cost_name("roofline")}};
//   for (const tune::BenchRow& r : tune::bench({"squeezenet"}, o)) ... to_json(r)
#pragma once

#include <algorithm>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/loader.h"
#include "sched/registry.h"
#include "tune/cost_models.h"
#include "tune/measure.h"

namespace braid::tune {

// Lower bounds on any schedule's latency of one model, from the cost model's unit latencies:
// no plan beats its longest dependent chain, nor its total work spread over every core.
struct Bounds {
  std::string cost_model;  // what priced the units (its name())
  // The longest path through the unit graph, each unit at its fastest: on all max_threads()
  // cores where the cost model prices allotments, else its unit_latency.
  double critical_path_ms = 0;
  // The summed one-core unit latencies over `lanes`, the cores the run may use (max_threads()
  // where the cost model prices allotments; else its parallelism(), the CPU profiler's CPUs
  // over threads per stream, its units priced at that many threads; else the CPUs on the cpu
  // device). nullopt where none bounds it (a GPU's units share the device in other ways).
  std::optional<double> work_ms;
  double lanes = 0;
  double max_ms() const { return std::max(critical_path_ms, work_ms.value_or(0)); }
};
Bounds model_bounds(const cost::CostModel& cost, const Device& device);
// {"cost_model", "critical_path_ms", "work_ms", "lanes", "max_ms"} (work_ms, lanes when bounded).
nlohmann::json to_json(const Bounds& bounds);

struct BenchRow {
  std::string model, algorithm;
  std::optional<std::string> error;  // the scheduler could not schedule this model
  double search_ms = 0, predicted_ms = 0;
  int64_t transitions = 0, stage_queries = 0, measurements = 0;
  int streams = 0;
  std::optional<Measured> measured;
  bool outputs_match = true;  // outputs identical to sequential's
  double predicted_speedup = 0;
  std::optional<double> measured_speedup, gap_to_optimal;
  std::optional<sched::Schedule> schedule;  // what the planner gave (to_json leaves it out)
  Bounds bounds;                            // the model's
  // The measured median (the predicted latency) over bounds.max_ms(): 1 is as fast as possible.
  std::optional<double> measured_over_bound;
  double predicted_over_bound = 0;
};

// {"model", "algorithm", "search_ms", "predicted_ms", ..., "measured_ms": {median, p10, p90},
// "bounds": {...}, "measured_over_bound"}, or {"model", "algorithm", "error", "bounds"}.
nlohmann::json to_json(const BenchRow& row);

struct BenchOptions {
  std::vector<std::string> algorithms = {"sequential", "greedy"};  // registry names or "auto"
  sched::ScheduleOptions schedule;
  CostSpec cost;  // the cost model schedulers search under; no name: the planner's default
  // Where and how the schedules run (its device: cpu, cuda:N or sim:NAME; iters, warm-up).
  MeasureOptions measure{.iters = 10, .warmup = 2};
  models::LoadOptions load;
  bool run = true;  // false: predict only
  // Called as each step starts ("scheduling squeezenet with ios", "running squeezenet's 3
  // schedules"), for progress displays.
  std::function<void(const std::string&)> on_step;
};

// Throws what loading a model throws, kNotFound for an unknown algorithm (before any work);
// a scheduler's own failure is its row's error.
std::vector<BenchRow> bench(std::span<const std::string> models, const BenchOptions& options);

}  // namespace braid::tune
