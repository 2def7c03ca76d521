// braid bench: every named scheduler on every named model, side by side in one run: search
// time, predicted latency (the cost model's), measured latency on the device (cpu, cuda:N or
// sim:NAME; the schedules of a model timed interleaved, so drift hits all alike), speed-up over
// sequential and the gap to `optimal` where it is computable. `auto` is a row like the others
// (its search time includes measuring its candidates). Writes a table, JSON, CSV and (with the
// venv's matplotlib) a PNG bar chart.
#include <fmt/core.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include "base/device.h"
#include "base/error.h"
#include "commands.h"
#include "cost_flags.h"
#include "measure.h"
#include "progress.h"
#include "sched/registry.h"
#include "tune/auto_schedule.h"
#include "tune/bench.h"

namespace braid::cli {
namespace {

using Row = tune::BenchRow;

std::string csv_cell(const std::optional<double>& v) {
  return v ? fmt::format("{:.6g}", *v) : "";
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "bench", "Compare schedulers on models: search time, predicted and measured latency");
  static std::vector<std::string> specs;
  static models::LoadOptions load;
  static CostFlags cost_flags;
  static std::string algos = "sequential,greedy", json_path, csv_path, png_path;
  static sched::ScheduleOptions options;
  static MeasureOptions measure{.iters = 10, .warmup = 2};
  static bool json = false, no_measure = false, eager = false;
  static PrecisionFlags precision;
  static std::string device;
  cmd->add_option("MODELS", specs, "Zoo names, .onnx or .dag.json files")->required();
  cmd->add_option("--algos", algos,
                  "Comma-separated schedulers; auto: the one `braid run` picks by measuring")
      ->capture_default_str();
  add_cost_flags(*cmd, cost_flags);
  cmd->add_option("--streams", options.max_streams, "Streams per device (0: unbounded)")
      ->check(whole_number_in("the number of streams", 0, kMaxStreams, " (0: unbounded)"))
      ->capture_default_str();
  add_ios_search_flags(*cmd, options);
  add_multi_device_flags(*cmd, options);
  cmd->add_option("--threads-per-stream", measure.executor.threads_per_stream,
                  "OpenMP threads per stream (executor and cpu cost model)")
      ->check(whole_number_in("the threads per stream", 1, kMaxThreads))
      ->capture_default_str();
  cmd->add_option("--batch", load.zoo.batch, "Batch size")
      ->check(whole_number_in("the batch size", 1, kMaxBatch))
      ->each([](const std::string&) { load.batch_given = true; });
  cmd->add_option("--image-size", load.zoo.image_size, "Input image size (0: each model's default)")
      ->check(whole_number_in("the image size", 0, kMaxImageSize, " (0: each model's default)"));
  add_limit_flags(*cmd, load);
  add_shape_flags(*cmd, load.inputs);
  cmd->add_option("--iters", measure.iters, "Timed runs per schedule")
      ->check(whole_number_in("the number of timed runs", 1, kMaxIters))
      ->capture_default_str();
  cmd->add_option("--warmup", measure.warmup, "Untimed runs first")
      ->check(whole_number_in("the number of untimed runs", 0, kMaxIters))
      ->capture_default_str();
  cmd->add_flag("--no-measure", no_measure, "Predict only: do not run the schedules");
  cmd->add_option("--device", device,
                  "Run the schedules on: cpu, cuda:N (a GPU; the cost model then defaults to it) "
                  "or sim:NAME (default: the --cost sim device, else cpu)");
  auto* graph_opt =
      cmd->add_flag("--graph", measure.graph_replay,
                    "Replay the plan as a CUDA Graph (the default on cuda:N and sim:NAME)");
  cmd->add_flag("--eager", eager,
                "cuda:N, sim:NAME: launch every kernel from the host instead of replaying a CUDA "
                "Graph (the slow path)")
      ->excludes(graph_opt);
  add_precision_flags(*cmd, precision);
  static bool cudnn_benchmark = false;
  cmd->add_flag("--cudnn-benchmark", cudnn_benchmark,
                "cuda:N: time every cuDNN algorithm of each convolution at prepare and keep the "
                "fastest (as PyTorch's cudnn.benchmark; default: cuDNN's heuristic first fit)");
  cmd->add_flag("--json", json, "Print the rows as JSON");
  cmd->add_option("--json-file", json_path, "Also write the JSON rows here");
  cmd->add_option("--csv", csv_path, "Also write the rows as CSV");
  cmd->add_option("--png", png_path,
                  "Also draw a bar chart (needs --csv; runs scripts/plot_bench.py in .venv)");
  cmd->callback([] {
    const std::vector<std::string> names = nonempty(split(algos, ','));
    BRAID_CHECK(!names.empty(), ErrorCode::kInvalidArgument, "--algos is empty");
    for (const std::string& n : names) tune::check_algorithm_name(n);  // unknown names fail now
    // The device runs the schedules; without --device, the --cost sim device, else the CPU.
    measure.device = !device.empty()                                  ? parse_device(device)
                     : cost_flags.model && cost_flags.model->is_sim() ? cost_flags.model->device
                                                                      : Device::cpu();
    const bool simulated = measure.device.is_sim();
    tune::require_cuda_device(measure.device);  // fail before scheduling when there is no GPU
    // A CUDA Graph replay is the default wherever there is a GPU, real or simulated.
    if (measure.device.is_gpu() && !eager) measure.graph_replay = true;
    measure.precision = precision_of(precision);
    measure.measure_conv_algos = cudnn_benchmark;
    cost_flags.eager = eager;
    if (simulated) measure.iters = 1, measure.warmup = 0;  // deterministic
    std::unique_ptr<Progress> progress;
    const std::vector<Row> rows = tune::bench(specs, {.algorithms = names,
                                                      .schedule = options,
                                                      .cost = cost_flags,
                                                      .measure = measure,
                                                      .load = load,
                                                      .run = !no_measure,
                                                      .on_step = [&](const std::string& what) {
                                                        progress.reset();
                                                        progress = std::make_unique<Progress>(what);
                                                      }});
    progress.reset();

    nlohmann::json out = nlohmann::json::array();
    for (const Row& r : rows) out.push_back(to_json(r));
    if (!json_path.empty()) std::ofstream(json_path) << out.dump(2) << "\n";
    if (!csv_path.empty()) {
      std::ofstream csv(csv_path);
      BRAID_CHECK(csv.good(), ErrorCode::kInvalidArgument, "cannot write '", csv_path, "'");
      csv << "model,algorithm,search_ms,predicted_ms,predicted_speedup,measured_ms,measured_p10_ms,"
             "measured_p90_ms,measured_speedup,gap_to_optimal,streams,transitions,outputs_match,"
             "bound_cost_model,critical_path_ms,work_ms,measured_over_bound,error\n";
      for (const Row& r : rows) {
        auto measured = [&](double Measured::*field) {
          return r.measured ? std::optional<double>((*r.measured).*field) : std::nullopt;
        };
        csv << fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{:.6g},{},{},\"{}\"\n",
                           r.model, r.algorithm, r.error ? "" : fmt::format("{:.6g}", r.search_ms),
                           r.error ? "" : fmt::format("{:.6g}", r.predicted_ms),
                           r.error ? "" : fmt::format("{:.6g}", r.predicted_speedup),
                           csv_cell(measured(&Measured::median_ms)),
                           csv_cell(measured(&Measured::p10_ms)),
                           csv_cell(measured(&Measured::p90_ms)), csv_cell(r.measured_speedup),
                           csv_cell(r.gap_to_optimal), r.streams, r.transitions,
                           r.measured ? (r.outputs_match ? "yes" : "NO") : "", r.bounds.cost_model,
                           r.bounds.critical_path_ms, csv_cell(r.bounds.work_ms),
                           csv_cell(r.measured_over_bound), r.error ? *r.error : "");
      }
    }
    if (!png_path.empty()) {
      BRAID_CHECK(!csv_path.empty(), ErrorCode::kInvalidArgument, "--png needs --csv");
      const std::string command =
          fmt::format("{}/.venv/bin/python {}/scripts/plot_bench.py '{}' '{}'", BRAID_SOURCE_DIR,
                      BRAID_SOURCE_DIR, csv_path, png_path);
      BRAID_CHECK(std::system(command.c_str()) == 0, ErrorCode::kInternal,
                  "drawing the chart failed: ", command);
    }
    if (json) {
      std::cout << out.dump(2) << "\n";
      return;
    }
    fmt::print("{:<16} {:<14} {:>10} {:>12} {:>8} {:>12} {:>8} {:>8} {:>8} {:>7} {}\n", "model",
               "algorithm", "search ms", "predicted ms", "x seq", "measured ms", "x seq", "vs opt",
               "x bound", "streams", "outputs");
    std::string bounded;  // the model whose bounds were printed last
    for (const Row& r : rows) {
      if (r.model != bounded) {
        bounded = r.model;
        const tune::Bounds& b = r.bounds;
        fmt::print("{:<16} bounds under {}: critical path {:.3f} ms, work {} -> {:.3f} ms\n",
                   r.model, b.cost_model, b.critical_path_ms,
                   b.work_ms ? fmt::format("{:.3f} ms over {:g} lanes", *b.work_ms, b.lanes)
                             : std::string("unbounded"),
                   b.max_ms());
      }
      if (r.error) {
        fmt::print("{:<16} {:<14} error: {}\n", r.model, r.algorithm, *r.error);
        continue;
      }
      fmt::print(
          "{:<16} {:<14} {:>10.3f} {:>12.3f} {:>8.2f} {:>12} {:>8} {:>8} {:>8.2f} {:>7} {}\n",
          r.model, r.algorithm, r.search_ms, r.predicted_ms, r.predicted_speedup,
          r.measured ? fmt::format("{:.3f}", r.measured->median_ms) : "-",
          r.measured_speedup ? fmt::format("{:.2f}", *r.measured_speedup) : "-",
          r.gap_to_optimal ? fmt::format("{:+.1f}%", 100 * *r.gap_to_optimal) : "-",
          r.measured_over_bound.value_or(r.predicted_over_bound), r.streams,
          r.measured ? (r.outputs_match ? "identical" : "DIFFERENT") : "-");
    }
  });
}

}  // namespace braid::cli
