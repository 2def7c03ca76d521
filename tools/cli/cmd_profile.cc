// braid profile: measure every unit of a model on this CPU and fill the profile cache, as IOS
// profiles a network before its dynamic program runs (cost/cpu_profiler.h).
#include <fmt/core.h>

#include <iostream>

#include "base/error.h"
#include "commands.h"
#include "exec/cpu/layout.h"
#include "profile/cpu_profiler.h"
#include "progress.h"

namespace braid::cli {
namespace {

nlohmann::json loadavg_json() {
  auto load = cost::read_loadavg();
  return load ? nlohmann::json(*load) : nlohmann::json();
}

std::string loadavg_text(const nlohmann::json& j) {
  return j.is_array() ? fmt::format("{:.2f} {:.2f} {:.2f}", j[0].get<double>(), j[1].get<double>(),
                                    j[2].get<double>())
                      : "unknown";
}

}  // namespace

void add_profile_command(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("profile", "Measure every unit on this CPU and fill the profile cache");
  static ModelFlags flags;
  static profile::CpuProfilerOptions options;
  static bool json = false, no_cache = false;
  static std::string cache_dir;
  add_model_flags(*cmd, flags);
  cmd->add_option("--threads-per-stream", options.threads_per_stream, "OpenMP threads per stream")
      ->check(whole_number_in("the threads per stream", 1, kMaxThreads))
      ->capture_default_str();
  cmd->add_option_function<std::string>(
      "--layout", [](const std::string& name) { options.layout = exec::cpu::parse_layout(name); },
      "Activation layout the model will run with (braid run --layout): nhwc (default), "
      "nchw16c, nchw8c, plain");
  cmd->add_option("--warmup", options.warmup, "Untimed inferences first")
      ->check(whole_number_in("the number of untimed inferences", 0, kMaxIters))
      ->capture_default_str();
  cmd->add_option("--runs", options.runs, "Timed runs; the median of their means is reported")
      ->check(whole_number_in("the number of timed runs", 1, kMaxIters))
      ->capture_default_str();
  cmd->add_option("--number", options.number, "Inferences per timed run")
      ->check(whole_number_in("the inferences per timed run", 1, kMaxIters))
      ->capture_default_str();
  cmd->add_option("--cache-dir", cache_dir,
                  "Profile cache directory (default: $BRAID_CACHE_DIR, "
                  "$XDG_CACHE_HOME/braid or ~/.cache/braid)");
  cmd->add_flag("--no-cache", no_cache, "Neither read nor write the profile cache");
  cmd->add_flag("--remeasure-suspect", options.remeasure_suspect,
                "Measure again the cached units measured while the machine was busy");
  cmd->add_flag("--json", json, "Print a JSON object");
  cmd->callback([] {
    models::LoadedModel m = models::load_model(flags.spec, flags.options);
    BRAID_CHECK(m.graph != nullptr, ErrorCode::kInvalidArgument, "'", flags.spec,
                "' is a weighted DAG: it has no operators to profile");
    options.use_cache = !no_cache;
    options.cache_dir = cache_dir;
    auto weights = std::make_shared<const ir::Weights>(std::move(m.weights));
    profile::CpuProfiler profiler(m.units, weights, options);
    if (options.threads_per_stream > 1 && profiler.machine().omp_wait == "default")
      std::fprintf(stderr,
                   "braid: note: OpenMP spins while waiting; if another process is busy, latencies "
                   "with several threads per stream can be many times too high "
                   "(OMP_WAIT_POLICY=passive avoids it)\n");

    const nlohmann::json load_before = loadavg_json();
    nlohmann::json units = nlohmann::json::array();
    double total_ms = 0;
    int64_t measured = 0, cached = 0, repeated = 0, suspect = 0;
    Progress progress("profiling " + m.units.name() + " (units)", m.units.num_units());
    for (size_t i = 0; i < m.units.num_units(); ++i, progress.step()) {
      const UnitId u = make_id<UnitId>(i);
      const cost::CostStats before = profiler.stats();
      const cost::Measurement r = profiler.profile_unit(u);
      const cost::CostStats after = profiler.stats();
      // Where the answer came from: measured now, the disk cache, or an identical earlier unit.
      const char* source = after.measurements > before.measurements ? "measured"
                           : after.cache_hits > before.cache_hits   ? "cache"
                                                                    : "repeat";
      measured += source == std::string_view("measured");
      cached += source == std::string_view("cache");
      repeated += source == std::string_view("repeat");
      suspect += r.suspect;
      const double ms = r.median.count() / 1e3;
      total_ms += ms;
      units.push_back(
          {{"name", m.units.unit(u).name},
           {"signature", m.units.signature(u)},
           {"median_ms", ms},
           {"p10_ms", r.p10.count() / 1e3},
           {"p90_ms", r.p90.count() / 1e3},
           {"gflops_per_s", static_cast<double>(m.units.unit(u).flops) / (r.median.count() * 1e3)},
           {"source", source},
           {"suspect", r.suspect}});
    }
    profiler.flush();
    nlohmann::json out = {
        {"model", m.units.name()},
        {"batch", flags.options.zoo.batch},
        {"threads_per_stream", options.threads_per_stream},
        {"machine", cost::to_json(profiler.machine())},
        {"cache",
         profiler.cache() ? nlohmann::json(profiler.cache()->path().string()) : nlohmann::json()},
        {"units", units},
        {"total",
         {{"sequential_ms", total_ms},
          {"units", m.units.num_units()},
          {"measured", measured},
          {"cached", cached},
          {"repeated", repeated},
          {"suspect", suspect}}},
        {"loadavg", {{"before", load_before}, {"after", loadavg_json()}}}};
    if (json) {
      std::cout << out.dump(2) << "\n";
      return;
    }
    fmt::print("{:<40} {:<24} {:>9} {:>9} {:>9} {:>8}  {}\n", "unit", "signature", "median_ms",
               "p10_ms", "p90_ms", "GFLOP/s", "source");
    for (const auto& u : units)
      fmt::print("{:<40} {:<24} {:>9.4f} {:>9.4f} {:>9.4f} {:>8.1f}  {}{}\n",
                 u["name"].get<std::string>(), u["signature"].get<std::string>(),
                 u["median_ms"].get<double>(), u["p10_ms"].get<double>(), u["p90_ms"].get<double>(),
                 u["gflops_per_s"].get<double>(), u["source"].get<std::string>(),
                 u["suspect"].get<bool>() ? " (suspect: machine busy)" : "");
    fmt::print("\n{}: {} units, sequential estimate {:.3f} ms (sum of unit medians)\n",
               m.units.name(), m.units.num_units(), total_ms);
    fmt::print("measured {}, from cache {}, identical to an earlier unit {}, suspect {}\n",
               measured, cached, repeated, suspect);
    fmt::print("machine: {}\n", cost::fingerprint(profiler.machine()));
    if (profiler.cache()) fmt::print("cache: {}\n", profiler.cache()->path().string());
    fmt::print("load average before {}, after {}\n", loadavg_text(out["loadavg"]["before"]),
               loadavg_text(out["loadavg"]["after"]));
  });
}

}  // namespace braid::cli
