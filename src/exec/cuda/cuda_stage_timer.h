// Stage timing on a GPU the way a plan runs it (issue 14), for the GPU profiler (`--cost cuda:N`):
// the whole model is compiled once (cuDNN algorithms, descriptors, workspaces: once per unit),
// every activation gets its own storage and is filled by one sequential run from random inputs;
// a stage is then captured into a CUDA Graph from the already compiled ops — `copies` copies of
// [fork, group i on lane i, join], as stages follow each other inside a replayed plan — and the
// graph is replayed, each replay timed with CUDA events (outside the capture). Interleaved with
// it, a baseline graph is replayed and timed the same way: its time is the cost to subtract
// (profile/stage_timing.h does the arithmetic). Nothing is allocated while timing.
//
// With `cold_l2` (the default) every copy is preceded by a read of twice the L2 cache's size and
// the baseline is those reads alone: a stage then finds its weights in device memory, as it does
// inside a run, where the rest of the model evicted them since. Copies that hit a warm L2 measured
// tv_inception_v3's units at 2.77 ms in sum against 3.70 ms for its replayed sequential run on an
// H100 (devices/measured/h100_2026-11-24). Without it the baseline is an empty graph.
//
//   auto timer = exec::make_cuda_stage_timer(units, weights, /*device=*/0, /*input_seed=*/1);
//   exec::StageTimes t = timer->time_stage(groups, {.copies = 8, .replays = 6});
//
// Without CUDA (or a GPU) make_cuda_stage_timer throws braid::Error(kNotFound) "no CUDA device".
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "base/ids.h"
#include "base/precision.h"
#include "exec/cuda/cuda_kernel_census.h"
#include "ir/unit_graph.h"
#include "ir/weights.h"

namespace braid::exec {

struct StageTimingOptions {
  int copies = 1;       // copies of the stage inside one graph
  int replays = 6;      // timed replays (each of the stage graph and of the empty graph)
  int warmup = 2;       // untimed replays first
  bool cold_l2 = true;  // evict the L2 cache before every copy (see above)
};

struct StageTimes {
  std::vector<double> stage_us;  // device time of each replay of the stage graph
  std::vector<double> empty_us;  // device time of the baseline graph, replayed just before each
};

class CudaStageTimer {
 public:
  virtual ~CudaStageTimer() = default;
  // Groups must be a valid stage (independent groups; the caller validates). Not thread-safe.
  virtual StageTimes time_stage(std::span<const std::vector<UnitId>> groups,
                                const StageTimingOptions& options) = 0;
  // An operator merge (ios.txt §4.2) as the CUDA executor runs it: its units (one Conv chain
  // each) as one cuDNN convolution (cuda::Compiler::compile_merge, compiled on first use),
  // timed like a stage of one group; where they cannot be one convolution, its units one after
  // another, as the executor then runs them. Not thread-safe.
  virtual StageTimes time_merge(std::span<const UnitId> units,
                                const StageTimingOptions& options) = 0;
  // The kernels `unit`'s compiled ops launch, in launch order, as the driver reports them
  // (exec/cuda/cuda_kernel_census.h): captured, never run. nullopt where the driver cannot say.
  virtual std::optional<std::vector<LaunchedKernel>> unit_kernels(UnitId unit) = 0;
};

// `precision`: what the stages compute in (CudaExecutorOptions::precision).
std::unique_ptr<CudaStageTimer> make_cuda_stage_timer(const ir::UnitGraph& units,
                                                      std::shared_ptr<const ir::Weights> weights,
                                                      int device, uint64_t input_seed,
                                                      Precision precision = Precision::kFp32);

}  // namespace braid::exec
