// profile::GpuProfiler — `--cost cuda:N`: unit and stage latencies measured on a GPU with the CUDA
// executor and CUDA events, as IOS profiles each candidate stage on the device (ios.txt §4;
// peers.md §1.6: warmup 2, number 6, repeat 6). A stage is cut out and made runnable by
// stage_runner.h (group i on stream i); its latency is the device time between the inputs
// arriving and the last group finishing (exec::cuda_last_run_us), the median of `runs` means
// of `number` inferences. Results are cached in memory and on disk (profile_cache.h), keyed by
// the host, the GPU (exec::cuda_device_description) and the stage key, like the CPU profiler.
//
//   profile::GpuProfiler h100(m.units, weights, {.device = 0});
//   Micros s = h100.stage_latency(groups);
//
// Without a GPU the constructor throws braid::Error(kNotFound) "no CUDA device".
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>

#include "cost/cost_model.h"
#include "cost/profile_cache.h"
#include "ir/weights.h"

namespace braid::profile {

struct GpuProfilerOptions {
  int device = 0;
  int warmup = 2;
  int runs = 6;
  int number = 6;
  uint64_t input_seed = 1;
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

  cost::Measurement profile_stage(std::span<const std::vector<UnitId>> groups) const;

 private:
  cost::Measurement measure(std::span<const std::vector<UnitId>> groups) const;

  std::shared_ptr<const ir::Weights> weights_;
  GpuProfilerOptions options_;
  std::string name_, device_;
  std::unique_ptr<cost::ProfileCache> cache_;
  mutable std::mutex mutex_;  // one measurement at a time; guards memo_
  mutable std::map<std::string, cost::Measurement> memo_;
};

}  // namespace braid::profile
