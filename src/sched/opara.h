// Opara (opara.txt §3; peers.md §4): stream allocation by inheritance (Algorithm 1) and a
// resource- and interference-aware launch order (Algorithm 2).
//
//   Schedule s = OparaScheduler().schedule(units);   // lanes + syncs + launch_order
//   s.launch_order                                    // the order one host thread issues
//
// Algorithm 2 (launch order) runs first, as in Opara's code (OperatorLauncher.recompile reorders
// the graph before StreamAllocator visits it): a Kahn topological sort with two ready lists,
// memory-bound and compute-bound units. While both lists are non-empty it alternates between
// them, starting with the compute-bound list (the paper says "alternately choose a non-empty
// list"; Opara's code starts with the non-memory queue); when one is empty it takes the other.
// From the chosen list it takes the unit of least resource demand.
//
// Algorithm 1 (streams) visits the units in launch order. A unit inherits the stream of its
// first predecessor (by unit id) that has not yet passed its stream on; that predecessor's
// stream is then taken (Opara's code keeps one flag per node, so "v is the first successor of
// p" means the first successor to claim p's stream). Otherwise the unit opens a new stream. So
// every source opens a stream, a fork keeps its stream for one successor, and a join continues
// one predecessor's stream: the streams are a greedy path cover. A lane lists its units in
// launch order; every graph edge between streams is a sync (Opara's event_to_wait).
//
// Unit class and resource demand on braid's data, from what the cost model's device knows
// (CostModel::unit_resources: the simulator answers from its kernels, the CUDA profiler from the
// kernels it can query; the CPU profiler, the roofline and weighted DAGs answer nothing):
//  - class: Unit::unit_class when known (a .dag.json "kind"); else the device's answer (the
//    unit's FLOPs over its DRAM bytes against the device's own ridge point); else, where the
//    cost model answers nothing, arithmetic intensity flops / bytes against the roofline's ridge
//    point (cost/roofline.h defaults: 100 GFLOP/s over 20 GB/s = 5 FLOP/byte): below it
//    memory-bound, else compute-bound. A unit with neither flops nor bytes is compute-bound
//    (Opara: not in its memory-intensive table).
//  - demand: the per-block resources of the unit's first kernel, Unit::resources when given,
//    else the device's answer, compared by shared memory (the metric Opara's code uses; its
//    ratio to the device's per-block limit orders as the bytes do), then threads, then
//    registers; units with resources go before units without (Opara picks a node without
//    kernel info only when no queued node has any). Without resources: the unit's bytes moved
//    (its working set). Ties: lowest id.
// Opara needs no latencies: the cost model is asked only for unit_resources. max_streams is
// ignored (Opara opens as many streams as its allocation needs; the count is at most the number
// of sources plus forks). All lanes are on device 0.
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "sched/registry.h"

namespace braid::sched {

class OparaScheduler final : public Scheduler {
 public:
  explicit OparaScheduler(const ScheduleOptions& = {}) {}
  std::string_view name() const override { return "opara"; }
  using Scheduler::schedule;
  Schedule schedule(const ir::UnitGraph& graph, const cost::CostModel& cost,
                    SearchStats* stats = nullptr) const override;
};

// The roofline ridge point that splits memory- from compute-bound units (FLOP per byte).
double opara_ridge_point();
// The class Opara gives `u` (never kUnknown), given what the device knows of it.
ir::UnitClass opara_unit_class(const ir::Unit& u,
                               const std::optional<cost::UnitResources>& device = std::nullopt);
// Algorithm 2 alone: the launch order of every unit, asking `cost` (may be null: nothing known)
// for the units' resources.
std::vector<UnitId> opara_launch_order(const ir::UnitGraph& graph,
                                       const cost::CostModel* cost = nullptr);
// Algorithm 1 alone: the stream of every unit (indexed by unit id), visiting `launch_order`.
std::vector<int> opara_streams(const ir::UnitGraph& graph, std::span<const UnitId> launch_order);

}  // namespace braid::sched
