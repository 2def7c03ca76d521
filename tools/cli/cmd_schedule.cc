#include <fmt/core.h>

#include <chrono>
#include <iostream>
#include <map>
#include <optional>

#include "base/device.h"
#include "base/error.h"
#include "commands.h"
#include "cost_flags.h"
#include "progress.h"
#include "sched/predict.h"
#include "sched/registry.h"
#include "sched/validate.h"
#include "tune/planner.h"

namespace braid::cli {

void add_ios_search_flags(CLI::App& cmd, sched::ScheduleOptions& options) {
  sched::IosSearch& search = options.ios_search;
  static const std::map<std::string, sched::IosSearch> names = {
      {"auto", sched::IosSearch::kAuto},
      {"dp", sched::IosSearch::kDynamicProgram},
      {"best-first", sched::IosSearch::kBestFirst}};
  cmd.add_option_function<std::string>(
         "--ios-search", [&search](const std::string& name) { search = names.at(name); },
         "ios: dp (ask every stage met), best-first (lower bounds first, same optimum) or auto "
         "(best-first when the cost is measured)")
      ->check(CLI::IsMember({"auto", "dp", "best-first"}))
      ->default_str("auto");
  cmd.add_option("--ios-tolerance", options.ios_tolerance,
                 "ios best-first: accept a schedule up to this fraction above the optimum, for "
                 "far fewer measurements (0: exact)")
      ->check(number_in("the tolerance", 0, 1e6))
      ->capture_default_str();
}

void add_multi_device_flags(CLI::App& cmd, sched::ScheduleOptions& options) {
  cmd.add_option("--devices", options.num_devices,
                 "Devices to schedule over (hios-*: HIOS's multi-device mapping; the others use "
                 "device 0)")
      ->check(whole_number_in("the number of devices", 1, kMaxDevices))
      ->capture_default_str();
  cmd.add_option("--window", options.window,
                 "hios-lp / hios-mr: units grouped into one stage by the sliding window")
      ->check(whole_number_in("the window", 1, kMaxGroupLimit))
      ->capture_default_str();
  cmd.add_option("--threads", options.cores,
                 "Cores the plan may use: intra, moldable, ios-threads and optimal-threads "
                 "give each unit its threads within them, auto tries intra@1..N (0: every CPU "
                 "the cost model prices)")
      ->check(whole_number_in("the number of cores", 0, kMaxThreads, " (0: all)"))
      ->capture_default_str();
}

void add_schedule_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("schedule", "Schedule a model and write the schedule (JSON)");
  static ModelFlags flags;
  static CostFlags cost_flags;
  static std::string algo, output, device_text = "cpu";
  static int threads_per_stream = 1;
  static sched::ScheduleOptions options;
  static bool json = false;
  add_model_flags(*cmd, flags);
  add_cost_flags(*cmd, cost_flags);
  std::string names;
  for (std::string_view n : sched::scheduler_names())
    names += (names.empty() ? "" : "|") + std::string(n);
  cmd->add_option("--algo", algo, "Algorithm: " + names)->required();
  cmd->add_option("--streams,--max-streams", options.max_streams,
                  "Streams per device (0: unbounded)")
      ->check(whole_number_in("the number of streams", 0, kMaxStreams, " (0: unbounded)"))
      ->capture_default_str();
  cmd->add_option("--max-group-size,-r", options.max_group_size,
                  "ios: units per group of a stage (r; 0: unbounded)")
      ->check(whole_number_in("r", 0, kMaxGroupLimit, " (0: unbounded)"))
      ->capture_default_str();
  cmd->add_option("--max-groups,-s", options.max_groups, "ios: groups per stage (s; 0: unbounded)")
      ->check(whole_number_in("s", 0, kMaxGroupLimit, " (0: unbounded)"))
      ->capture_default_str();
  add_ios_search_flags(*cmd, options);
  add_multi_device_flags(*cmd, options);
  cmd->add_option("--threads-per-stream", threads_per_stream,
                  "--cost cpu: OpenMP threads per stream while measuring")
      ->check(whole_number_in("the threads per stream", 1, kMaxThreads))
      ->capture_default_str();
  cmd->add_option("--seed", options.seed, "Seed of randomized schedulers")->capture_default_str();
  cmd->add_flag("--eager", cost_flags.eager,
                "sim:NAME: price every kernel as a host launch, for a plan run with --eager "
                "(default: inside the plan's CUDA Graph, as braid runs on GPUs)");
  static PrecisionFlags precision;
  add_precision_flags(*cmd, precision);
  cmd->add_option("-o,--output", output, "Write the schedule to this file");
  cmd->add_flag("--json", json, "Print a JSON summary with the schedule");
  cmd->add_option("--device", device_text,
                  "Where the plan will run: cpu, cuda:N or sim:NAME; the cost model defaults to "
                  "it as for `braid run` (cpu: measured here)")
      ->capture_default_str();
  cmd->callback([] {
    BRAID_CHECK(algo != "auto", ErrorCode::kInvalidArgument,
                "auto chooses by running schedules on a device: use `braid run MODEL` (its "
                "--json has the decision) or `braid bench MODEL --algos ...,auto`");
    tune::check_algorithm_name(algo);
    const Device device = parse_device(device_text);
    // The plan options `braid run` would build for the same flags, so that the planner prices
    // and schedules alike (same default cost model, profiler threads and layout).
    tune::PlanOptions plan{
        .device = device, .algorithm = algo, .cost = cost_flags, .schedule_options = options};
    plan.measure.device = device;
    plan.measure.graph_replay = device.is_gpu() && !cost_flags.eager;
    plan.measure.executor.threads_per_stream = threads_per_stream;
    plan.measure.precision = precision_of(precision);  // sim:NAME prices the plan in it
    const bool weighted_dag = flags.spec.ends_with(".dag.json");
    flags.options.with_weights =
        cost_needs_weights(tune::plan_cost_spec(plan, weighted_dag), flags.spec);
    models::LoadedModel m = models::load_model(flags.spec, flags.options);
    auto weights = std::make_shared<const ir::Weights>(std::move(m.weights));
    std::unique_ptr<cost::CostModel> cost = tune::make_plan_cost(m.units, weights, plan);
    sched::SearchStats stats;
    const cost::CostStats cost_before = cost->stats();
    auto begin = std::chrono::steady_clock::now();
    std::optional<Progress> progress(std::in_place,
                                     fmt::format("scheduling {} with {}", m.units.name(), algo));
    // plan_model validates the scheduler's output before anyone can run it.
    sched::Schedule s = tune::plan_model(m.units, weights, *cost, plan, &stats).schedule;
    progress.reset();
    double search_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin).count();
    const cost::CostStats cost_after = cost->stats();
    s.model = m.units.name();
    const Micros predicted = sched::predicted_latency(m.units, s, *cost);
    const sched::Schedule sequential =
        sched::make_scheduler("sequential")->schedule(m.units, *cost);
    const Micros sequential_latency = sched::predicted_latency(m.units, sequential, *cost);
    s.predicted_latency = predicted;
    s.stats["search_ms"] = search_ms;
    s.stats["cost"] = cost->name();
    if (stats.transitions > 0) s.stats["transitions"] = stats.transitions;
    if (!output.empty()) sched::write_schedule_file(s, m.units, output);
    if (json) {
      nlohmann::json j = {{"algorithm", s.algorithm},
                          {"model", s.model},
                          {"cost", cost->name()},
                          {"units", m.units.num_units()},
                          {"predicted_ms", predicted.count() / 1e3},
                          {"sequential_ms", sequential_latency.count() / 1e3},
                          {"search_ms", search_ms},
                          {"streams", sched::num_streams(s)},
                          {"stages", s.stages.size()},
                          {"transitions", stats.transitions},
                          {"states", stats.states},
                          {"stage_queries", cost_after.stage_queries - cost_before.stage_queries},
                          {"measurements", cost_after.measurements - cost_before.measurements},
                          {"estimates", cost_after.estimates - cost_before.estimates},
                          {"schedule", sched::to_json(s, m.units)}};
      std::cout << j.dump(2) << "\n";
      return;
    }
    fmt::print(
        "{} on {}: {} units, {} stages, {} streams; predicted {:.3f} ms (sequential {:.3f} ms, "
        "cost {}), search {:.3f} ms\n",
        s.algorithm, s.model, m.units.num_units(), s.stages.size(), sched::num_streams(s),
        predicted.count() / 1e3, sequential_latency.count() / 1e3, cost->name(), search_ms);
    if (output.empty())
      fmt::print("{}", sched::to_string(s, m.units));
    else
      fmt::print("wrote {}\n", output);
  });
}

