// Task arrivals for scenarios: periodic per model (the paper's sensors, top.txt §VII) or
// Poisson, over a duration, from a seed. Sorted by time (ties by model), so a scenario is the
// same list every time.
//
//   auto a = runtime::make_arrivals({.fps = {60, 120, 240}, .duration_s = 30});
#pragma once

#include <cstdint>
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

// Throws kInvalidArgument for a negative rate or duration.
std::vector<Arrival> make_arrivals(const ArrivalPattern& pattern);

}  // namespace braid::runtime
