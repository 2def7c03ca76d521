#include "sched/predict.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "base/error.h"

namespace braid::sched {
namespace {

Micros predict_stages(const ir::UnitGraph& units, const Schedule& s, const cost::CostModel& cost) {
  const auto where = placements(s, units.num_units());
  std::vector<Micros> finish(s.stages.size(), Micros{0});
  std::vector<Micros> device_free(std::max(1, s.num_devices), Micros{0});
  Micros makespan{0};
  const bool producer_device = cost.start_rule() == cost::StartRule::kProducerDevice;
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
          if (from->device != stage.device) {
            // HIOS's simulator: the producer's device timeline as it stands now.
            if (producer_device) ready = device_free[from->device];
            ready += cost.transfer_latency(edge);
          }
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
  // Contention: a device that runs fewer units at once than it has lanes (the CPU profiler:
  // its CPUs over threads per stream) runs lane i on slot i mod P, one unit at a time per slot,
  // as the CPU executor's lane pool pins its i-th lane. Without contention every lane is its
  // own slot (lane indices, not stream numbers, which may have gaps). An allotment already
  // fits its cores.
  const double parallelism = cost.parallelism();
  const size_t slots = s.has_allotment() || !std::isfinite(parallelism)
                           ? s.lanes.size()
                           : static_cast<size_t>(std::max(1.0, std::floor(parallelism)));
  std::map<std::pair<int, size_t>, Micros> slot_free;  // (device, slot)
  auto slot_of = [&](size_t l) { return std::pair(s.lanes[l].device, l % slots); };
  // Co-running (see predict.h): the lane whose unit a slot runs last, by (device, slot).
  const bool co_run = !s.has_allotment() && std::isfinite(parallelism) && slots > 1;
  std::map<std::pair<int, size_t>, size_t> slot_lane;
  // When the head of lane `l` can start; nullopt while a producer or a waited unit is pending.
  auto head_start = [&](size_t l) -> std::optional<Micros> {
    const Lane& lane = s.lanes[l];
    const UnitId u = lane.units[next[l]];
    Micros start = lane_free[l];
    for (uint32_t e : units.in_edges(u)) {
      const ir::UnitEdge& edge = units.edges()[e];
      if (!finish[index(edge.from)]) return std::nullopt;
      Micros at = *finish[index(edge.from)];
      if (where[index(edge.from)]->device != lane.device) at += cost.transfer_latency(edge);
      start = std::max(start, at);
    }
    for (UnitId from : waits[index(u)]) {
      if (!finish[index(from)]) return std::nullopt;
      start = std::max(start, *finish[index(from)]);
    }
    if (auto it = slot_free.find(slot_of(l)); it != slot_free.end())
      start = std::max(start, it->second);
    return start;
  };
  // Event order: the unit that can start earliest goes next (lowest lane on ties). Without
  // contention every start depends on its lane and producers only, so the order changes
  // nothing; with it, a slot goes to whoever is ready first. A valid schedule never deadlocks
  // (its lanes follow a topological order of the cross-lane waits).
  Micros makespan{0};
  for (size_t done = 0; done < n; ++done) {
    std::optional<size_t> best;
    Micros best_start{0};
    for (size_t l = 0; l < s.lanes.size(); ++l) {
      if (next[l] >= s.lanes[l].units.size()) continue;
      const std::optional<Micros> start = head_start(l);
      if (start && (!best || *start < best_start)) best = l, best_start = *start;
    }
    BRAID_ASSERT(best.has_value(), "predicted_latency: the lanes deadlock (an invalid schedule)");
    const Lane& lane = s.lanes[*best];
    const UnitId u = lane.units[next[*best]];
    const Micros alone =
        threads[index(u)] > 0 ? cost.unit_latency_at(u, threads[index(u)]) : cost.unit_latency(u);
    Micros end = best_start + alone;
    if (co_run) {
      // Each unit another slot of this device still runs at best_start shares the machine
      // with u: while both run, both progress at 1/f of their speed alone, f the cost model's
      // price of the pair as a stage over the slower of the two alone. v's end moves too; no
      // unit that waits for v has been placed yet (starts are placed in increasing order).
      for (auto& [slot, l] : slot_lane) {
        if (slot.first != lane.device || slot == slot_of(*best)) continue;
        const UnitId v = s.lanes[l].units[next[l] - 1];
        const Micros v_end = *finish[index(v)];
        if (v_end <= best_start) continue;
        const Micros v_alone = cost.unit_latency(v);
        const std::vector<std::vector<UnitId>> pair = {{u}, {v}};
        const Micros slower = std::max(alone, v_alone);
        const double f =
            slower > Micros{0} ? std::max(1.0, cost.stage_latency(pair) / slower) : 1.0;
        const Micros v_left = v_end - best_start, u_left = end - best_start;
        const Micros both = std::min(v_left, u_left);  // work done while both run
        const Micros shared = both * f;
        end = best_start + shared + (u_left - both);
        const Micros v_new = best_start + shared + (v_left - both);
        finish[index(v)] = v_new;
        lane_free[l] = v_new;
        slot_free[slot] = v_new;
        makespan = std::max(makespan, v_new);
      }
      slot_lane[slot_of(*best)] = *best;
    }
    finish[index(u)] = end;
    lane_free[*best] = end;
    slot_free[slot_of(*best)] = end;
    makespan = std::max(makespan, end);
    ++next[*best];
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
