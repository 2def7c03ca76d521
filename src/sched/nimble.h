// Nimble's stream assignment (Kwon et al., NeurIPS 2020; peers.md §5.2): the most logical
// concurrency with the fewest streams and few synchronizations, from the graph alone (no cost
// model).
//
//   Schedule s = NimbleScheduler().schedule(units);   // lanes + syncs; no planned times
//   num_streams(s) == ir::width(units)                 // Dilworth
//
//  1. Minimum equivalent graph (MEG): the transitive reduction, the edges u -> v with no
//     other path from u to v. Only these need a wait.
//  2. Nimble's maximum matching on the bipartite graph of the MEG (left copy u, right copy v
//     per MEG edge): its matched edges chain the units into a minimum path cover of the MEG,
//     so as many MEG edges as possible stay inside a chain and need no sync.
//  3. Streams: the chains are merged into streams. Nimble's code matches again on a "chain DAG"
//     (chain i before chain j when the end of i reaches the start of j), but that can leave
//     more streams than the graph's width: fixed paths may overlap pairwise although their
//     units could be regrouped into fewer chains (one stream too many on 7 of 3,000 random
//     G(n, p) DAGs of 3-12 nodes, replaying Nimble's Kuhn matching). braid instead takes
//     the matching of step 2 as the start of a maximum matching of the transitive closure
//     (Boost's Edmonds augmentation keeps it and augments): a minimum chain cover of the
//     closure, exactly width streams (Dilworth), that keeps step 2's chains wherever the
//     augmenting paths leave them alone.
//  4. One lane per stream, its units in id (topological) order; a sync for every MEG edge
//     whose ends lie on different streams. Every other graph edge is implied by a path of MEG
//     edges, each ordered by its lane or its sync.
// Nimble decides the stream count itself: max_streams is ignored (the width is the most units
// that can ever run at once, so more streams would never be used). All lanes are on device 0.
// stats: "meg_edges", "chains" (step 2's path cover) and "syncs".
#pragma once

#include <utility>
#include <vector>

#include "sched/registry.h"

namespace braid::sched {

class NimbleScheduler final : public Scheduler {
 public:
  explicit NimbleScheduler(const ScheduleOptions& = {}) {}
  std::string_view name() const override { return "nimble"; }
  using Scheduler::schedule;
  Schedule schedule(const ir::UnitGraph& graph, const cost::CostModel& cost,
                    SearchStats* stats = nullptr) const override;
};

// The minimum equivalent graph (transitive reduction) of a DAG, sorted by (from, to).
std::vector<std::pair<UnitId, UnitId>> minimum_equivalent_graph(const ir::UnitGraph& graph);

}  // namespace braid::sched
