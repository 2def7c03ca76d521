// HIOS (hios.txt §IV): scheduling one inference over M devices, in two steps.
//
//  1. Inter-device mapping, one of:
//     - HIOS-LP (Algorithm 1): repeatedly take the longest *valid* path of the still unmapped
//       units — counting unit latencies and transfer times, plus the edges that enter it from
//       and leave it to mapped units; its intermediate units may have no edge to or from a
//       mapped unit — and put it on the device where the mapped units then finish first.
//       Each try schedules the mapped units in descending priority (the longest path from a
//       unit to the end, unit and transfer weights), each at the end of its device's timeline
//       once its inputs (plus transfers from other devices) are there.
//     - HIOS-MR (Algorithm 3): an n x M table over the units in priority order; entry (i, j)
//       is the earliest finish of unit i on device j over the recorded mappings of units
//       0..i-1 (unit i-1 on each device k, each with its own back-pointer chain).
//  2. Intra-device parallelization (`parallelize`, Algorithm 2): along the priority order, the
//     window of a unit and up to `window - 1` units that follow it on its device becomes one
//     concurrent stage when they are independent, merging them creates no cycle among the
//     stages of all devices, and the rescheduled latency (each device's stages kept in order,
//     each at its earliest start) drops; the best window size per unit wins.
// The "-inter" variants stop after step 1 (each unit a stage of its own), as in the paper's
// ablations. Stage latencies come from cost.stage_latency (one unit per stream), transfers from
// cost.transfer_latency. The result is a stage-form schedule with one transfer per edge between
// devices; its predicted latency is exactly sched::predicted_latency's.
// Under cost.start_rule() == kProducerDevice (`--cost hios:start=code`: HIOS's simulator code,
// peers.md §3.1) steps 1 (LP's tries) and 2 take the units in id order and start each at
// max(its device's timeline, each producer device's current timeline + transfer); HIOS-MR's
// table still uses producers' finish times, as HIOS's `hios_pdp` does.
//
//   ScheduleOptions o{.num_devices = 4, .window = 2};
//   Schedule s = make_scheduler("hios-lp", o)->schedule(units, cost);
#pragma once

#include <vector>

#include "sched/registry.h"

namespace braid::sched {

enum class HiosMapping { kLongestPath, kMappingRecording };

class HiosScheduler final : public Scheduler {
 public:
  HiosScheduler(HiosMapping mapping, bool intra_device, const ScheduleOptions& options);
  std::string_view name() const override;
  using Scheduler::schedule;
  Schedule schedule(const ir::UnitGraph& graph, const cost::CostModel& cost,
                    SearchStats* stats = nullptr) const override;

 private:
  HiosMapping mapping_;
  bool intra_device_;
  ScheduleOptions options_;
};

std::unique_ptr<Scheduler> make_hios_lp_scheduler(const ScheduleOptions& options);
std::unique_ptr<Scheduler> make_hios_lp_inter_scheduler(const ScheduleOptions& options);
std::unique_ptr<Scheduler> make_hios_mr_scheduler(const ScheduleOptions& options);
std::unique_ptr<Scheduler> make_hios_mr_inter_scheduler(const ScheduleOptions& options);

// HIOS's priority indicator of every unit (by unit id): the longest path from it to the end of
// the graph, counting unit latencies and transfer times.
std::vector<Micros> hios_priority(const ir::UnitGraph& graph, const cost::CostModel& cost);

}  // namespace braid::sched
