// The exact yardstick: the minimum-latency stream schedule of a small graph, found by branch
// and bound. The heuristics are judged against it (properties_test.cc): none may beat it.
//
//   OptimalScheduler optimal({.max_streams = 2});
//   SearchStats stats;
//   Schedule best = optimal.schedule(units, cost, &stats);  // stats.nodes: search nodes
//   *best.predicted_latency;             // == predicted_latency(units, best, cost), the minimum
//
// The model is predict.h's stream form on one device: at most max_streams lanes (0 =
// unbounded); a unit starts when its lane is free and all its predecessors are done; lanes do
// not slow each other down. It is P|prec|Cmax: any timetable that never runs more than
// max_streams units at once packs into that many lanes. A stage schedule (IOS) runs its groups
// as lanes no later than its stages finish whenever a stage takes its slowest group's sum plus
// a non-negative overhead (cost::DagCostModel), so under such a model no scheduler, stage- or
// stream-based, predicts less than `optimal` with the same max_streams.
//
// Size: the search is exponential, so the graph is solved block by block (ir::block_partition).
// A cut unit is a descendant of every unit before it and an ancestor of every unit after it, so
// in any schedule the blocks run one after another, each starting with every lane free, and
// the sum of the blocks' minima is the whole graph's minimum. A chain block needs no search; a
// block of more than max_block_units units is refused with kInvalidArgument. With two or three
// streams, random 14-unit blocks take milliseconds to a second (optimal_test.cc has timings).
//
// `optimal-threads` (OptimalThreadsScheduler) is the same search on P identical cores
// (allotment_cores, moldable.h) where each unit also picks its threads k in 1..P and takes k
// cores for cost::CostModel::unit_latency_at(u, k): P|prec, moldable|Cmax, the allotment
// schedulers' model (moldable.h), solved exactly. Its plan runs a unit on the stream of its
// lowest core, after the last unit of every core it takes (validate.h rule 9 holds).
//
//   OptimalThreadsScheduler exact({.cores = 2});
//   Schedule plan = exact.schedule(units, cost);   // plan.cores == 2, per-unit Lane::threads
#pragma once

#include <cstdint>

#include "sched/registry.h"

namespace braid::sched {

struct OptimalOptions {
  static constexpr int kDefaultMaxBlockUnits = 16;
  // The largest block (units, chain blocks aside) the search accepts; at most 64.
  int max_block_units = kDefaultMaxBlockUnits;
  // Search nodes per block before giving up with kInvalidArgument (0 = no limit): a yardstick
  // is exact or says so, it never hangs for hours.
  int64_t max_nodes = 100'000'000;
};

// Branch and bound over semi-active list schedules (the serial schedule-generation scheme of
// project scheduling): a search node is a partial schedule, a child places one ready unit on
// one lane at max(lane free, predecessors done, the previous placement's start). Starts never
// decrease along a path, which loses no optimum: an optimal timetable placed in start order
// is such a path. Lanes enter only by their free time: a unit goes on the lane that frees
// up last before it is ready (best fit), or waits for one distinct later free time, the lowest
// index among lanes that free up together; so an empty lane is always the lowest empty one.
// Pruning, all exact:
//  - bounds: the incumbent (first a critical-path list schedule on earliest-free lanes)
//    against max(earliest start + longest remaining path, over unplaced units) and
//    (sum of lane free times + remaining work) / lanes;
//  - dominance: a node whose placed set was reached before with no later lane free times,
//    frontier finish times and last start is skipped (memoized per placed set, up to a
//    memory budget; this also drops the permutations of units placed at the same time).
// Output: lanes with planned start/finish, one sync per cross-lane dependency that program
// order and earlier syncs do not already imply, launch_order = placement order.
class OptimalScheduler final : public Scheduler {
 public:
  // Throws braid::Error: kInvalidArgument for bad options, kUnsupported for num_devices > 1
  // (transfers between devices are outside the model).
  explicit OptimalScheduler(const ScheduleOptions& options = {}, OptimalOptions optimal = {});
  std::string_view name() const override { return "optimal"; }
  using Scheduler::schedule;
  // Throws braid::Error(kInvalidArgument) naming the first block larger than max_block_units.
  Schedule schedule(const ir::UnitGraph& graph, const cost::CostModel& cost,
                    SearchStats* stats = nullptr) const override;

 private:
  ScheduleOptions options_;
  OptimalOptions optimal_;
};

// The branch and bound above with lanes become cores: P = allotment_cores(options, cost)
// identical cores (max_streams is not used: the plan has at most P streams). A child places a
// ready unit u on k cores, for each k whose unit_latency_at(u, k) is below that of every
// smaller k (more cores and no faster is dominated: give the unit the fewer cores at the same
// start and nothing else moves), at start max(ready, last start, the k-th earliest core free
// time), on the k latest-free cores among those free by then. Exactness, as for lanes: placed
// in start order, an optimal timetable (with each unit's allotment reduced to its fastest
// smaller one) is a path whose states are never later than its own, since in clamped time every
// core free by the start counts as free at the start, so which k of them a unit takes changes
// nothing that follows. Bounds use each unit's fastest latency (paths) and its least work
// min_k k x latency spread over the P cores (areas); twins need equal latencies at every k.
// Chain blocks take each unit at its fastest k, on cores 0..k-1. With P = 1 (the default under
// a cost model whose max_threads() is 1) every order is optimal: one lane in id order, no search
// and no block limit. Under a cost model where no unit gains from threads it is `optimal` with
// max_streams = P.
class OptimalThreadsScheduler final : public Scheduler {
 public:
  // Throws braid::Error: kInvalidArgument for bad options, kUnsupported for num_devices > 1.
  explicit OptimalThreadsScheduler(const ScheduleOptions& options = {},
                                   OptimalOptions optimal = {});
  std::string_view name() const override { return "optimal-threads"; }
  using Scheduler::schedule;
  // Throws braid::Error(kInvalidArgument) naming the first block larger than max_block_units
  // (with P >= 2).
  Schedule schedule(const ir::UnitGraph& graph, const cost::CostModel& cost,
                    SearchStats* stats = nullptr) const override;

 private:
  ScheduleOptions options_;
  OptimalOptions optimal_;
};

}  // namespace braid::sched
