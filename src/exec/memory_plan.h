// The memory plan: every activation of one request gets an offset in one arena, computed once
// at prepare time. Buffers are reused by happens-before, not by topological index: two tensors
// may share memory only when every reader of one finishes before the writer of the other starts
// in the lowered plan (program order in a lane, or an event). Tensors of units that may run at
// the same time therefore never alias (XNNPACK's lifecycle overlap assumes one sequential order;
// with concurrent lanes that is wrong).
//
//   MemoryPlan m = plan_memory(graph, units, plan);
//   float* x = reinterpret_cast<float*>(arena + m.offset[index(value)]);
#pragma once

#include <cstdint>
#include <vector>

#include "base/ids.h"
#include "base/units.h"
#include "ir/graph.h"
#include "ir/unit_graph.h"
#include "sched/lower.h"

namespace braid::exec {

inline constexpr Bytes kTensorAlignment = 64;  // a cache line; oneDNN's preferred alignment

struct MemoryPlanOptions {
  bool reuse = true;         // false: every tensor its own slot (a debugging aid)
  bool alias_views = true;   // Reshape/Flatten/Identity outputs share their input's storage
};

struct MemoryPlan {
  std::vector<int64_t> offset;      // per ValueId: byte offset in the arena; -1 for parameters
  std::vector<ValueId> storage_of;  // per ValueId: the value whose storage it uses (itself if none)
  Bytes arena_bytes = 0;            // peak: the arena's size
  Bytes unshared_bytes = 0;         // what the activations would need without reuse
};

MemoryPlan plan_memory(const ir::Graph& graph, const ir::UnitGraph& units,
                       const sched::ExecutionPlan& plan, const MemoryPlanOptions& options = {});

}  // namespace braid::exec
