// The device-independent half of GPU stage timing (exec/cuda/cuda_stage_timer.h measures): how
// many copies of a stage one graph holds, and how replay times become a stage cost. Kept apart
// so that it is tested where there is no GPU.
//
//   const int k = copies_for(Micros(12.0), {});                  // one probe replay's estimate
//   cost::Measurement m = summarize_stage_times(stage_us, empty_us, k);
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "base/ids.h"
#include "base/units.h"
#include "cost/profile_cache.h"
#include "ir/graph.h"

namespace braid::profile {

struct CopiesOptions {
  // A replay should last this long, so that launch jitter (a few microseconds) is small next to it.
  Micros target{200.0};
  int max_copies = 32;  // graphs stay small; instantiation grows with the node count
};

// ceil(target / estimate) copies, between 1 and max_copies; max_copies for a zero estimate.
int copies_for(Micros estimate, const CopiesOptions& options);

// A stage's duration guessed from its units' measured costs (`unit_costs` by UnitId; nullopt where
// not measured yet): the slowest group's sum. nullopt when any unit is unmeasured; the profiler
// then times one probe replay instead.
std::optional<Micros> stage_estimate(std::span<const std::vector<UnitId>> groups,
                                     std::span<const std::optional<Micros>> unit_costs);

// Whether stage timing evicts the L2 cache before every copy (exec/cuda/cuda_stage_timer.h):
// when what one run of the model touches (`model_bytes`: weights and activations) exceeds half
// the L2 (NVIDIA's A100/H100 L2 is two partitions, each caching for the SMs near it), a unit's
// weights were evicted by the rest of the model since its last run. Below that they stay in the
// L2 from run to run, and copies that find them there time what a run sees. On an H100 (50 MiB
// L2) evicting put the sum of unit costs 2–6% above the replayed sequential run on six zoo
// models (3–25% below without; 19–25% on the four largest) and a 64x64 SqueezeNet 32% above
// (docs/gpu.md).
bool evict_l2_between_copies(int64_t model_bytes, int64_t l2_bytes);
// Every value of `graph` once (weights and activations, no storage reuse): what one run touches.
int64_t model_bytes(const ir::Graph& graph);

// Per replay i: (stage_us[i] - empty_us[i]) / copies, the launch of an empty graph subtracted;
// never below 0 (a stage shorter than the launch noise). Median, p10 and p90 over the replays;
// `number` is the copies. Throws kInvalidArgument on empty or unequal series or copies < 1.
cost::Measurement summarize_stage_times(std::span<const double> stage_us,
                                        std::span<const double> empty_us, int copies);

}  // namespace braid::profile
