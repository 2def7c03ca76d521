// Structural analyses of a UnitGraph that schedulers and reports share: topological orders,
// the critical path under a cost vector, the width (largest antichain) and IOS's blocks.
//
//   std::vector<double> cost(units.num_units(), 1.0);
//   CriticalPath cp = critical_path(units, cost);   // cp.length, cp.units
//   size_t w = width(units);                         // Dilworth: n - max matching
//   std::vector<Block> blocks = block_partition(units);
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/ids.h"
#include "ir/unit_graph.h"

namespace braid::ir {

// A uniformly shuffled topological order (random Kahn choice), reproducible from `seed`.
std::vector<UnitId> random_topo_order(const UnitGraph& g, uint64_t seed);
bool is_topological(const UnitGraph& g, std::span<const UnitId> order);

struct CriticalPath {
  double length = 0;
  std::vector<UnitId> units;  // source to sink
};
// Longest path where each unit costs unit_cost[u] and, if given, each edge edge_cost[e]
// (indexed like UnitGraph::edges()).
CriticalPath critical_path(const UnitGraph& g, std::span<const double> unit_cost,
                           std::span<const double> edge_cost = {});

// Size of the largest antichain: the most units that may run at once. By Dilworth's theorem,
// n minus a maximum matching in the bipartite graph of the transitive closure (Boost.Graph).
size_t width(const UnitGraph& g);

// Transitive closure as one bitset row per unit: reach[u][v] = v is reachable from u (u != v).
std::vector<std::vector<bool>> transitive_closure(const UnitGraph& g);

// Cut units: those that every source-to-sink path crosses (ios.txt §4.3's block boundaries).
std::vector<bool> cut_units(const UnitGraph& g);

// IOS's blocks: a block is either a maximal run of consecutive cut units (a chain, such as a
// stem) or the units between two cuts plus the cut that closes them (an Inception module
// ending at its Concat). The optimizer never looks across block boundaries.
struct Block {
  std::vector<UnitId> units;  // topological order
  bool is_chain = false;
};
std::vector<Block> block_partition(const UnitGraph& g);

}  // namespace braid::ir
