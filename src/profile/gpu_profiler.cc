#include "profile/gpu_profiler.h"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "base/error.h"
#include "cost/machine.h"
#include "cost/stage_key.h"
#include "exec/cuda/cuda_executor.h"
#include "exec/cuda/cuda_stage_timer.h"
#include "ir/analysis.h"
#include "profile/stage_timing.h"

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
  BRAID_CHECK(options_.runs >= 1 && options_.copies.max_copies >= 1 && options_.warmup >= 0,
              ErrorCode::kInvalidArgument, "profiler options: runs and max copies must be >= 1");
  exec::check_cuda_device(options_.device);
  if (!options_.cold_l2) {
    const char* env = std::getenv("BRAID_CUDA_STAGE_L2");
    const std::string l2 = env != nullptr ? env : "";
    BRAID_CHECK(l2.empty() || l2 == "cold" || l2 == "warm", ErrorCode::kInvalidArgument,
                "BRAID_CUDA_STAGE_L2='", l2, "': expected cold or warm");
    options_.cold_l2 = l2.empty()
                           ? evict_l2_between_copies(model_bytes(*units.graph()),
                                                     exec::cuda_l2_cache_bytes(options_.device))
                           : l2 == "cold";
  }
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

Micros GpuProfiler::merge_latency(std::span<const UnitId> units) const {
  count_stage_query();
  std::vector<std::vector<UnitId>> groups;
  for (UnitId u : units) groups.push_back({u});
  return std::max(profile(groups, true).median, merge_lower_bound(units));
}

Micros GpuProfiler::merge_lower_bound(std::span<const UnitId> units) const {
  return slowest_unit(units);
}

cost::Measurement GpuProfiler::profile_stage(std::span<const std::vector<UnitId>> groups) const {
  return profile(groups, false);
}

cost::Measurement GpuProfiler::profile(std::span<const std::vector<UnitId>> groups,
                                       bool merge) const {
  // method=: graph replay of the compiled model; entries of the older method (a fresh executor
  // per stage, eager runs: mostly overhead) are never reused.
  const std::string key = cost::stage_key(units(), groups) + "\nexecutor=" + name_ +
                          "\nmethod=graph-replay-v3-" +
                          (*options_.cold_l2 ? "cold-l2" : "warm-l2") +
                          (options_.precision == Precision::kFp32
                               ? ""
                               : "\nprecision=" + std::string(to_string(options_.precision))) +
                          // A merge runs as one merged convolution: a key of its own.
                          (merge ? "\nmerge=one_conv" : "");
  std::lock_guard lock(mutex_);
  if (auto it = memo_.find(key); it != memo_.end()) return it->second;
  cost::Measurement m;
  if (auto cached = cache_ ? cache_->find(key) : std::nullopt) {
    m = *cached;
    count_cache_hit();
  } else {
    m = measure(groups, merge);
    count_measurement();
    if (cache_) cache_->insert(key, m, units().signature(groups.front().front()));
  }
  memo_.emplace(key, m);
  if (!merge && groups.size() == 1 && groups[0].size() == 1) {  // a unit alone: stage_estimate
    if (unit_costs_.size() < units().num_units()) unit_costs_.resize(units().num_units());
    unit_costs_[index(groups[0][0])] = m.median;
  }
  return m;
}

exec::CudaStageTimer& GpuProfiler::timer() const {
  if (timer_ == nullptr)
    timer_ = exec::make_cuda_stage_timer(units(), weights_, options_.device, options_.input_seed,
                                         options_.precision);
  return *timer_;
}

std::optional<cost::UnitResources> GpuProfiler::unit_resources(UnitId unit) const {
  BRAID_CHECK(index(unit) < units().num_units(), ErrorCode::kInvalidArgument, "unit #", index(unit),
              " out of range");
  std::lock_guard lock(mutex_);
  if (auto it = resources_.find(unit); it != resources_.end()) return it->second;
  if (!figures_) figures_ = exec::cuda_device_figures(options_.device);
  const std::optional<std::vector<exec::LaunchedKernel>> kernels = timer().unit_kernels(unit);
  std::optional<cost::UnitResources> r =
      kernels ? resources_of_kernels(*kernels, *figures_, units().unit(unit)) : std::nullopt;
  resources_.emplace(unit, r);
  return r;
}

