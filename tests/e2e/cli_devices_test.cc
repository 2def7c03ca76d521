// End-to-end tests of the braid CLI on devices: the simulated GPU (run, schedule, bench,
// calibrate), several simulated devices, a real GPU where there is one (else "no CUDA device"),
// and `auto`'s measured choice and its reuse.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "test_env.h"

namespace braid {
namespace {

using testing::cli;
using testing::golden;
using testing::run_command;

// The GPU simulator through the CLI (issue 5's acceptance commands, on the small model).
TEST(Cli, SimulatedGpuRunScheduleAndBench) {
  auto sched = run_command(cli() + " schedule squeezenet --algo ios --cost sim:v100 --json");
  ASSERT_EQ(sched.exit_code, 0) << sched.err;
  nlohmann::json s = nlohmann::json::parse(sched.out);
  EXPECT_EQ(s["cost"], "sim:v100");
  EXPECT_GT(s["predicted_ms"].get<double>(), 0);
  // --eager prices every kernel as a host launch: the plan is predicted slower than replayed.
  auto eager_sched =
      run_command(cli() + " schedule squeezenet --algo ios --cost sim:v100 --eager --json");
  ASSERT_EQ(eager_sched.exit_code, 0) << eager_sched.err;
  nlohmann::json es = nlohmann::json::parse(eager_sched.out);
  EXPECT_EQ(es["cost"], "sim:v100 eager");
  EXPECT_GT(es["predicted_ms"].get<double>(), s["predicted_ms"].get<double>());

  const auto trace = (testing::scratch_dir() / "sim_trace.json").string();
  auto run =
      run_command(cli() + " run squeezenet --device sim:v100 --algo lios --json --trace " + trace);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  nlohmann::json r = nlohmann::json::parse(run.out);
  EXPECT_TRUE(r["simulated"].get<bool>());
  EXPECT_GT(r["latency_ms"]["median"].get<double>(), 0);
  EXPECT_GT(r["kernels"].get<int>(), 0);
  // The values are computed for real: the same outputs as the CPU executor's.
  auto cpu = run_command(cli() + " run squeezenet --algo sequential --cost roofline --iters 1 " +
                         "--warmup 0 --json");
  ASSERT_EQ(cpu.exit_code, 0) << cpu.err;
  EXPECT_EQ(r["outputs_sha256"], nlohmann::json::parse(cpu.out)["outputs_sha256"]);
  // A kernel-level Chrome trace with occupancy counters.
  std::ifstream in(trace);
  nlohmann::json t = nlohmann::json::parse(in);
  size_t slices = 0, counters = 0;
  for (const auto& e : t["traceEvents"]) {
    slices += e["ph"] == "X";
    counters += e["ph"] == "C";
  }
  EXPECT_EQ(slices, r["kernels"].get<size_t>());
  EXPECT_GT(counters, 0u);

  // Graph replay is the default; eager launches (--eager) are slower on the same schedule.
  EXPECT_TRUE(r["graph_replay"].get<bool>());
  auto eager = run_command(cli() + " run squeezenet --device sim:v100 --algo lios --eager --json");
  ASSERT_EQ(eager.exit_code, 0) << eager.err;
  nlohmann::json e = nlohmann::json::parse(eager.out);
  EXPECT_FALSE(e["graph_replay"].get<bool>());
  EXPECT_GT(e["latency_ms"]["median"].get<double>(), r["latency_ms"]["median"].get<double>());
  auto graph = run_command(cli() + " run squeezenet --device sim:v100 --algo lios --graph --json");
  ASSERT_EQ(graph.exit_code, 0) << graph.err;  // --graph is still accepted: the default
  EXPECT_DOUBLE_EQ(nlohmann::json::parse(graph.out)["latency_ms"]["median"].get<double>(),
                   r["latency_ms"]["median"].get<double>());

  auto bench = run_command(cli() + " bench squeezenet " + golden("diamond.dag.json") +
                           " --algos sequential,lios --cost sim:v100 --json");
  ASSERT_EQ(bench.exit_code, 0) << bench.err;
  for (const auto& row : nlohmann::json::parse(bench.out)) {
    EXPECT_GT(row["measured_ms"]["median"].get<double>(), 0) << row;  // simulated, DAGs too
    EXPECT_GT(row["measured_speedup"].get<double>(), 0) << row;
  }
}

// HIOS on two devices: a schedule that validates, and a run on two simulated GPUs whose values
// equal the single-device run's.
TEST(Cli, MultiDeviceScheduleValidatesAndRunsOnSimulatedGpus) {
  const auto path = (testing::scratch_dir() / "hios.json").string();
  auto sched = run_command(cli() + " schedule " + golden("lios_fig3.dag.json") +
                           " --algo hios-lp --devices 2 --json -o " + path);
  ASSERT_EQ(sched.exit_code, 0) << sched.err;
  auto v = run_command(cli() + " validate " + golden("lios_fig3.dag.json") + " " + path);
  EXPECT_EQ(v.exit_code, 0) << v.err;
  nlohmann::json runs[2];
  int i = 0;
  for (const char* algo : {"sequential", "hios-mr"}) {
    // "a40x2": a set of two A40s (as --device sim:a40 --devices 2).
    auto r = run_command(cli() + " run squeezenet --device sim:a40x2 --algo " + algo + " --json");
    ASSERT_EQ(r.exit_code, 0) << algo << ": " << r.err;
    runs[i++] = nlohmann::json::parse(r.out);
  }
  EXPECT_EQ(runs[0]["outputs_sha256"], runs[1]["outputs_sha256"]);
  // The CPU executor runs one device: a two-device schedule is refused there, clearly.
  auto cpu = run_command(cli() + " run squeezenet --algo hios-lp --devices 2 --cost roofline");
  EXPECT_EQ(cpu.exit_code, 2);
  EXPECT_NE(cpu.err.find("devices"), std::string::npos) << cpu.err;
}

TEST(Cli, SimulatedDeviceErrorsNameTheDevice) {
  auto unknown = run_command(cli() + " run squeezenet --device sim:no_such_gpu --algo sequential");
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("no_such_gpu"), std::string::npos) << unknown.err;
  EXPECT_NE(unknown.err.find("v100"), std::string::npos) << unknown.err;  // lists the known ones
  auto cost = run_command(cli() + " schedule squeezenet --algo ios --cost sim:nope");
  EXPECT_EQ(cost.exit_code, 2);
  EXPECT_NE(cost.err.find("nope"), std::string::npos) << cost.err;
  auto graph_on_cpu =
      run_command(cli() + " run squeezenet --algo sequential --cost roofline --graph");
  EXPECT_EQ(graph_on_cpu.exit_code, 2);
  EXPECT_NE(graph_on_cpu.err.find("--graph"), std::string::npos) << graph_on_cpu.err;
}

// Issue 6's acceptance command: runs on a GPU machine, fails cleanly everywhere else.
TEST(Cli, CudaRunWorksOrSaysNoCudaDevice) {
  auto r = run_command(cli() + " run squeezenet --device cuda:0 --algo ios --graph --json");
  if (r.exit_code == 0) {
    nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["device"], "cuda:0");
    EXPECT_GT(j["latency_ms"]["median"].get<double>(), 0);
    return;
  }
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("no CUDA device"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

// bench --device cuda:N (issue 14): the scheduler table of a GPU, or a clean refusal.
TEST(Cli, CudaBenchWorksOrSaysNoCudaDevice) {
  auto r = run_command(cli() + " bench squeezenet --device cuda:0 --algos sequential,lios --json");
  if (r.exit_code == 0) {
    for (const auto& row : nlohmann::json::parse(r.out)) {
      EXPECT_GT(row["predicted_ms"].get<double>(), 0) << row;
      EXPECT_GT(row["measured_ms"]["median"].get<double>(), 0) << row;
    }
    return;
  }
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("no CUDA device"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

// `braid run` with neither --algo nor --schedule is auto: it measures its candidates, says
// which won and by how much; a second run reuses the cached decision and says so.
TEST(Cli, RunDefaultsToAutoAndReusesItsDecision) {
  const std::string env =
      "BRAID_CACHE_DIR=" + (testing::scratch_dir() / "auto_cache").string() + " ";
  auto first = run_command(env + cli() + " run squeezenet --iters 2");
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_NE(first.out.find("auto: "), std::string::npos) << first.out;
  EXPECT_NE(first.out.find("over sequential; candidates: "), std::string::npos) << first.out;
  EXPECT_EQ(first.out.find("cached"), std::string::npos) << first.out;
  auto cached = run_command(env + cli() + " run squeezenet --iters 2");
  ASSERT_EQ(cached.exit_code, 0) << cached.err;
  EXPECT_NE(cached.out.find("auto: "), std::string::npos) << cached.out;
  EXPECT_NE(cached.out.find("cached decision"), std::string::npos) << cached.out;
  auto second = run_command(env + cli() + " run squeezenet --iters 2 --json");
  ASSERT_EQ(second.exit_code, 0) << second.err;
  nlohmann::json j = nlohmann::json::parse(second.out);
  ASSERT_TRUE(j.contains("auto")) << j;
  EXPECT_TRUE(j["auto"]["cached"].get<bool>()) << j["auto"];
  // The winner ran: the fastest intra-operator run, unless another candidate measured more than
  // 5% faster than it (then the fastest of all).
  const std::string winner = j["auto"]["winner"];
  double best = 1e300, best_intra = 1e300, winner_ms = 0;
  bool winner_intra = false;
  for (const auto& c : j["auto"]["candidates"]) {
    if (!c.contains("measured_ms")) {
      EXPECT_TRUE(c.contains("skipped")) << c;
      continue;
    }
    const double ms = c["measured_ms"]["median"].get<double>();
    const bool intra = c.value("intra_operator", false);
    best = std::min(best, ms);
    if (intra) best_intra = std::min(best_intra, ms);
    if (c["algorithm"] == winner) winner_ms = ms, winner_intra = intra;
  }
  if (winner_intra) {
    EXPECT_DOUBLE_EQ(winner_ms, best_intra) << j["auto"];
    EXPECT_GE(best, 0.95 * winner_ms) << j["auto"];
  } else {
    EXPECT_DOUBLE_EQ(winner_ms, best) << j["auto"];
    EXPECT_LE(winner_ms, 0.95 * best_intra) << j["auto"];
  }
  EXPECT_GT(j["latency_ms"]["median"].get<double>(), 0);
}

TEST(Cli, BenchHasAnAutoRow) {
  auto r = run_command(cli() + " bench squeezenet --image-size 64 --algos sequential,auto " +
                       "--cost roofline --iters 2 --warmup 1 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json rows = nlohmann::json::parse(r.out);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1]["algorithm"].get<std::string>().rfind("auto (", 0), 0u) << rows[1];
  EXPECT_TRUE(rows[1]["outputs_match_sequential"].get<bool>()) << rows[1];
}

TEST(Cli, CalibrateFitsTheSimulatorsOwnMeasurements) {
  const auto measured = (testing::scratch_dir() / "calibration.json").string();
  const auto out = (testing::scratch_dir() / "v100_calibrated.json").string();
  auto emit = run_command(cli() + " calibrate v100 --emit-simulated " + measured);
  ASSERT_EQ(emit.exit_code, 0) << emit.err;
  auto fit = run_command(cli() + " calibrate v100 " + measured + " -o " + out);
  ASSERT_EQ(fit.exit_code, 0) << fit.err;
  EXPECT_NE(fit.out.find("launch_us 5.000"), std::string::npos) << fit.out;
  auto run = run_command(cli() + " run squeezenet --device sim:" + out + " --algo sequential");
  EXPECT_EQ(run.exit_code, 0) << run.err;
}

}  // namespace
}  // namespace braid
