#include <fmt/core.h>
#include <openssl/evp.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <random>

#include "base/error.h"
#include "commands.h"
#include "exec/chrome_trace.h"
#include "exec/cpu/cpu_executor.h"
#include "exec/cpu/layout.h"
#include "sched/lower.h"
#include "sched/registry.h"
#include "sched/validate.h"

namespace braid::cli {
namespace {

std::string sha256_hex(const std::vector<std::span<const float>>& outputs) {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr);
  for (auto out : outputs) EVP_DigestUpdate(ctx, out.data(), out.size_bytes());
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx, digest, &len);
  EVP_MD_CTX_free(ctx);
  std::string hex;
  for (unsigned int i = 0; i < len; ++i) hex += fmt::format("{:02x}", digest[i]);
  return hex;
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  double pos = p * (v.size() - 1);
  size_t lo = static_cast<size_t>(pos);
  size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - lo);
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("run", "Run a model on the CPU under a schedule and time it");
  static ModelFlags flags;
  static std::string algo, schedule_path, trace_path, device = "cpu";
  static sched::ScheduleOptions sched_options;
  static exec::CpuExecutorOptions exec_options;
  static int iters = 20, warmup = 3;
  static uint64_t input_seed = 1;
  static bool json = false;
  add_model_flags(*cmd, flags);
  auto* algo_opt = cmd->add_option("--algo", algo, "Schedule with this algorithm");
  auto* file_opt = cmd->add_option("--schedule", schedule_path, "Run this schedule file");
  algo_opt->excludes(file_opt);
  cmd->add_option("--device", device, "Executor: cpu")->capture_default_str();
  cmd->add_option("--streams", sched_options.max_streams, "Streams the scheduler may use")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--threads-per-stream", exec_options.threads_per_stream,
                  "OpenMP threads per stream")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--spin-us", exec_options.spin_us,
                  "Microseconds a stream spins on an event before it sleeps (0: never spins)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option_function<std::string>(
      "--layout",
      [](const std::string& name) { exec_options.layout = exec::cpu::parse_layout(name); },
      "Activation layout between kernels: nhwc (default), nchw16c, nchw8c, plain");
  cmd->add_flag("!--concat-copy", exec_options.concat_in_place,
                "Concats copy their inputs (default: producers write into the concat's output)");
  cmd->add_option("--iters", iters, "Timed runs")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--warmup", warmup, "Untimed runs first")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--input-seed", input_seed, "Seed of the random inputs")->capture_default_str();
  cmd->add_option("--trace", trace_path, "Write a Chrome trace (JSON) of the timed runs");
  cmd->add_flag("--json", json, "Print latency_ms {median,p10,p90}, peak_bytes, outputs_sha256");
  cmd->callback([] {
    BRAID_CHECK(!algo.empty() || !schedule_path.empty(), ErrorCode::kInvalidArgument,
                "give --algo NAME or --schedule FILE");
    BRAID_CHECK(device == "cpu", ErrorCode::kNotFound, "unknown device '", device,
                "' (available: cpu)");
    models::LoadedModel m = models::load_model(flags.spec, flags.options);
    BRAID_CHECK(m.graph != nullptr, ErrorCode::kInvalidArgument, "'", flags.spec,
                "' is a weighted DAG: it has no operators to run");
    sched::Schedule s = schedule_path.empty()
                            ? sched::make_scheduler(algo, sched_options)->schedule(m.units)
                            : sched::read_schedule_file(schedule_path, m.units);
    sched::validate_or_throw(m.units, s);
    sched::ExecutionPlan plan = sched::lower(m.units, s);
    auto weights = std::make_shared<const ir::Weights>(std::move(m.weights));
    auto executor = exec::make_cpu_executor(exec_options);
    auto model = executor->prepare({m.graph, weights, &m.units, &plan});
    auto request = model->new_request();
    std::mt19937_64 rng(input_seed);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (size_t i = 0; i < m.graph->inputs().size(); ++i) {
      std::vector<float> x(m.graph->value(m.graph->inputs()[i]).type.elements());
      for (float& v : x) v = dist(rng);
      model->set_input(*request, i, x);
    }
    for (int i = 0; i < warmup; ++i) model->run(*request);
    std::vector<std::string> lane_names;
    for (const auto& lane : plan.lanes)
      lane_names.push_back(fmt::format("device {} stream {}", lane.device, lane.stream));
    exec::ChromeTrace trace(m.units, fmt::format("{} {}", m.units.name(), s.algorithm), lane_names);
    std::vector<double> ms;
    for (int i = 0; i < iters; ++i) {
      auto begin = std::chrono::steady_clock::now();
      model->run(*request, trace_path.empty() ? nullptr : &trace);
      ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin)
              .count());
      trace.next_run();
    }
    std::vector<std::span<const float>> outputs;
    for (size_t i = 0; i < m.graph->outputs().size(); ++i)
      outputs.push_back(model->output(*request, i));
    if (!trace_path.empty()) trace.write(trace_path);
    const double median = percentile(ms, 0.5), p10 = percentile(ms, 0.1), p90 = percentile(ms, 0.9);
    if (json) {
      nlohmann::json j = {{"model", m.units.name()},
                          {"algorithm", s.algorithm},
                          {"device", device},
                          {"streams", plan.lanes.size()},
                          {"threads_per_stream", exec_options.threads_per_stream},
                          {"iters", iters},
                          {"latency_ms", {{"median", median}, {"p10", p10}, {"p90", p90}}},
                          {"peak_bytes", model->activation_bytes()},
                          {"outputs_sha256", sha256_hex(outputs)}};
      std::cout << j.dump(2) << "\n";
      return;
    }
    fmt::print(
        "{} {} on {} ({} streams x {} threads): median {:.3f} ms (p10 {:.3f}, p90 {:.3f}), "
        "activations {:.1f} MiB\n",
        m.units.name(), s.algorithm, device, plan.lanes.size(), exec_options.threads_per_stream,
        median, p10, p90, model->activation_bytes() / 1048576.0);
  });
}

}  // namespace braid::cli
