// braid load: open-loop traffic at per-model rates against an Open Inference Protocol v2 server
// (braid serve or Triton), reported in perf_analyzer's shape (serve/load_generator.h).
#include <fmt/format.h>

#include <fstream>
#include <iostream>

#include "base/error.h"
#include "commands.h"
#include "runtime/arrivals.h"
#include "serve/load_generator.h"

namespace braid::cli {

void add_load_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "load", "Send open-loop inference traffic at per-model rates to a KServe v2 / Triton server");
  static std::string url = "127.0.0.1:8000", pattern, arrivals = "constant", json_out, csv_out;
  static double duration = 10;
  static int concurrency = 16;
  static uint64_t seed = 1;
  static bool json_tensors = false;
  cmd->add_option("url", url, "HOST:PORT of the server")->capture_default_str();
  cmd->add_option("--pattern", pattern, "MODEL:RATE,... requests per second per model")->required();
  cmd->add_option("--duration", duration,
                  "Seconds of arrivals; requests still waiting for a sender then are not sent "
                  "(counted as such)")
      ->check(number_in("the duration in seconds", kMinDurationS, runtime::kMaxDurationS))
      ->capture_default_str();
  cmd->add_option("--arrivals", arrivals, "constant or poisson")
      ->check(CLI::IsMember({"constant", "poisson"}))
      ->capture_default_str();
  cmd->add_option("--concurrency", concurrency, "Requests outstanding at most (a thread each)")
      ->check(whole_number_in("the concurrency", 1, serve::kMaxConcurrency))
      ->capture_default_str();
  cmd->add_option("--seed", seed, "Arrival phases or draws, and input values")
      ->capture_default_str();
  cmd->add_flag("--json-tensors", json_tensors, "Send tensors as JSON (default: binary)");
  cmd->add_option("--json", json_out, "Write the report (with queue samples) as JSON");
  cmd->add_option("-f,--csv", csv_out, "Write perf_analyzer's CSV");
  cmd->callback([] {
    serve::LoadOptions options{.url = url,
                               .pattern = serve::parse_pattern(pattern),
                               .duration_s = duration,
                               .arrivals = arrivals == "poisson" ? runtime::ArrivalKind::kPoisson
                                                                 : runtime::ArrivalKind::kPeriodic,
                               .concurrency = concurrency,
                               .seed = seed,
                               .binary = !json_tensors};
    const serve::LoadReport report = serve::run_load(options);
    std::cout << serve::perf_analyzer_text(report);
    if (!json_out.empty()) {
      std::ofstream f(json_out);
      BRAID_CHECK(f.good(), ErrorCode::kInvalidArgument, "cannot write '", json_out, "'");
      f << serve::to_json(report).dump(2) << "\n";
    }
    if (!csv_out.empty()) {
      std::ofstream f(csv_out);
      BRAID_CHECK(f.good(), ErrorCode::kInvalidArgument, "cannot write '", csv_out, "'");
      f << serve::perf_analyzer_csv(report);
    }
    // Requests the server failed make the run a failure; a server too slow for the pattern (the
    // unsent ones) is a measurement, warned about in the report.
    if (const uint64_t failed = report.failed(); failed > 0) {
      std::cerr << fmt::format("braid load: {} of {} requests sent failed (see Errors above)\n",
                               failed, report.sent());
      exit_status = 1;
    }
  });
}

}  // namespace braid::cli
