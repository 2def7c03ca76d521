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
#include <functional>
#include <vector>

#include "base/ids.h"
#include "base/units.h"
#include "ir/graph.h"
#include "ir/unit_graph.h"
#include "sched/lower.h"

namespace braid::exec {

inline constexpr Bytes kTensorAlignment = 64;  // a cache line; oneDNN's preferred alignment

// Whether the executor's kernels can write `input` straight into its window of `concat` (the
// Concat's output), `offset` elements into the axis: a question of layouts the plan cannot see.
using ConcatInPlace = std::function<bool(ValueId input, ValueId concat, int64_t offset)>;

// Which order buffer reuse may rely on.
enum class ReuseOrder : uint8_t {
  kPlan,         // the lowered plan's happens-before (program order in a lane, events)
  kDependences,  // the units' dependences alone: any order that respects them is safe (units
                 // run outside the plan, e.g. the CPU executor's unit runs); a larger arena
};

struct MemoryPlanOptions {
  bool reuse = true;  // false: every tensor its own slot (a debugging aid)
  ReuseOrder order = ReuseOrder::kPlan;
  bool alias_views = true;  // Reshape/Flatten/Identity outputs share their input's storage
  // Set: a Concat whose every input can be placed in its window (the window is contiguous,
  // i.e. the dims before the axis are all 1; the input is an activation that no other Concat
  // takes and that is neither a view nor a graph output; the predicate agrees) gets its inputs
  // written there by their producers, and copies nothing. Empty: every Concat copies.
  ConcatInPlace concat_in_place;
  // Set: the bytes a value's storage takes, for an executor that stores a type otherwise than
  // the graph says (CUDA's 16-bit plans store float32 values in 2 bytes). Empty: the type's
  // bytes. The lifetimes and the reuse between them do not depend on it, only the sizes.
  std::function<Bytes(ValueId)> value_bytes;
  Bytes alignment = kTensorAlignment;  // of every storage's offset and size
};

struct MemoryPlan {
  std::vector<int64_t> offset;      // per ValueId: byte offset in the arena; -1 for parameters
  std::vector<ValueId> storage_of;  // per ValueId: the value whose storage it lies in (or itself)
  std::vector<NodeId> in_place_concats;  // Concats whose inputs already sit in their windows
  Bytes arena_bytes = 0;                 // peak: the arena's size
  Bytes unshared_bytes = 0;              // what the activations would need without reuse
};

MemoryPlan plan_memory(const ir::Graph& graph, const ir::UnitGraph& units,
                       const sched::ExecutionPlan& plan, const MemoryPlanOptions& options = {});

}  // namespace braid::exec
