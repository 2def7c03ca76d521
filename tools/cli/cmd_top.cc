// braid top: TOP's asynchronous multi-model runtime on a scenario (runtime/scenario.h): models
// arriving at their own rates, run under each named policy side by side, in virtual time on a
// simulated GPU or for real on the CPU. Prints a table per policy; --json writes every report
// (with its samples over time), --log the event log of the last run.
#include <fmt/core.h>

#include <fstream>
#include <iostream>
#include <sstream>

#include "base/device.h"
#include "base/error.h"
#include "commands.h"
#include "cost_flags.h"
#include "runtime/gpg.h"
#include "runtime/scenario.h"
#include "top_flags.h"
#include "tune/measure.h"

namespace braid::cli {

void add_top_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "top", "Serve streams of tasks for several models (TOP): queues, launcher, block pipelining");
  static std::string scenario_file, policies, json_out, log_out, device;
  static std::vector<std::string> model_flags;
  static runtime::Scenario flags;
  static bool poisson = false;
  static int seeds = 1;
  cmd->add_option("--scenario", scenario_file, "A braid.top/1 scenario file (docs/top.md)");
  cmd->add_option("-m,--model", model_flags,
                  "A model and its arrival rate: NAME[:FPS[:ir|stages]] (repeatable)");
  cmd->add_option("--device", device,
                  "sim:NAME (virtual time), cpu or cuda:N (default sim:a100_40gb)");
  cmd->add_option("--policy", policies,
                  "Policies to run, comma-separated: static, static-serial, sync, top-heuristic, "
                  "learned:DIR (a policy `braid train maddpg` wrote)");
  cmd->add_option("--duration", flags.duration_s, "Seconds of arrivals (default 10)")
      ->check(number_in("the duration in seconds", kMinDurationS, runtime::kMaxDurationS));
  cmd->add_option("--seed", flags.seed, "Seed of the arrivals (periodic: their phases)");
  cmd->add_option("--seeds", seeds, "Run seeds seed..seed+N-1 of each policy")
      ->check(whole_number_in("the number of seeds", 1, kMaxSeeds));
  cmd->add_flag("--poisson", poisson, "Poisson arrivals (default periodic)");
  cmd->add_flag("--drain", flags.drain, "After the duration, run until every task is done");
  cmd->add_option("-H,--max-sub-blocks", flags.max_sub_blocks,
                  "H: most sub-blocks in an optimized combined block (default 4)")
      ->check(whole_number_in("H", 1, runtime::kMaxSubBlocksLimit));
  cmd->add_option("--batch", flags.batch, "Tasks per instance (default 1)")
      ->check(whole_number_in("the batch size", 1, kMaxBatch));
  cmd->add_option("--image-size", flags.image_size, "Input height and width (default 224)")
      ->check(whole_number_in("the image size", 1, kMaxImageSize));
  cmd->add_option("--scheduler", flags.scheduler, "Each model's own scheduler (default ios)");
  cmd->add_option("--intra", flags.intra,
                  "Inside combined blocks: dp (IOS's DP, default) or gpg:DIR (a GPG `braid train "
                  "gpg` wrote)");
  cmd->add_option_function<std::string>(
      "--cost", [](const std::string& text) { flags.cost = tune::parse_cost_option(text); },
      "Its cost model (default: the device's)");
  cmd->add_option("-T,--variance-threshold", flags.variance_threshold,
                  "Re-decide when the queue lengths' variance exceeds this (default 16)")
      ->check(number_in("the variance threshold", 0, 1e12));
  cmd->add_option("--max-in-flight", flags.max_in_flight,
                  "static: most instances of a model in flight at once (default 64)")
      ->check(whole_number_in("the in-flight limit", 1, int64_t(runtime::kMaxInFlight)));
  cmd->add_option("--queue-capacity", flags.queue_capacity,
                  "Reject tasks beyond this many queued per model (default 0: unbounded)")
      ->check(whole_number_in("the queue capacity", 0, int64_t(runtime::kMaxQueueCapacity),
                              " (0: unbounded)"));
  static models::InputShapes inputs;
  add_shape_flags(*cmd, inputs);
  static PrecisionFlags precision;
  add_precision_flags(*cmd, precision);
  cmd->add_option("--json", json_out, "Write every report (with samples over time) here");
  cmd->add_option("--log", log_out, "Write the event log of the last run here");
  cmd->callback([cmd] {
    runtime::Scenario s = flags;
    if (!scenario_file.empty()) {
      std::ifstream in(scenario_file);
      BRAID_CHECK(in.good(), ErrorCode::kNotFound, "cannot open scenario '", scenario_file, "'");
      nlohmann::json j;
      try {
        in >> j;
      } catch (const nlohmann::json::exception& e) {
        BRAID_THROW(ErrorCode::kInvalidArgument, scenario_file, ": not JSON: ", e.what());
      }
      s = runtime::parse_scenario(j, scenario_file);
      // Flags given beside a scenario file override its fields.
      auto given = [&](const char* name) { return cmd->count(name) > 0; };
      if (given("--duration")) s.duration_s = flags.duration_s;
      if (given("--seed")) s.seed = flags.seed;
      if (given("--drain")) s.drain = flags.drain;
      if (given("--max-sub-blocks")) s.max_sub_blocks = flags.max_sub_blocks;
      if (given("--batch")) s.batch = flags.batch;
      if (given("--image-size")) s.image_size = flags.image_size;
      if (given("--scheduler")) s.scheduler = flags.scheduler;
      if (given("--intra")) s.intra = flags.intra;
      if (given("--cost")) s.cost = flags.cost;
      if (given("--variance-threshold")) s.variance_threshold = flags.variance_threshold;
      if (given("--queue-capacity")) s.queue_capacity = flags.queue_capacity;
      if (given("--max-in-flight")) s.max_in_flight = flags.max_in_flight;
    }
    if (!model_flags.empty()) {
      s.models.clear();
      for (const std::string& f : model_flags) {
        const ModelRate m = parse_model_rate(f);
        s.models.push_back(
            {.model = m.model,
             .fps = m.fps,
             .blocks = m.stages ? runtime::BlockGrouping::kStages : runtime::BlockGrouping::kIr});
      }
    }
    BRAID_CHECK(!s.models.empty(), ErrorCode::kInvalidArgument,
                "give models with --model NAME:FPS or a --scenario file");
    for (runtime::ScenarioModel& m : s.models) m.inputs = inputs;  // --shape/--dim: every model
    if (!device.empty()) s.device = parse_device(device);
    if (cmd->count("--precision") > 0 || cmd->count("--tf32") > 0)
      s.precision = precision_of(precision);
    if (!policies.empty()) s.policies = split(policies, ',');
    if (poisson) s.arrivals = runtime::ArrivalKind::kPoisson;
    // The limits (FPS, duration, the task count they make, ...) before anything is loaded.
    runtime::validate(s, scenario_file.empty() ? "top" : scenario_file);
    for (const std::string& p : s.policies) runtime::make_policy(p);  // unknown names fail early
    runtime::make_intra_scheduler(s.intra);  // a missing or bad gpg:DIR too

    runtime::ScenarioRunner runner(s);
    for (size_t m = 0; m < runner.models().size(); ++m) {
      const runtime::RuntimeModel& model = runner.models().model(m);
      fmt::print("{}: {} units in {} blocks ({}), {} FPS\n", model.name, model.units().num_units(),
                 model.blocks.size(), runtime::to_string(s.models[m].blocks), s.models[m].fps);
    }
    std::vector<runtime::Report> reports;
    nlohmann::json all = nlohmann::json::array();
    for (const std::string& p : s.policies)
      for (int k = 0; k < seeds; ++k) {
        const uint64_t seed = s.seed + uint64_t(k);
        runtime::Report r = runner.run(
            p, seed, [&](runtime::RuntimeOptions& o) { o.keep_event_log = !log_out.empty(); });
        fmt::print(
            "{} seed {}: {:.1f} FPS, utilization {:.1f}% (busy {:.1f}%), {} steps, {} decisions, "
            "stage dict "
            "{}/{} hits, final queue variance {:.1f}, {:.2f} s of {} in {:.2f} s wall\n",
            p, seed, r.throughput_fps, 100 * r.utilization, 100 * r.busy, r.steps, r.decisions,
            r.combine.hits, r.combine.lookups, r.final_variance, r.duration_us / 1e6,
            runner.backend().virtual_time() ? "virtual time" : "wall time", r.wall_seconds);
        nlohmann::json j = runtime::to_json(r);
        j["seed"] = seed;
        all.push_back(std::move(j));
        if (!log_out.empty()) {
          std::ofstream out(log_out);
          BRAID_CHECK(out.good(), ErrorCode::kInvalidArgument, "cannot write '", log_out, "'");
          for (const std::string& line : r.event_log) out << line << "\n";
        }
        reports.push_back(std::move(r));
      }
    fmt::print("\n{}", runtime::markdown_table(reports));
    if (!json_out.empty()) {
      std::ofstream out(json_out);
      BRAID_CHECK(out.good(), ErrorCode::kInvalidArgument, "cannot write '", json_out, "'");
      out << nlohmann::json{{"format", "braid.top-report/1"},
                            {"scenario", runtime::to_json(s)},
                            {"runs", all}}
                 .dump(2)
          << "\n";
    }
  });
}

}  // namespace braid::cli
