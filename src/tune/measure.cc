#include "tune/measure.h"

#include <fmt/core.h>
#include <openssl/evp.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <random>
#include <sstream>

#include "base/error.h"
#include "base/parse.h"
#include "cost/machine.h"
#include "exec/cuda/cuda_executor.h"
#include "exec/sim/sim_executor.h"
#ifdef BRAID_WITH_MPI
#include "exec/mpi/mpi_executor.h"
#endif
#include "sched/lower.h"
#include "sched/validate.h"
#include "sim/device_spec.h"

namespace braid::tune {
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

std::vector<float> random_input(const ir::Graph& graph, size_t i, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> x(graph.value(graph.inputs()[i]).type.elements());
  for (float& v : x) v = dist(rng);
  return x;
}

// The given inputs, the others random (drawn for every input, so that giving one input leaves
// the random values of the others as they were).
void set_inputs(const ir::Graph& graph, const exec::PreparedModel& model, exec::Request& request,
                const MeasureOptions& options) {
  std::mt19937_64 rng(options.input_seed);
  for (size_t i = 0; i < graph.inputs().size(); ++i) {
    std::vector<float> x = random_input(graph, i, rng);
    const bool given = i < options.inputs.size() && !options.inputs[i].empty();
    if (given)
      BRAID_ASSERT(options.inputs[i].size() == x.size(), "input ", i, " has the wrong size");
    model.set_input(request, i, given ? options.inputs[i] : x);
  }
}

Measured simulate_schedule(const ir::UnitGraph& units, std::shared_ptr<const ir::Weights> weights,
                           const sched::Schedule& schedule, const MeasureOptions& options) {
  const std::string& device = options.device.sim;
  const sched::ExecutionPlan plan = sched::lower(units, schedule);
  exec::SimExecutorOptions sim_options;
  sim_options.devices.assign(schedule.num_devices,
                             sim::with_precision(sim::load_device(device), options.precision));
  sim_options.graph_replay = options.graph_replay;
  sim_options.compute_values = units.graph() != nullptr;
  sim_options.record_timeline = true;
  sim_options.cpu = options.executor;
  auto executor = exec::make_sim_executor(std::move(sim_options));
  auto model = executor->prepare({units.graph_ptr(), std::move(weights), &units, &plan});
  auto request = model->new_request();
  if (const ir::Graph* graph = units.graph()) set_inputs(*graph, *model, *request, options);
  model->run(*request, options.trace);
  const sim::Result& r = *exec::last_simulation(*request);
  if (!options.sim_trace.empty())
    exec::write_sim_trace(*request, units,
                          fmt::format("{} {} on sim:{}", units.name(), schedule.algorithm, device),
                          options.sim_trace);
  Measured m;
  m.median_ms = m.p10_ms = m.p90_ms = r.makespan_us / 1e3;
  m.peak_bytes = model->activation_bytes();
  m.lanes = plan.lanes.size();
  m.simulated = true;
  m.kernels = exec::last_program(*request)->kernels.size();
  m.mean_occupancy = sim::mean_occupancy(r);
  if (const ir::Graph* graph = units.graph()) {
    std::vector<std::span<const float>> outputs;
    for (size_t i = 0; i < graph->outputs().size(); ++i)
      outputs.push_back(model->output(*request, i));
    m.outputs_sha256 = sha256_hex(outputs);
    if (options.keep_outputs)
      for (auto out : outputs) m.outputs.emplace_back(out.begin(), out.end());
  }
  return m;
}

#ifdef BRAID_WITH_MPI
std::unique_ptr<exec::Executor> make_mpi_executor(const exec::CpuExecutorOptions& cpu) {
  return exec::make_mpi_executor({.cpu = cpu});
}
void barrier() {
  exec::mpi_barrier();
}
#else
std::unique_ptr<exec::Executor> make_mpi_executor(const exec::CpuExecutorOptions&) {
  BRAID_THROW(ErrorCode::kNotFound, "braid was built without MPI");
}
void barrier() {}
#endif

}  // namespace

bool launched_by_mpi() {
#ifdef BRAID_WITH_MPI
  if (!exec::launched_by_mpirun()) return false;
  exec::mpi_init();
  return exec::mpi_size() > 1;
#else
  return false;
#endif
}

int process_rank() {
#ifdef BRAID_WITH_MPI
  return exec::mpi_rank();
#else
  return 0;
#endif
}

std::vector<std::string> trace_lane_names(const ir::UnitGraph& units,
                                          const sched::Schedule& schedule) {
  std::vector<std::string> names;
  for (const auto& lane : sched::lower(units, schedule).lanes)
    names.push_back(fmt::format("device {} stream {}", lane.device, lane.stream));
  return names;
}

