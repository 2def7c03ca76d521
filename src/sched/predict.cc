#include "sched/predict.h"

#include <algorithm>
#include <optional>

#include "base/error.h"

namespace braid::sched {
namespace {

Micros predict_stages(const ir::UnitGraph& units, const Schedule& s, const cost::CostModel& cost) {
  const auto where = placements(s, units.num_units());
  std::vector<Micros> finish(s.stages.size(), Micros{0});
  std::vector<Micros> device_free(std::max(1, s.num_devices), Micros{0});
  Micros makespan{0};
  for (size_t k = 0; k < s.stages.size(); ++k) {
    const Stage& stage = s.stages[k];
    BRAID_ASSERT(stage.device >= 0 && static_cast<size_t>(stage.device) < device_free.size(),
                 "stage ", k, " on device ", stage.device);
    Micros start = device_free[stage.device];
    for (const auto& group : stage.groups)
      for (UnitId u : group)
        for (uint32_t e : units.in_edges(u)) {
          const ir::UnitEdge& edge = units.edges()[e];
          const auto& from = where[index(edge.from)];
          BRAID_ASSERT(from.has_value(), "unit ", index(edge.from), " is not scheduled");
          if (from->stage == k) continue;
          Micros ready = finish[from->stage];
          if (from->device != stage.device) ready += cost.transfer_latency(edge);
          start = std::max(start, ready);
        }
    Micros duration;
    if (stage.kind == StageKind::kMerge) {
      std::vector<UnitId> merged;
      for (const auto& group : stage.groups)
        merged.insert(merged.end(), group.begin(), group.end());
      duration = cost.merge_latency(merged);
    } else if (!stage.threads.empty()) {
      duration = cost.stage_latency_at(stage.groups, stage.threads);
    } else {
      duration = cost.stage_latency(stage.groups);
    }
    finish[k] = start + duration;
    device_free[stage.device] = finish[k];
    makespan = std::max(makespan, finish[k]);
  }
  return makespan;
}

Micros predict_lanes(const ir::UnitGraph& units, const Schedule& s, const cost::CostModel& cost) {
  const size_t n = units.num_units();
  const auto where = placements(s, n);
  std::vector<std::optional<Micros>> finish(n);
  std::vector<size_t> next(s.lanes.size(), 0);
  std::vector<Micros> lane_free(s.lanes.size(), Micros{0});
  // Syncs that are not graph edges also delay their `to` (an allotment's shared cores).
  std::vector<std::vector<UnitId>> waits(n);
  for (const SyncEdge& e : s.syncs) waits[index(e.to)].push_back(e.from);
  const std::vector<int> threads = unit_threads(s, n, 0);
  // Advance every lane as far as its next unit's predecessors allow, until all are done; a
  // valid schedule never deadlocks (its lanes follow a topological order of the cross-lane
  // waits).
  size_t done = 0;
  Micros makespan{0};
  while (done < n) {
    bool progressed = false;
    for (size_t l = 0; l < s.lanes.size(); ++l) {
      const Lane& lane = s.lanes[l];
      while (next[l] < lane.units.size()) {
        const UnitId u = lane.units[next[l]];
        Micros start = lane_free[l];
        bool ready = true;
        for (uint32_t e : units.in_edges(u)) {
          const ir::UnitEdge& edge = units.edges()[e];
          if (!finish[index(edge.from)]) {
            ready = false;
            break;
          }
          Micros at = *finish[index(edge.from)];
          if (where[index(edge.from)]->device != lane.device) at += cost.transfer_latency(edge);
          start = std::max(start, at);
        }
        for (UnitId from : waits[index(u)]) {
          if (!ready || !finish[index(from)]) {
            ready = false;
            break;
          }
          start = std::max(start, *finish[index(from)]);
        }
        if (!ready) break;
        finish[index(u)] =
            start + (threads[index(u)] > 0 ? cost.unit_latency_at(u, threads[index(u)])
                                           : cost.unit_latency(u));
        lane_free[l] = *finish[index(u)];
        makespan = std::max(makespan, lane_free[l]);
        ++next[l];
        ++done;
        progressed = true;
      }
    }
    BRAID_ASSERT(progressed, "predicted_latency: the lanes deadlock (an invalid schedule)");
  }
  return makespan;
}

}  // namespace

Micros predicted_latency(const ir::UnitGraph& units, const Schedule& schedule,
                         const cost::CostModel& cost) {
  if (schedule.is_stage_based()) return predict_stages(units, schedule, cost);
  if (schedule.is_stream_based()) return predict_lanes(units, schedule, cost);
  return Micros{0};
}

}  // namespace braid::sched
