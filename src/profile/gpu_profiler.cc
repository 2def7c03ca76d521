#include "profile/gpu_profiler.h"

#include <algorithm>

#include "base/error.h"
#include "cost/machine.h"
#include "cost/stage_key.h"
#include "exec/cuda/cuda_executor.h"
#include "profile/stage_runner.h"

namespace braid::profile {

GpuProfiler::GpuProfiler(const ir::UnitGraph& units, std::shared_ptr<const ir::Weights> weights,
                         GpuProfilerOptions options)
    : cost::CostModel(units),
      weights_(std::move(weights)),
      options_(std::move(options)),
      name_("cuda:" + std::to_string(options_.device)) {
  BRAID_CHECK(units.graph() != nullptr, ErrorCode::kInvalidArgument, "'", units.name(),
              "' is a weighted DAG: it has no operators to profile");
  BRAID_CHECK(weights_ != nullptr, ErrorCode::kInvalidArgument,
              "the GPU profiler needs the model's weights");
  weights_->check_complete(*units.graph());
  BRAID_CHECK(options_.runs >= 1 && options_.number >= 1 && options_.warmup >= 0,
              ErrorCode::kInvalidArgument, "profiler options: runs and number must be >= 1");
  const int n = exec::cuda_device_count();
  BRAID_CHECK(n > 0, ErrorCode::kNotFound, exec::cuda_unavailable_reason());
  BRAID_CHECK(options_.device >= 0 && options_.device < n, ErrorCode::kNotFound, "no CUDA device ",
              options_.device, " (", n, " visible)");
  device_ = exec::cuda_device_description(options_.device);
  if (options_.use_cache) {
    cost::Machine machine = cost::this_machine();
    machine.executor = "cuda " + device_;
    cache_ = std::make_unique<cost::ProfileCache>(
        options_.cache_dir.empty() ? cost::ProfileCache::default_dir() : options_.cache_dir,
        machine);
  }
}

GpuProfiler::~GpuProfiler() = default;

Micros GpuProfiler::unit_latency(UnitId unit) const {
  count_unit_query();
  const std::vector<std::vector<UnitId>> stage = {{unit}};
  return profile_stage(stage).median;
}

Micros GpuProfiler::stage_latency(std::span<const std::vector<UnitId>> groups) const {
  count_stage_query();
  return std::max(profile_stage(groups).median, stage_lower_bound(groups));
}

cost::Measurement GpuProfiler::profile_stage(std::span<const std::vector<UnitId>> groups) const {
  const std::string key = cost::stage_key(units(), groups) + "\nexecutor=" + name_;
  std::lock_guard lock(mutex_);
  if (auto it = memo_.find(key); it != memo_.end()) return it->second;
  cost::Measurement m;
  if (auto cached = cache_ ? cache_->find(key) : std::nullopt) {
    m = *cached;
    count_cache_hit();
  } else {
    m = measure(groups);
    count_measurement();
    if (cache_) cache_->insert(key, m, units().signature(groups.front().front()));
  }
  memo_.emplace(key, m);
  return m;
}

cost::Measurement GpuProfiler::measure(std::span<const std::vector<UnitId>> groups) const {
  const auto runner = make_stage_runner(units(), weights_.get(), groups, options_.input_seed);
  auto model = exec::make_cuda_executor({.device = options_.device})->prepare(runner->bundle());
  auto request = model->new_request();
  runner->set_inputs(*model, *request);
  for (int i = 0; i < options_.warmup; ++i) model->run(*request);
  std::vector<double> means;
  for (int r = 0; r < options_.runs; ++r) {
    double total = 0;
    for (int k = 0; k < options_.number; ++k) {
      model->run(*request);
      total += exec::cuda_last_run_us(*request).value_or(0);
    }
    means.push_back(total / options_.number);
  }
  cost::Measurement m;
  m.median = percentile(means, 0.5);
  m.p10 = percentile(means, 0.1);
  m.p90 = percentile(means, 0.9);
  m.runs = options_.runs;
  m.number = options_.number;
  return m;
}

}  // namespace braid::profile
