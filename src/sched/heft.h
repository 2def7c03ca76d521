// HEFT (Topcuoglu, Hariri and Wu, "Performance-effective and low-complexity task scheduling
// for heterogeneous computing", IEEE TPDS 2002) on the streams of one device: critical-path
// list scheduling.
//
//   Schedule s = HeftScheduler({.max_streams = 4}).schedule(units, cost);
//
//  1. Upward rank: rank(v) = latency(v) + max over successors s of rank(s) (0 for a sink), the
//     longest path from v to the end. Streams of one device share memory, so the
//     communication term of HEFT is 0.
//  2. Units are taken in decreasing rank (ties: lowest unit id), which is a topological order.
//  3. Each goes on the stream where it finishes earliest, ties to the first stream. HEFT's
//     insertion policy applies: a unit may fill an idle gap between two units already on a
//     stream when it fits there after its predecessors finish; otherwise it goes after the
//     stream's last unit. Units of zero latency are only appended (a zero-length unit slid in
//     front of an equal-time predecessor would make a lane run backwards).
// max_streams bounds the streams (0: a fresh stream is always a candidate). Lanes list their
// units by planned start time, with planned start/finish (exactly what sched/predict.h
// simulates; Schedule::predicted_latency is their makespan); the graph's edges between lanes
// become syncs. All lanes are on device 0.
#pragma once

#include "sched/registry.h"

namespace braid::sched {

class HeftScheduler final : public Scheduler {
 public:
  explicit HeftScheduler(const ScheduleOptions& options = {});
  std::string_view name() const override { return "heft"; }
  using Scheduler::schedule;
  Schedule schedule(const ir::UnitGraph& graph, const cost::CostModel& cost,
                    SearchStats* stats = nullptr) const override;

 private:
  ScheduleOptions options_;
};

// HEFT's upward rank of every unit under `cost` (indexed by unit id).
std::vector<Micros> upward_rank(const ir::UnitGraph& graph, const cost::CostModel& cost);

}  // namespace braid::sched
