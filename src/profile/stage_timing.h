// The device-independent half of GPU stage timing (exec/cuda/cuda_stage_timer.h measures): how
// many copies of a stage one graph holds, and how replay times become a stage cost. Kept apart
// so that it is tested where there is no GPU.
//
//   const int k = copies_for(Micros(12.0), {});                  // one probe replay's estimate
//   cost::Measurement m = summarize_stage_times(stage_us, empty_us, k);
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "base/ids.h"
#include "base/units.h"
#include "cost/profile_cache.h"

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

// Per replay i: (stage_us[i] - empty_us[i]) / copies, the launch of an empty graph subtracted;
// never below 0 (a stage shorter than the launch noise). Median, p10 and p90 over the replays;
// `number` is the copies. Throws kInvalidArgument on empty or unequal series or copies < 1.
cost::Measurement summarize_stage_times(std::span<const double> stage_us,
                                        std::span<const double> empty_us, int copies);

}  // namespace braid::profile
