#include "runtime/arrivals.h"

#include <algorithm>
#include <cmath>
#include <random>

#include <fmt/format.h>

#include "base/error.h"
#include "base/parse.h"

namespace braid::runtime {

std::string_view to_string(ArrivalKind kind) {
  switch (kind) {
    case ArrivalKind::kPeriodic:
      return "periodic";
    case ArrivalKind::kPoisson:
      return "poisson";
  }
  return "?";
}

void check_arrival_limits(std::span<const double> fps, double duration_s, std::string_view where) {
  check_in_range(duration_s, 0, kMaxDurationS, "the duration in seconds", where);
  double tasks = 0;
  for (size_t m = 0; m < fps.size(); ++m) {
    check_in_range(fps[m], 0, kMaxFps, fmt::format("the rate (FPS) of model {}", m), where);
    tasks += fps[m] * duration_s;
  }
  BRAID_CHECK(tasks <= kMaxTasks, ErrorCode::kInvalidArgument, where, where.empty() ? "" : ": ",
              "the rates times the duration come to ", format_number(tasks),
              " tasks, more than the limit of ", format_number(kMaxTasks),
              " per run (lower the rates or the duration)");
}

std::vector<Arrival> make_arrivals(const ArrivalPattern& pattern) {
  check_arrival_limits(pattern.fps, pattern.duration_s, "arrivals");
  const double end_us = pattern.duration_s * 1e6;
  std::vector<Arrival> out;
  for (size_t m = 0; m < pattern.fps.size(); ++m) {
    const double fps = pattern.fps[m];
    if (fps == 0) continue;
    const auto model = static_cast<uint32_t>(m);
    if (pattern.burst) {
      const auto n = static_cast<size_t>(std::llround(fps * pattern.duration_s));
      out.insert(out.end(), n, Arrival{0, model});
      continue;
    }
    // One generator per model, so adding a model does not change the others' arrivals.
    std::mt19937_64 rng(pattern.seed * 1000003 + m);
    const double period_us = 1e6 / fps;
    if (pattern.kind == ArrivalKind::kPeriodic) {
      const double phase = std::uniform_real_distribution<double>(0, period_us)(rng);
      for (double t = phase; t < end_us; t += period_us) out.push_back({t, model});
    } else {
      std::exponential_distribution<double> gap(1.0 / period_us);
      for (double t = gap(rng); t < end_us; t += gap(rng)) out.push_back({t, model});
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const Arrival& a, const Arrival& b) {
    return a.at_us != b.at_us ? a.at_us < b.at_us : a.model < b.model;
  });
  return out;
}

}  // namespace braid::runtime