void add_validate_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("validate", "Check a schedule against a model");
  static ModelFlags flags;
  static std::string path;
  static bool json = false;
  add_model_flags(*cmd, flags);
  cmd->add_option("SCHEDULE", path, "Schedule JSON file")->required();
  cmd->add_flag("--json", json, "Print {valid, errors, warnings} as JSON");
  flags.options.with_weights = false;
  cmd->callback([] {
    std::optional<models::LoadedModel> m;
    sched::Schedule s;
    try {
      m = models::load_model(flags.spec, flags.options);
      s = sched::read_schedule_file(path, m->units);
    } catch (const Error& e) {
      // --json answers in JSON whatever went wrong (a malformed file too); exit 2 all the same.
      if (json)
        std::cout << nlohmann::json{{"valid", false},
                                    {"errors", {e.what()}},
                                    {"warnings", nlohmann::json::array()}}
                         .dump(2)
                  << "\n";
      throw;
    }
    std::vector<sched::Diagnostic> diagnostics = sched::check(m->units, s);
    const bool valid = !sched::has_errors(diagnostics);
    if (json) {
      nlohmann::json errors = nlohmann::json::array(), warnings = nlohmann::json::array();
      for (const auto& d : diagnostics)
        (d.severity == sched::Severity::kError ? errors : warnings).push_back(d.message);
      std::cout
          << nlohmann::json{{"valid", valid}, {"errors", errors}, {"warnings", warnings}}.dump(2)
          << "\n";
    } else {
      for (const auto& d : diagnostics)
        if (d.severity == sched::Severity::kWarning)
          fmt::print(stderr, "braid: {}\n", sched::to_string(d));
    }
    if (!valid) {
      const auto& first = *std::find_if(diagnostics.begin(), diagnostics.end(), [](const auto& d) {
        return d.severity == sched::Severity::kError;
      });
      BRAID_THROW(ErrorCode::kInvalidSchedule, path, ": ", first.message);
    }
    if (!json)
      fmt::print("{}: valid schedule for {} ({} units)\n", path, m->units.name(),
                 m->units.num_units());
  });
}

}  // namespace braid::cli