std::optional<cost::UnitResources> resources_of_kernels(
    std::span<const exec::LaunchedKernel> kernels, const exec::CudaDeviceFigures& device,
    const ir::Unit& unit) {
  if (kernels.empty()) return std::nullopt;
  constexpr int64_t kWarpSize = 32;
  cost::UnitResources r;
  const exec::LaunchedKernel& first = kernels.front();
  r.per_block = {
      .threads = first.threads, .registers = first.registers, .shared_memory = first.shared_memory};
  r.blocks = first.blocks;
  for (const exec::LaunchedKernel& k : kernels)
    r.occupancy =
        std::max(r.occupancy, cost::kernel_occupancy(k.blocks, k.blocks_per_sm,
                                                     (k.threads + kWarpSize - 1) / kWarpSize,
                                                     device.sms, device.max_warps_per_sm));
  // No figures, no answer.
  if (device.fp32_flops > 0 && device.dram_bytes_per_s > 0)
    r.bound = cost::roofline_class(double(unit.flops), double(unit.bytes),
                                   device.fp32_flops / device.dram_bytes_per_s);
  return r;
}

// Dependent groups are not a stage (they would race on the device), nor is a group out of
// dependency order.
void GpuProfiler::check_stage(std::span<const std::vector<UnitId>> groups) const {
  if (reach_.empty()) reach_ = ir::transitive_closure(units());
  BRAID_CHECK(!groups.empty(), ErrorCode::kInvalidArgument, "a stage needs at least one group");
  for (size_t g = 0; g < groups.size(); ++g) {
    BRAID_CHECK(!groups[g].empty(), ErrorCode::kInvalidArgument, "stage group ", g, " is empty");
    for (size_t h = 0; h < groups.size(); ++h)
      for (size_t i = 0; i < groups[g].size(); ++i)
        for (size_t j = 0; j < groups[h].size(); ++j) {
          const UnitId u = groups[g][i], v = groups[h][j];
          BRAID_CHECK(index(u) < units().num_units() && index(v) < units().num_units(),
                      ErrorCode::kInvalidArgument, "stage: unit id out of range");
          const bool ordered = g == h && i < j;  // earlier in the same group may reach later
          BRAID_CHECK(ordered || !reach_[index(u)][index(v)], ErrorCode::kInvalidSchedule,
                      "not a stage: '", units().unit(v).name, "' depends on '",
                      units().unit(u).name, "'",
                      g == h ? " which comes after it in its group" : " in another group");
        }
  }
}

cost::Measurement GpuProfiler::measure(std::span<const std::vector<UnitId>> groups,
                                       bool merge) const {
  check_stage(groups);
  // The copies that fill a replay, from the units' own costs once measured, else from one probe.
  std::vector<UnitId> merged;
  for (const auto& group : groups) merged.insert(merged.end(), group.begin(), group.end());
  auto time = [&](const exec::StageTimingOptions& o) {
    return merge ? timer().time_merge(merged, o) : timer().time_stage(groups, o);
  };
  // A merge's units one after another bound its time from above: its copies from their costs.
  std::optional<Micros> estimate = stage_estimate(
      merge ? std::span<const std::vector<UnitId>>(&merged, 1) : groups, unit_costs_);
  if (!estimate) {
    const exec::StageTimes probe = time({.copies = 1, .replays = 1, .cold_l2 = *options_.cold_l2});
    estimate = Micros(std::max(0.0, probe.stage_us.front() - probe.empty_us.front()));
  }
  const int copies = copies_for(*estimate, options_.copies);
  const exec::StageTimes t = time({.copies = copies,
                                   .replays = options_.runs,
                                   .warmup = options_.warmup,
                                   .cold_l2 = *options_.cold_l2});
  return summarize_stage_times(t.stage_us, t.empty_us, copies);
}

}  // namespace braid::profile