namespace {

// The executor a real (not simulated) device runs on; throws for an unknown device or a
// schedule it cannot run.
std::unique_ptr<exec::Executor> make_executor(const ir::UnitGraph& units,
                                              std::span<const sched::Schedule> schedules,
                                              const MeasureOptions& options) {
  const bool gpu = options.device.is_cuda();
  BRAID_CHECK(options.precision == Precision::kFp32 || gpu, ErrorCode::kInvalidArgument,
              "--precision ", to_string(options.precision),
              " needs a GPU device (cuda:N, or sim:NAME); the CPU executor computes FP32");
  BRAID_CHECK(!options.graph_replay || gpu, ErrorCode::kInvalidArgument,
              "--graph (CUDA Graph replay) needs a GPU device (cuda:N, or sim:NAME)");
  BRAID_CHECK(units.graph() != nullptr, ErrorCode::kInvalidArgument, "'", units.name(),
              "' is a weighted DAG: it has no operators to run");
  const bool mpi = launched_by_mpi();
  for (const sched::Schedule& schedule : schedules)
    BRAID_CHECK(schedule.num_devices == 1 || mpi, ErrorCode::kInvalidArgument, "the schedule uses ",
                schedule.num_devices,
                " devices; one executor runs one (use mpirun -np N, or --device sim:NAME)");
  BRAID_CHECK(!mpi || !gpu, ErrorCode::kUnsupported,
              "under mpirun each rank runs the CPU executor (cuda:N ranks are not supported yet)");
  if (gpu)
    return exec::make_cuda_executor({.device = options.device.index,
                                     .graph = options.graph_replay,
                                     .precision = options.precision,
                                     .measure_conv_algos = options.measure_conv_algos});
  if (mpi) return make_mpi_executor(options.executor);
  return exec::make_cpu_executor(options.executor);
}

// One schedule prepared on an executor, with its request and inputs set: run() times one
// inference.
struct Prepared {
  sched::ExecutionPlan plan;
  std::unique_ptr<exec::PreparedModel> model;
  std::unique_ptr<exec::Request> request;
  std::vector<double> ms;

  double run(bool mpi, exec::ChromeTrace* trace) {
    if (mpi) barrier();  // ranks start each timed inference together
    const auto begin = std::chrono::steady_clock::now();
    model->run(*request, trace);
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin)
        .count();
  }
};

Measured summarize(const ir::Graph& graph, const Prepared& p, bool keep_outputs) {
  std::vector<std::span<const float>> outputs;
  for (size_t i = 0; i < graph.outputs().size(); ++i)
    outputs.push_back(p.model->output(*p.request, i));
  Measured m;
  m.median_ms = percentile(p.ms, 0.5);
  m.p10_ms = percentile(p.ms, 0.1);
  m.p90_ms = percentile(p.ms, 0.9);
  m.peak_bytes = p.model->activation_bytes();
  m.lanes = p.plan.lanes.size();
  m.outputs_sha256 = sha256_hex(outputs);
  if (keep_outputs)
    for (auto out : outputs) m.outputs.emplace_back(out.begin(), out.end());
  return m;
}

}  // namespace

std::vector<Measured> measure_interleaved(const ir::UnitGraph& units,
                                          std::shared_ptr<const ir::Weights> weights,
                                          std::span<const sched::Schedule> schedules,
                                          const MeasureOptions& options) {
  for (const sched::Schedule& schedule : schedules) sched::validate_or_throw(units, schedule);
  std::vector<Measured> results;
  if (options.device.is_sim()) {
    for (const sched::Schedule& schedule : schedules)
      results.push_back(simulate_schedule(units, weights, schedule, options));
    return results;
  }
  auto executor = make_executor(units, schedules, options);
  const bool mpi = launched_by_mpi();
  const ir::Graph& graph = *units.graph();
  // Sized once: a prepared model keeps a pointer to its plan.
  std::vector<Prepared> prepared(schedules.size());
  for (size_t k = 0; k < schedules.size(); ++k) {
    Prepared& p = prepared[k];
    p.plan = sched::lower(units, schedules[k]);
    p.model = executor->prepare({units.graph_ptr(), weights, &units, &p.plan});
    p.request = p.model->new_request();
    set_inputs(graph, *p.model, *p.request, options);
    for (int i = 0; i < options.warmup; ++i) p.model->run(*p.request);
  }
  for (int round = 0; round < options.iters; ++round) {
    for (Prepared& p : prepared) {
      p.ms.push_back(p.run(mpi, options.trace));
      if (options.trace != nullptr) options.trace->next_run();
    }
  }
  for (const Prepared& p : prepared) results.push_back(summarize(graph, p, options.keep_outputs));
  return results;
}

Measured measure_schedule(const ir::UnitGraph& units, std::shared_ptr<const ir::Weights> weights,
                          const sched::Schedule& schedule, const MeasureOptions& options) {
  return measure_interleaved(units, std::move(weights), std::span(&schedule, 1), options).front();
}

void require_cuda_device(const Device& device) {
  if (device.is_cuda()) exec::check_cuda_device(device.index);
}

std::string describe_device(const Device& device) {
  if (device.is_cpu()) return cost::fingerprint(cost::this_machine());
  if (device.is_cuda()) {
    require_cuda_device(device);
    return exec::cuda_device_description(device.index);
  }
  // The file's digest and the model's revision: a refit device (braid calibrate) or simulator
  // decides afresh.
  std::ifstream in(sim::device_path(device.sim));
  std::stringstream text;
  text << in.rdbuf();
  return fmt::format("sim:{} | {} | model {}", device.sim,
                     cost::sha256_hex(text.str()).substr(0, 16), sim::kModelRevision);
}

}  // namespace braid::tune
