// Schedulers that choose how many cores each unit gets (an allotment, schedule.h): the plans
// for a CPU, where a unit is a moldable task (1..P cores) and no GPU brings parallelism of its
// own. docs/schedulers.md, section "Allotments", has the reasoning.
//
//   Schedule a = IntraOpScheduler({.cores = 2}).schedule(units, cost);   // every unit on 2
//   Schedule b = MoldableScheduler({.cores = 2}).schedule(units, cost);  // CPA, then list
//
// `intra`: every unit in id order on one stream at `cores` threads: intra-operator parallelism
// only, what ONNX Runtime's sequential executor does with intra_op_num_threads = cores.
//
// `moldable`: two-phase moldable-task scheduling (Radulescu & van Gemund's CPA):
//  1. allotment: every unit starts on one core. While the critical path (unit latencies at
//     their allotments, cost::CostModel::unit_latency_at) is longer than the average area
//     (Σ threads x latency / cores), the critical-path unit whose latency drops most from one
//     more core gets it;
//  2. list scheduling: ready units by bottom level (longest allotted path to a sink), each
//     placed at its earliest finish over 1..its allotment cores, on the cores free earliest.
// A unit runs on the stream of its lowest core and waits (a sync) for the last unit of each
// other core it takes and for its producers on other streams, so units sharing a core are
// ordered and the plan's concurrent work never exceeds `cores` (validate.h rule 9).
#pragma once

#include "sched/registry.h"

namespace braid::sched {

class IntraOpScheduler final : public Scheduler {
 public:
  explicit IntraOpScheduler(const ScheduleOptions& options = {}) : options_(options) {}
  std::string_view name() const override { return "intra"; }
  using Scheduler::schedule;
  Schedule schedule(const ir::UnitGraph& graph, const cost::CostModel& cost,
                    SearchStats* stats = nullptr) const override;

 private:
  ScheduleOptions options_;
};

class MoldableScheduler final : public Scheduler {
 public:
  explicit MoldableScheduler(const ScheduleOptions& options = {}) : options_(options) {}
  std::string_view name() const override { return "moldable"; }
  using Scheduler::schedule;
  Schedule schedule(const ir::UnitGraph& graph, const cost::CostModel& cost,
                    SearchStats* stats = nullptr) const override;

 private:
  ScheduleOptions options_;
};

// The cores an allotment scheduler plans for: options.cores, else the cost model's
// max_threads(). A cost model asked for more threads than it prices throws (unit_latency_at).
int allotment_cores(const ScheduleOptions& options, const cost::CostModel& cost);

}  // namespace braid::sched
