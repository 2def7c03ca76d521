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

}  // namespace braid::ir
