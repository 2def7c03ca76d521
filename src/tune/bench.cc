#include "tune/bench.h"

#include <chrono>

#include <fmt/format.h>

#include "base/error.h"
#include "sched/predict.h"
#include "sched/validate.h"
#include "tune/auto_schedule.h"

namespace braid::tune {

nlohmann::json to_json(const BenchRow& r) {
  nlohmann::json j = {{"model", r.model}, {"algorithm", r.algorithm}};
  if (r.error) {
    j["error"] = *r.error;
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
  const bool simulated = sim_device(o.measure.device).has_value();
  std::vector<BenchRow> rows;
  for (const std::string& spec : specs) {
    models::LoadOptions load = o.load;
    load.with_weights = !spec.ends_with(".dag.json") && (o.run || cost_needs_weights(o.cost, spec));
    models::LoadedModel m = models::load_model(spec, load);
    auto weights = std::make_shared<const ir::Weights>(std::move(m.weights));
    auto cost = make_cost_model(o.cost, m.units, weights);
    const bool runnable = (m.graph != nullptr || simulated) && o.run;
    // Schedules first (index 0: sequential, the reference), then all of them timed together.
    std::vector<sched::Schedule> schedules{
        sched::make_scheduler("sequential", o.schedule)->schedule(m.units, *cost)};
    const double sequential_predicted =
        sched::predicted_latency(m.units, schedules[0], *cost).count() / 1e3;
    std::optional<double> optimal_ms;
    const size_t first = rows.size();
    std::vector<size_t> schedule_of;  // per row of this model: its index in `schedules`
    for (const std::string& name : o.algorithms) {
      BenchRow r{.model = m.units.name(), .algorithm = name};
      step(fmt::format("scheduling {} with {}", r.model, name));
      size_t index = 0;
      try {
        sched::SearchStats stats;
        const cost::CostStats before = cost->stats();
        const auto begin = std::chrono::steady_clock::now();
        sched::Schedule s;
        if (name == kAuto) {
          BRAID_CHECK(runnable, ErrorCode::kInvalidArgument,
                      "auto measures its candidates: it needs a model to run and runs allowed");
          AutoOptions auto_options{
              .schedule = o.schedule, .measure = o.measure, .batch = o.load.zoo.batch};
          auto_options.measure.iters = default_auto_rounds(o.measure.device);
          auto_options.measure.warmup = default_auto_warmup(o.measure.device);
          auto_options.max_measured = default_auto_max_measured(o.measure.device);
          s = auto_schedule(m.units, weights, *cost, auto_options).schedule;
          s.algorithm = fmt::format("auto ({})", s.algorithm);
        } else {
          s = sched::make_scheduler(name, o.schedule)->schedule(m.units, *cost, &stats);
        }
        r.search_ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin)
                .count();
        const cost::CostStats after = cost->stats();
        sched::validate_or_throw(m.units, s);
        r.predicted_ms = sched::predicted_latency(m.units, s, *cost).count() / 1e3;
        r.predicted_speedup = sequential_predicted / r.predicted_ms;
        r.transitions = stats.transitions;
        r.stage_queries = after.stage_queries - before.stage_queries;
        r.measurements = after.measurements - before.measurements;
        r.streams = sched::num_streams(s);
        if (name == "optimal") optimal_ms = r.predicted_ms;
        if (name == kAuto) r.algorithm = s.algorithm;
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
      }
    }
    if (optimal_ms)
      for (size_t i = first; i < rows.size(); ++i)
        if (!rows[i].error) rows[i].gap_to_optimal = rows[i].predicted_ms / *optimal_ms - 1;
  }
  return rows;
}

}  // namespace braid::tune
