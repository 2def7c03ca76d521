// Arithmetic and memory traffic of each op: the raw material of roofline cost models and of
// the compute-/memory-bound classification Opara uses.
#pragma once

#include <cstdint>

#include "base/ids.h"
#include "ir/graph.h"

namespace braid::ir {

// Floating-point operations (a multiply-add counts as 2).
int64_t op_flops(const Graph& graph, NodeId node);
// Bytes read (activations and parameters) plus bytes written, each tensor once.
int64_t op_bytes(const Graph& graph, NodeId node);
// Throws Error(kUnsupported) naming the node when a FLOP count, or the graph's total FLOP or
// byte count, does not fit in int64. ir::fuse calls it, so op_flops and the sums of its callers
// never overflow on a graph that reached a UnitGraph. (Not in GraphBuilder::build, so that a
// loader can first report a tensor over its size limits, the clearer message.)
void check_op_costs(const Graph& graph);

}  // namespace braid::ir
