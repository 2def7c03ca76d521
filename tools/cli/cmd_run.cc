#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <iostream>

#include "base/device.h"
#include "base/error.h"
#include "commands.h"
#include "cost/profile_cache.h"
#include "cost_flags.h"
#include "exec/chrome_trace.h"
#include "exec/cpu/cpu_executor.h"
#include "exec/cpu/layout.h"
#include "measure.h"
#include "progress.h"
#include "sched/lower.h"
#include "sched/registry.h"
#include "sched/validate.h"
#include "tune/auto_schedule.h"
#include "tune/planner.h"
#include "tune/tensor_files.h"

namespace braid::cli {

void add_run_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "run",
      "Run a model under a schedule on the CPU, a GPU (cuda:N) or a simulated GPU (sim:NAME) and "
      "time it; without --algo or --schedule, auto picks the schedule by measuring");
  static ModelFlags flags;
  static std::string algo, schedule_path, save_path, trace_path, device_text = "cpu", output_dir;
  static std::vector<std::string> input_specs;
  static sched::ScheduleOptions sched_options;
  static exec::CpuExecutorOptions exec_options;
  static CostFlags cost_flags;
  static int iters = 20, warmup = 3;
  static uint64_t input_seed = 1;
  static bool json = false, graph_flag = false, eager = false, retune = false;
  static PrecisionFlags precision;
  static int auto_rounds = 0;
  add_model_flags(*cmd, flags);
  add_cost_flags(*cmd, cost_flags);
  auto* algo_opt = cmd->add_option(
      "--algo", algo,
      "Schedule with this algorithm; auto (the default) schedules with every single-device "
      "scheduler, runs the best few here and keeps the fastest (docs/schedulers.md)");
  auto* file_opt = cmd->add_option("--schedule", schedule_path, "Run this schedule file");
  algo_opt->excludes(file_opt);
  cmd->add_option("--device", device_text,
                  "Executor: cpu, cuda:N (a GPU), or sim:NAME (the GPU simulator; NAME from "
                  "devices/, e.g. v100, or a .json file; the cost model then defaults to it)")
      ->capture_default_str();
  auto* graph_opt = cmd->add_flag(
      "--graph", graph_flag,
      "Capture the plan once and replay it as a CUDA Graph (the default on cuda:N and sim:NAME)");
  cmd->add_flag("--eager", eager,
                "cuda:N, sim:NAME: launch every kernel from the host instead of replaying a CUDA "
                "Graph (the slow path: one host thread issuing launches is the bottleneck)")
      ->excludes(graph_opt);
  add_precision_flags(*cmd, precision);
  static bool cudnn_benchmark = false;
  cmd->add_flag("--cudnn-benchmark", cudnn_benchmark,
                "cuda:N: time every cuDNN algorithm of each convolution at prepare and keep the "
                "fastest (as PyTorch's cudnn.benchmark; default: cuDNN's heuristic first fit)");
  cmd->add_option("--auto-rounds", auto_rounds,
                  "auto: interleaved timed rounds of its candidates (0: 200 on cuda:N, 20 on "
                  "cpu, 1 on sim)")
      ->check(whole_number_in("the number of rounds", 0, kMaxIters))
      ->capture_default_str();
  cmd->add_flag("--retune", retune, "auto: measure again even when a decision is cached");
  cmd->add_option("--streams", sched_options.max_streams, "Streams the scheduler may use")
      ->check(whole_number_in("the number of streams", 1, kMaxStreams))
      ->capture_default_str();
  add_multi_device_flags(*cmd, sched_options);
  cmd->add_option("--threads-per-stream", exec_options.threads_per_stream,
                  "OpenMP threads per stream")
      ->check(whole_number_in("the threads per stream", 1, kMaxThreads))
      ->capture_default_str();
  cmd->add_option("--spin-us", exec_options.spin_us,
                  "Microseconds a stream spins on an event before it sleeps (0: never spins)")
      ->check(whole_number_in("the spin time in microseconds", 0, kMaxSpinUs))
      ->capture_default_str();
  cmd->add_option_function<std::string>(
      "--layout",
      [](const std::string& name) { exec_options.layout = exec::cpu::parse_layout(name); },
      "Activation layout between kernels: nhwc (default), nchw16c, nchw8c, plain");
  cmd->add_flag("!--concat-copy", exec_options.concat_in_place,
                "Concats copy their inputs (default: producers write into the concat's output)");
  cmd->add_option("--iters", iters, "Timed runs")
      ->check(whole_number_in("the number of timed runs", 1, kMaxIters))
      ->capture_default_str();
  cmd->add_option("--warmup", warmup, "Untimed runs first")
      ->check(whole_number_in("the number of untimed runs", 0, kMaxIters))
      ->capture_default_str();
  cmd->add_option("--input", input_specs,
                  "NAME=FILE.npy: the model input NAME from a NumPy file (repeatable; dtype and "
                  "shape must be the input's); inputs not given are random from --input-seed");
  cmd->add_option("--input-seed", input_seed, "Seed of the random inputs")->capture_default_str();
  cmd->add_option("--output-dir", output_dir,
                  "Write each output as DIR/NAME.npy (characters other than letters, digits, "
                  "_ - . in NAME become _)");
  cmd->add_option("--save-schedule", save_path,
                  "Write the schedule it runs (braid.schedule/1, as `braid schedule -o`) to FILE");
  cmd->add_option("--trace", trace_path, "Write a Chrome trace (JSON) of the timed runs");
  cmd->add_flag("--json", json, "Print latency_ms {median,p10,p90}, peak_bytes, outputs_sha256");
  cmd->callback([] {
    if (algo.empty() && schedule_path.empty()) algo = tune::kAuto;
    if (!algo.empty()) tune::check_algorithm_name(algo);
    const Device device = parse_device(device_text);
    const bool sim = device.is_sim(), gpu = device.is_gpu();
    tune::require_cuda_device(device);  // fail before scheduling when there is no such GPU
    models::LoadedModel m = models::load_model(flags.spec, flags.options);
    BRAID_CHECK(m.graph != nullptr || sim, ErrorCode::kInvalidArgument, "'", flags.spec,
                "' is a weighted DAG: it has no operators to run (simulate it with --device "
                "sim:NAME)");
    BRAID_CHECK(m.graph != nullptr || (input_specs.empty() && output_dir.empty()),
                ErrorCode::kInvalidArgument, "'", flags.spec,
                "' is a weighted DAG: it has no inputs or outputs for --input / --output-dir");
    if (m.declared.upcast())
      fmt::print(stderr, "braid: note: '{}' is a {} model; braid runs it upcast to float32\n",
                 m.units.name(), models::to_string(m.declared.floats));
    // Read before the (maybe long) schedule search, so that a bad file fails at once.
    std::vector<std::vector<float>> inputs;
    if (m.graph) inputs = tune::read_inputs(*m.graph, input_specs, m.declared.inputs);
    for (size_t i = 0; i < inputs.size() && !input_specs.empty(); ++i)
      if (inputs[i].empty())
        fmt::print(stderr, "braid: note: input '{}' not given: random values from --input-seed\n",
                   m.graph->value(m.graph->inputs()[i]).name);
    auto weights = std::make_shared<const ir::Weights>(std::move(m.weights));
    // A CUDA Graph replay is the default wherever there is a GPU, real or simulated.
    const bool graph_replay = graph_flag || (gpu && !eager);
    cost_flags.eager = eager;  // sim:NAME prices kernels as they will launch
    MeasureOptions measure{.device = device,
                           .graph_replay = graph_replay,
                           .precision = precision_of(precision),
                           .measure_conv_algos = cudnn_benchmark,
                           .sim_trace = sim ? trace_path : "",
                           .executor = exec_options,
                           .iters = iters,
                           .warmup = warmup,
                           .input_seed = input_seed,
                           .inputs = std::move(inputs),
                           .keep_outputs = !output_dir.empty()};
    std::optional<Progress> progress;
    if (schedule_path.empty())
      progress.emplace(fmt::format("scheduling {} with {}", m.units.name(), algo));
    const tune::Plan plan = tune::plan_model(m.units, weights,
                                             {.device = device,
                                              .algorithm = algo,
                                              .schedule_file = schedule_path,
                                              .cost = cost_flags,
                                              .schedule_options = sched_options,
                                              .measure = measure,
                                              .auto_rounds = auto_rounds,
                                              .batch = flags.options.zoo.batch,
                                              .cache_dir = cost::ProfileCache::default_dir(),
                                              .reuse_cached = !retune});
    progress.reset();
    const sched::Schedule& s = plan.schedule;
    const std::optional<tune::AutoDecision>& decision = plan.decision;
    if (!save_path.empty()) sched::write_schedule_file(s, m.units, save_path);
    exec::ChromeTrace trace(m.units, fmt::format("{} {}", m.units.name(), s.algorithm),
                            trace_lane_names(m.units, s));
    measure.trace = trace_path.empty() || sim ? nullptr : &trace;
    const Measured r = measure_schedule(m.units, weights, s, measure);
    if (process_rank() != 0) return;  // under mpirun, rank 0 reports
    if (!trace_path.empty() && !sim) trace.write(trace_path);
    std::vector<std::string> files;
    if (!output_dir.empty())
      files = tune::write_outputs(*m.graph, r.outputs, output_dir, m.declared.outputs);
    nlohmann::json outputs = nlohmann::json::array();
    if (m.graph)
      for (size_t i = 0; i < m.graph->outputs().size(); ++i) {
        const ir::Value& v = m.graph->value(m.graph->outputs()[i]);
        outputs.push_back({{"name", v.name}, {"shape", v.type.shape}});
        if (!files.empty()) outputs.back()["file"] = files[i];
      }
    const double median = r.median_ms, p10 = r.p10_ms, p90 = r.p90_ms;
    if (json) {
      nlohmann::json j = {{"model", m.units.name()},
                          {"algorithm", s.algorithm},
                          {"device", launched_by_mpi() ? "mpi x" + std::to_string(s.num_devices)
                                                       : to_string(device)},
                          {"streams", r.lanes},
                          {"threads_per_stream", exec_options.threads_per_stream},
                          {"iters", r.simulated ? 1 : iters},
                          {"latency_ms", {{"median", median}, {"p10", p10}, {"p90", p90}}},
                          {"peak_bytes", r.peak_bytes},
                          {"outputs_sha256", r.outputs_sha256},
                          {"outputs", outputs}};
      if (decision) j["auto"] = tune::to_json(*decision);
      if (s.has_allotment()) j["cores"] = s.cores;  // units at their own threads within them
      if (!plan.cost_model.empty()) j["cost_model"] = plan.cost_model;
      if (plan.predicted_ms) j["predicted_ms"] = *plan.predicted_ms;
      if (gpu) j["graph_replay"] = graph_replay;
      if (gpu) j["precision"] = to_string(measure.precision);
      if (r.simulated) {
        j["simulated"] = true;
        j["kernels"] = r.kernels;
        j["mean_occupancy"] = r.mean_occupancy;
      }
      std::cout << j.dump(2) << "\n";
      return;
    }
    if (decision) fmt::print("auto: {}\n", tune::summary(*decision));
    for (const auto& o : outputs)
      fmt::print("output {} {}{}\n", o["name"].get<std::string>(), o["shape"].dump(),
                 o.contains("file") ? " -> " + o["file"].get<std::string>() : "");
    if (r.simulated) {
      fmt::print(
          "{} {} on {}{} ({} streams, {} kernels): simulated {:.3f} ms, mean occupancy "
          "{:.1f}%\n",
          m.units.name(), s.algorithm, to_string(device), graph_replay ? " (graph replay)" : "",
          r.lanes, r.kernels, median, 100 * r.mean_occupancy);
      return;
    }
    // An allotment gives each unit its threads within the plan's cores.
    const std::string threads =
        s.has_allotment() && !gpu
            ? fmt::format("{} streams, {} cores allotted", r.lanes, s.cores)
            : fmt::format("{} streams x {} threads", r.lanes, exec_options.threads_per_stream);
    fmt::print(
        "{} {} on {}{} ({}): median {:.3f} ms (p10 {:.3f}, p90 {:.3f}), activations {:.1f} MiB\n",
        m.units.name(), s.algorithm, to_string(device),
        gpu ? fmt::format(" {}{}", to_string(measure.precision),
                          graph_replay ? " (graph replay)" : " (eager)")
            : "",
        threads, median, p10, p90, r.peak_bytes / 1048576.0);
  });
}

}  // namespace braid::cli
