// The baseline schedulers that need no cost model (peers.md §1.7).
//
//   Schedule a = SequentialScheduler().schedule(units);             // one stream, id order
//   Schedule b = GreedyScheduler({.max_streams = 10}).schedule(units);  // IOS's greedy
#pragma once

#include "sched/registry.h"

namespace braid::sched {

// Every unit on one stream (device 0, stream 0) in unit id order, which is topological. The
// stream-based form with a single lane: no syncs, no barriers.
class SequentialScheduler final : public Scheduler {
 public:
  explicit SequentialScheduler(const ScheduleOptions& = {}) {}
  std::string_view name() const override { return "sequential"; }
  using Scheduler::schedule;
  Schedule schedule(const ir::UnitGraph& graph, const cost::CostModel& cost,
                    SearchStats* stats = nullptr) const override;
};

// IOS's greedy baseline (Block.greedy_schedule): a Kahn wavefront. The ready units form one
// concurrent stage of singleton groups, at most max_streams of them (ready units beyond that
// wait for the next stage, ahead of newly ready ones); then the units made ready by the stage
// join the frontier. Ties by unit id. With max_streams = 0 (unbounded), stage k holds the
// units whose longest path from a source has k + 1 units.
class GreedyScheduler final : public Scheduler {
 public:
  explicit GreedyScheduler(const ScheduleOptions& options = {});
  std::string_view name() const override { return "greedy"; }
  using Scheduler::schedule;
  Schedule schedule(const ir::UnitGraph& graph, const cost::CostModel& cost,
                    SearchStats* stats = nullptr) const override;

 private:
  ScheduleOptions options_;
};

}  // namespace braid::sched
