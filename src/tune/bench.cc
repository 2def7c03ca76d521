#include "tune/bench.h"

#include <chrono>
#include <cmath>

#include <fmt/format.h>

#include "base/error.h"
#include "cost/machine.h"
#include "ir/analysis.h"
#include "tune/auto_schedule.h"
#include "tune/planner.h"

namespace braid::tune {

Bounds model_bounds(const cost::CostModel& cost, const Device& device) {
  const ir::UnitGraph& units = cost.units();
  // Where units are moldable, a unit on the critical path may take every core, and the work is
  // what each unit costs on one.
  const int cores = cost.max_threads();
  std::vector<double> fastest(units.num_units());
  double work = 0;
  for (size_t u = 0; u < fastest.size(); ++u) {
    const UnitId unit{static_cast<uint32_t>(u)};
    const double alone = cost.unit_latency(unit).count() / 1e3;
    fastest[u] =
        cores > 1 ? std::min(alone, cost.unit_latency_at(unit, cores).count() / 1e3) : alone;
    work += cores > 1 ? cost.unit_latency_at(unit, 1).count() / 1e3 : alone;
  }
  Bounds b{.cost_model = std::string(cost.name()),
           .critical_path_ms = ir::critical_path(units, fastest).length};
  b.lanes = cores > 1 ? cores : cost.parallelism();
  if (!std::isfinite(b.lanes)) b.lanes = device.is_cpu() ? cost::this_machine().num_cpus : 0;
  if (b.lanes > 0) b.work_ms = work / b.lanes;
  return b;
}

nlohmann::json to_json(const Bounds& b) {
  nlohmann::json j = {{"cost_model", b.cost_model}, {"critical_path_ms", b.critical_path_ms}};
  if (b.work_ms) j["work_ms"] = *b.work_ms, j["lanes"] = b.lanes;
  j["max_ms"] = b.max_ms();
  return j;
}

nlohmann::json to_json(const BenchRow& r) {
  nlohmann::json j = {{"model", r.model}, {"algorithm", r.algorithm}};
  if (r.error) {
    j["error"] = *r.error;
    j["bounds"] = to_json(r.bounds);
    return j;
  }
  j["search_ms"] = r.search_ms;
  j["predicted_ms"] = r.predicted_ms;
  j["predicted_speedup"] = r.predicted_speedup;
  j["streams"] = r.streams;
  j["transitions"] = r.transitions;
  j["stage_queries"] = r.stage_queries;
  j["measurements"] = r.measurements;
  if (r.measured) {
    j["measured_ms"] = {{"median", r.measured->median_ms},
                        {"p10", r.measured->p10_ms},
                        {"p90", r.measured->p90_ms}};
    j["measured_speedup"] = *r.measured_speedup;
    j["outputs_match_sequential"] = r.outputs_match;
  }
  if (r.gap_to_optimal) j["gap_to_optimal"] = *r.gap_to_optimal;
  j["bounds"] = to_json(r.bounds);
  j["predicted_over_bound"] = r.predicted_over_bound;
  if (r.measured_over_bound) j["measured_over_bound"] = *r.measured_over_bound;
  return j;
}

std::vector<BenchRow> bench(std::span<const std::string> specs, const BenchOptions& o) {
  BRAID_CHECK(!o.algorithms.empty(), ErrorCode::kInvalidArgument, "no algorithms to compare");
  for (const std::string& n : o.algorithms) check_algorithm_name(n);  // unknown names fail now
  for (const std::string& n : o.algorithms)
    if (n != kAuto) sched::make_scheduler(n, o.schedule);  // bad options fail now
  auto step = [&](const std::string& what) {
    if (o.on_step) o.on_step(what);
  };
  const bool simulated = o.measure.device.is_sim();
  PlanOptions plan{.device = o.measure.device,
                   .cost = o.cost,
                   .schedule_options = o.schedule,
                   .measure = o.measure,
                   .batch = o.load.zoo.batch};
  std::vector<BenchRow> rows;
  for (const std::string& spec : specs) {
    models::LoadOptions load = o.load;
    load.with_weights =
        !spec.ends_with(".dag.json") &&
        (o.run || cost_needs_weights(plan_cost_spec(plan, spec.ends_with(".dag.json")), spec));
    models::LoadedModel m = models::load_model(spec, load);
    auto weights = std::make_shared<const ir::Weights>(std::move(m.weights));
    auto cost = make_plan_cost(m.units, weights, plan);
    const Bounds bounds = model_bounds(*cost, o.measure.device);
    const bool runnable = (m.graph != nullptr || simulated) && o.run;
    // Schedules first (index 0: sequential, the reference), then all of them timed together.
    plan.algorithm = "sequential";
    Plan sequential = plan_model(m.units, weights, *cost, plan);
    const double sequential_predicted = *sequential.predicted_ms;
    std::vector<sched::Schedule> schedules{std::move(sequential.schedule)};
    std::optional<double> optimal_ms;
    const size_t first = rows.size();
    std::vector<size_t> schedule_of;  // per row of this model: its index in `schedules`
    for (const std::string& name : o.algorithms) {
      BenchRow r{.model = m.units.name(), .algorithm = name, .bounds = bounds};
      step(fmt::format("scheduling {} with {}", r.model, name));
      size_t index = 0;
      try {
        sched::SearchStats stats;
        const cost::CostStats before = cost->stats();
        const auto begin = std::chrono::steady_clock::now();
        BRAID_CHECK(name != kAuto || runnable, ErrorCode::kInvalidArgument,
                    "auto measures its candidates: it needs a model to run and runs allowed");
        plan.algorithm = name;
        Plan p = plan_model(m.units, weights, *cost, plan, &stats);
        sched::Schedule s = std::move(p.schedule);
        if (name == kAuto) s.algorithm = fmt::format("auto ({})", s.algorithm);
        r.search_ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin)
                .count();
        const cost::CostStats after = cost->stats();  // the search's and the prediction's
        r.predicted_ms = *p.predicted_ms;
        r.predicted_speedup = sequential_predicted / r.predicted_ms;
        r.predicted_over_bound = r.predicted_ms / bounds.max_ms();
        r.transitions = stats.transitions;
        r.stage_queries = after.stage_queries - before.stage_queries;
        r.measurements = after.measurements - before.measurements;
        r.streams = sched::num_streams(s);
        if (name == "optimal") optimal_ms = r.predicted_ms;
        if (name == kAuto) r.algorithm = s.algorithm;
        r.schedule = s;
        if (name != "sequential") {
          index = schedules.size();
          schedules.push_back(std::move(s));
        }
      } catch (const Error& e) {
        r.error = e.what();
      }
      schedule_of.push_back(index);
      rows.push_back(std::move(r));
    }
    if (runnable) {
      step(fmt::format("running {}'s {} schedules", m.units.name(), schedules.size()));
      const std::vector<Measured> measured =
          measure_interleaved(m.units, weights, schedules, o.measure);
      for (size_t i = first; i < rows.size(); ++i) {
        BenchRow& r = rows[i];
        if (r.error) continue;
        r.measured = measured[schedule_of[i - first]];
        r.measured_speedup = measured[0].median_ms / r.measured->median_ms;
        r.outputs_match = r.measured->outputs_sha256 == measured[0].outputs_sha256;
        r.measured_over_bound = r.measured->median_ms / bounds.max_ms();
      }
    }
    if (optimal_ms)
      for (size_t i = first; i < rows.size(); ++i)
        if (!rows[i].error) rows[i].gap_to_optimal = rows[i].predicted_ms / *optimal_ms - 1;
  }
  return rows;
}

}  // namespace braid::tune
