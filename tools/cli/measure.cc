#include "measure.h"

#include <fmt/core.h>
#include <openssl/evp.h>

#include <algorithm>
#include <chrono>
#include <random>

#include "base/error.h"
#include "sched/lower.h"
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

std::vector<std::string> trace_lane_names(const ir::UnitGraph& units,
                                          const sched::Schedule& schedule) {
  std::vector<std::string> names;
  for (const auto& lane : sched::lower(units, schedule).lanes)
    names.push_back(fmt::format("device {} stream {}", lane.device, lane.stream));
  return names;
}

Measured measure_on_cpu(const ir::UnitGraph& units, std::shared_ptr<const ir::Weights> weights,
                        const sched::Schedule& schedule, const MeasureOptions& options) {
  const ir::Graph* graph = units.graph();
  BRAID_CHECK(graph != nullptr, ErrorCode::kInvalidArgument, "'", units.name(),
              "' is a weighted DAG: it has no operators to run");
  sched::validate_or_throw(units, schedule);
  const sched::ExecutionPlan plan = sched::lower(units, schedule);
  auto executor = exec::make_cpu_executor(options.executor);
  auto model = executor->prepare({units.graph_ptr(), std::move(weights), &units, &plan});
  auto request = model->new_request();
  std::mt19937_64 rng(options.input_seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (size_t i = 0; i < graph->inputs().size(); ++i) {
    std::vector<float> x(graph->value(graph->inputs()[i]).type.elements());
    for (float& v : x) v = dist(rng);
    model->set_input(*request, i, x);
  }
  for (int i = 0; i < options.warmup; ++i) model->run(*request);
  std::vector<double> ms;
  for (int i = 0; i < options.iters; ++i) {
    auto begin = std::chrono::steady_clock::now();
    model->run(*request, options.trace);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin)
                     .count());
    if (options.trace != nullptr) options.trace->next_run();
  }
  std::vector<std::span<const float>> outputs;
  for (size_t i = 0; i < graph->outputs().size(); ++i)
    outputs.push_back(model->output(*request, i));
  Measured m;
  m.median_ms = percentile(ms, 0.5);
  m.p10_ms = percentile(ms, 0.1);
  m.p90_ms = percentile(ms, 0.9);
  m.peak_bytes = model->activation_bytes();
  m.lanes = plan.lanes.size();
  m.outputs_sha256 = sha256_hex(outputs);
  return m;
}

}  // namespace braid::cli
