// profile::GpuProfiler — `--cost cuda:N`: unit and stage latencies measured on a GPU the way
// a replayed plan runs them (issue 14). The model is compiled once (cuDNN algorithms and
// workspaces chosen once per unit, exec/cuda/cuda_stage_timer.h); a stage (group i on stream i)
// is captured into a CUDA Graph as K back-to-back copies, replayed `runs` times and timed with
// CUDA events, and each replay's time, less that of an empty graph launched just before it, is
// divided by K (profile/stage_timing.h picks K from a one-replay probe). The IOS profiler
// times stages similarly on the device (ios.txt §4). Results are cached in memory and on disk
// (profile_cache.h), keyed by the host, the GPU (exec::cuda_device_description), the
// measurement method and the stage key, like the CPU profiler.
//
//   profile::GpuProfiler h100(m.units, weights, {.device = 0});
//   Micros s = h100.stage_latency(groups);
//
// unit_resources (Opara's resource demand, issue 31 item 3) reads the kernels a unit's compiled
// ops launch from the driver: each unit's ops captured into a CUDA Graph, never run
// (exec/cuda/cuda_kernel_census.h). Compiled here, never run on a GPU yet (2026-11-29).
//
// Without a GPU the constructor throws braid::Error(kNotFound) "no CUDA device".
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "base/precision.h"
#include "cost/cost_model.h"
#include "cost/profile_cache.h"
#include "exec/cuda/cuda_kernel_census.h"
#include "ir/weights.h"
#include "profile/stage_timing.h"

namespace braid::exec {
class CudaStageTimer;
}

namespace braid::profile {

struct GpuProfilerOptions {
  int device = 0;
  int warmup = 2;        // untimed replays of each stage graph
  int runs = 6;          // timed replays, each paired with an empty-graph replay
  CopiesOptions copies;  // K copies of the stage in one graph
  // Evict the L2 cache before every copy (exec/cuda/cuda_stage_timer.h). nullopt: when the
  // model is larger than half the L2 (evict_l2_between_copies), unless the environment variable
  // BRAID_CUDA_STAGE_L2 says `cold` or `warm` (to compare the two).
  std::optional<bool> cold_l2;
  uint64_t input_seed = 1;
  // What the stages are timed in (CudaExecutorOptions::precision); part of the cache key.
  Precision precision = Precision::kFp32;
  bool use_cache = true;
  std::filesystem::path cache_dir;  // empty: cost::ProfileCache::default_dir()
};

class GpuProfiler final : public cost::CostModel {
 public:
  GpuProfiler(const ir::UnitGraph& units, std::shared_ptr<const ir::Weights> weights,
              GpuProfilerOptions options = {});
  ~GpuProfiler() override;

  std::string_view name() const override { return name_; }
  Micros unit_latency(UnitId unit) const override;
  // Never below stage_lower_bound (the slowest group alone), as for the CPU profiler.
  Micros stage_latency(std::span<const std::vector<UnitId>> groups) const override;
  bool measures() const override { return true; }
  // From the unit's kernels as the driver reports them (resources_of_kernels below), asked once
  // per unit and kept in memory only: the profile cache holds latencies, and a census is one
  // capture, nothing run. nullopt where the driver cannot say or the unit launches no kernel.
  std::optional<cost::UnitResources> unit_resources(UnitId unit) const override;

  // An operator merge measured as the CUDA executor runs it: one cuDNN convolution over the
  // units' centred, concatenated weights (exec/cuda/cuda_stage_timer.h, time_merge), or the
  // units one after another where they cannot be one; cached under its own key. Never below
  // merge_lower_bound.
  Micros merge_latency(std::span<const UnitId> units) const override;
  // The slowest unit alone (as the CPU profiler's): the merged convolution computes every
  // unit's outputs. Not their sum, which the merged one may beat.
  Micros merge_lower_bound(std::span<const UnitId> units) const override;

  cost::Measurement profile_stage(std::span<const std::vector<UnitId>> groups) const;

 private:
  // `merge`: the groups (one unit each) as one operator merge.
  cost::Measurement profile(std::span<const std::vector<UnitId>> groups, bool merge) const;
  cost::Measurement measure(std::span<const std::vector<UnitId>> groups, bool merge) const;
  // The model compiled for timing, on first use (the caller holds mutex_).
  exec::CudaStageTimer& timer() const;
  void check_stage(std::span<const std::vector<UnitId>> groups) const;

  std::shared_ptr<const ir::Weights> weights_;
  GpuProfilerOptions options_;
  std::string name_, device_;
  std::unique_ptr<cost::ProfileCache> cache_;
  mutable std::mutex mutex_;  // one measurement at a time; guards memo_ and timer_
  mutable std::unique_ptr<exec::CudaStageTimer> timer_;    // the model compiled once, on first use
  mutable std::vector<std::vector<bool>> reach_;           // ir::transitive_closure, on first use
  mutable std::vector<std::optional<Micros>> unit_costs_;  // units measured alone: stage_estimate
  mutable std::map<std::string, cost::Measurement> memo_;
  mutable std::optional<exec::CudaDeviceFigures> figures_;  // on first unit_resources
  mutable std::map<UnitId, std::optional<cost::UnitResources>> resources_;  // by unit, as answered
};

// What SimCostModel::unit_resources answers, from kernels a device reports (in launch order):
// the first kernel's threads, registers per thread and shared memory per block, and its grid;
// the occupancy the fullest of them reaches alone (resident blocks per SM, capped by the grid
// spread over the SMs, x warps per block x SMs used, over the device's warp slots); memory-bound
// when the unit's FLOPs over its bytes (ir::Unit) fall below the device's FLOP/s over its
// bandwidth. nullopt for no kernels.
std::optional<cost::UnitResources> resources_of_kernels(
    std::span<const exec::LaunchedKernel> kernels, const exec::CudaDeviceFigures& device,
    const ir::Unit& unit);

}  // namespace braid::profile
