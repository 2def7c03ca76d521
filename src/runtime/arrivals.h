// Task arrivals for scenarios: periodic per model (the paper's sensors, top.txt §VII) or
// Poisson, over a duration, from a seed. Sorted by time (ties by model), so a scenario is the
// same list every time.
//
//   auto a = runtime::make_arrivals({.fps = {60, 120, 240}, .duration_s = 30});
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace braid::runtime {

enum class ArrivalKind : uint8_t { kPeriodic, kPoisson };
std::string_view to_string(ArrivalKind);

struct Arrival {
  double at_us = 0;
  uint32_t model = 0;
};

struct ArrivalPattern {
  ArrivalKind kind = ArrivalKind::kPeriodic;
  std::vector<double> fps;  // per model; 0: none
  double duration_s = 1;
  uint64_t seed = 1;  // Poisson draws; periodic: each model's phase in [0, period)
  // Burst: every model's tasks all arrive at t = 0 (fps * duration of them).
  bool burst = false;
};

// Limits on every pattern, from flags (braid top, braid load), a scenario file or a MODEL:RATE
// list. A run holds its arrivals (and a task record for each) in memory, so what bounds its
// memory is their count: the expected count, the sum over models of FPS x duration, is refused
// above kMaxTasks before anything is generated (1e7 tasks are about 1 GB of task records; the
// papers' scenarios are some 1e4). A rate above kMaxFps or a duration above kMaxDurationS is a
// typo, not an experiment.
inline constexpr double kMaxFps = 1e5;
inline constexpr double kMaxDurationS = 86400;  // one day
inline constexpr double kMaxTasks = 1e7;

// Throws kInvalidArgument (one sentence starting with `where`) when a rate is not within
// [0, kMaxFps], the duration not within [0, kMaxDurationS], or the expected task count exceeds
// kMaxTasks.
void check_arrival_limits(std::span<const double> fps, double duration_s, std::string_view where);

// Throws kInvalidArgument for a rate, duration or task count beyond check_arrival_limits'.
std::vector<Arrival> make_arrivals(const ArrivalPattern& pattern);

}  // namespace braid::runtime
