// HIOS's random weighted DAGs (hios.txt §V-A; peers.md §3.1): layered graphs with one source
// and one sink, used to compare schedulers in simulation.
//
//   ir::UnitGraph g = random_dag({.ops = 200, .layers = 14, .edges = 400, .seed = 7});
//   g.num_units();            // 200, ids already a topological order (layer by layer)
//   g.edges().size();         // exactly 400
//   *g.unit(UnitId{5}).latency, *g.edges()[0].transfer
//
// The construction follows HIOS's simulator:
//  1. layer 0 holds the source, the last layer the sink; the middle layers first get
//     `min_width` = ceil(layers / 2) nodes each (fewer when `ops` is too small for that), then
//     repeated passes add 0..min_width nodes per layer (at most 10 x layers per layer) until
//     all `ops` nodes are placed;
//  2. pass 1 links adjacent layers: every node of layer l gets a successor in layer l+1 and
//     every node of layer l+1 a predecessor in layer l, chosen at random (so every node lies
//     on a source-to-sink path); a layering whose pass 1 needs more than `edges` edges is
//     drawn again;
//  3. pass 2 adds random forward edges from a middle layer to a later layer until there are
//     exactly `edges` edges.
// Same options (seed included) = same graph, on every platform: the generator uses its own
// integer arithmetic on std::mt19937_64, never the implementation-defined std distributions.
#pragma once

#include <cstdint>

#include "ir/unit_graph.h"

namespace braid::models {

struct RandomDagOptions {
  int ops = 200;                // nodes, source and sink included
  int layers = 14;              // >= 3: source layer, at least one middle layer, sink layer
  int edges = 400;              // HIOS: 2 x ops
  double min_latency_ms = 0.1;  // node latency ~ uniform [min, max] (HIOS: 0.1 .. 4 ms)
  double max_latency_ms = 4.0;
  // Transfer time of edge u -> v = max(min_transfer_ms, transfer_ratio x latency(u)).
  double transfer_ratio = 0.8;
  double min_transfer_ms = 0.1;
  // Unit utilization ~ uniform [min, max] (HIOS's simulator: 0.6 .. 1), for its stage model.
  double min_utilization = 0.6;
  double max_utilization = 1.0;
  uint64_t seed = 0;
};

// Throws braid::Error(kInvalidArgument) for impossible combinations (fewer ops than layers,
// fewer edges than a connected layering needs, more edges than the layering can hold, ...).
ir::UnitGraph random_dag(const RandomDagOptions& options);

// random_dag with the edge count nearest `target_edges` that the layering admits: tries
// target, target + 1, target - 1, target + 2, ... within [ops - 1, ops (ops - 1) / 2] (what
// seeded property tests want: a graph for every seed, its size drawn at random). Throws
// braid::Error(kInvalidArgument) when no edge count fits.
ir::UnitGraph random_dag_near(RandomDagOptions options, int target_edges);

}  // namespace braid::models
