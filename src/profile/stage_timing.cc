#include "profile/stage_timing.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "base/error.h"
#include "profile/stage_runner.h"

namespace braid::profile {

int copies_for(Micros estimate, const CopiesOptions& o) {
  if (estimate.count() <= 0) return o.max_copies;
  const double copies = std::ceil(o.target.count() / estimate.count());
  return int(std::clamp(copies, 1.0, double(o.max_copies)));
}

std::optional<Micros> stage_estimate(std::span<const std::vector<UnitId>> groups,
                                     std::span<const std::optional<Micros>> unit_costs) {
  Micros slowest{0};
  for (const std::vector<UnitId>& group : groups) {
    Micros sum{0};
    for (UnitId u : group) {
      if (index(u) >= unit_costs.size() || !unit_costs[index(u)]) return std::nullopt;
      sum += *unit_costs[index(u)];
    }
    slowest = std::max(slowest, sum);
  }
  return slowest;
}

bool evict_l2_between_copies(int64_t model_bytes, int64_t l2_bytes) {
  return model_bytes > l2_bytes / 2;
}

int64_t model_bytes(const ir::Graph& graph) {
  int64_t bytes = 0;
  for (const ir::Value& v : graph.values()) bytes += v.type.bytes();
  return bytes;
}

cost::Measurement summarize_stage_times(std::span<const double> stage_us,
                                        std::span<const double> empty_us, int copies) {
  BRAID_CHECK(!stage_us.empty() && stage_us.size() == empty_us.size() && copies >= 1,
              ErrorCode::kInvalidArgument, "stage timing: ", stage_us.size(), " stage and ",
              empty_us.size(), " empty replays with ", copies,
              " copies (need as many of each, at least one, copies >= 1)");
  std::vector<double> per_copy;
  for (size_t i = 0; i < stage_us.size(); ++i)
    per_copy.push_back(std::max(0.0, stage_us[i] - empty_us[i]) / copies);
  cost::Measurement m;
  m.median = percentile(per_copy, 0.5);
  m.p10 = percentile(per_copy, 0.1);
  m.p90 = percentile(per_copy, 0.9);
  m.runs = int(stage_us.size());
  m.number = copies;
  return m;
}

}  // namespace braid::profile
