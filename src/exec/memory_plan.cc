#include "exec/memory_plan.h"

#include <algorithm>
#include <optional>

#include "base/error.h"
#include "ir/analysis.h"

namespace braid::exec {
namespace {

// The bytes `v`'s storage takes under `options`.
Bytes storage_bytes(const ir::Graph& g, const MemoryPlanOptions& options, ValueId v) {
  return options.value_bytes ? options.value_bytes(v) : g.value(v).type.bytes();
}

// Where a value lies when it has no storage of its own: `bytes` into `value`'s storage.
struct Placement {
  ValueId value{};
  Bytes bytes = 0;
  bool is_view = false;  // a view's unit only reads; a Concat input's producer writes
};

// The lifetime of one storage: a root value, its views, and the Concat inputs placed in it.
struct Lifetime {
  ValueId root{};
  Bytes bytes = 0;
  std::vector<UnitId> writers;  // none: a graph input, written before the run
  std::vector<UnitId> readers;
  bool pinned = false;  // graph inputs and outputs live for the whole run
  int64_t offset = -1;
};

// Places the inputs of every Concat that can take them all in their windows.
void place_concat_inputs(const ir::Graph& g, const MemoryPlanOptions& options,
                         std::vector<std::optional<Placement>>& placement,
                         std::vector<NodeId>& in_place) {
  if (!options.concat_in_place) return;
  std::vector<int> concat_uses(g.num_values(), 0);
  for (const ir::Node& n : g.nodes())
    if (n.kind == ir::OpKind::Concat)
      for (ValueId v : n.inputs) ++concat_uses[index(v)];

  for (size_t i = 0; i < g.num_nodes(); ++i) {
    const ir::Node& n = g.node(make_id<NodeId>(i));
    if (n.kind != ir::OpKind::Concat) continue;
    const ValueId out = n.outputs.front();
    const ir::Shape& shape = g.value(out).type.shape;
    int64_t axis = std::get<ir::AxisAttrs>(n.attrs).axis;
    if (axis < 0) axis += static_cast<int64_t>(shape.size());
    int64_t outer = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= shape[d];
    if (outer != 1) continue;  // the windows are strided, not contiguous
    bool all = true;
    int64_t offset = 0;
    for (ValueId v : n.inputs) {
      const ir::Value& value = g.value(v);
      all = all && value.kind == ir::ValueKind::kActivation && !g.is_output(v) &&
            concat_uses[index(v)] == 1 && !placement[index(v)] &&
            !(options.alias_views && ir::is_view(g.node(value.producer).kind)) &&
            options.concat_in_place(v, out, offset);
      offset += value.type.shape[axis];
    }
    if (!all) continue;
    const Bytes per_slice = storage_bytes(g, options, out) / shape[axis];
    offset = 0;
    for (ValueId v : n.inputs) {
      placement[index(v)] = Placement{out, offset * per_slice, false};
      offset += g.value(v).type.shape[axis];
    }
    in_place.push_back(make_id<NodeId>(i));
  }
}

}  // namespace

MemoryPlan plan_memory(const ir::Graph& g, const ir::UnitGraph& units,
                       const sched::ExecutionPlan& plan, const MemoryPlanOptions& options) {
  const size_t num_values = g.num_values();
  MemoryPlan m;
  m.offset.assign(num_values, -1);
  m.storage_of.resize(num_values);

  // Views lie in their input's storage (never a parameter's: kernels write activations).
  std::vector<std::optional<Placement>> placement(num_values);
  if (options.alias_views) {
    for (const ir::Node& n : g.nodes()) {
      if (!ir::is_view(n.kind)) continue;
      ValueId in = n.inputs.front();
      if (g.value(in).kind == ir::ValueKind::kParameter) continue;
      placement[index(n.outputs.front())] = Placement{in, 0, true};
    }
  }
  place_concat_inputs(g, options, placement, m.in_place_concats);

  // Follow placements to the root storage; `within` is the byte offset inside it.
  std::vector<Bytes> within(num_values, 0);
  for (size_t v = 0; v < num_values; ++v) {
    ValueId at = make_id<ValueId>(v);
    Bytes bytes = 0;
    for (size_t hops = 0; placement[index(at)]; ++hops) {
      BRAID_ASSERT(hops <= num_values, "memory plan: placements form a cycle");
      bytes += placement[index(at)]->bytes;
      at = placement[index(at)]->value;
    }
    m.storage_of[v] = at;
    within[v] = bytes;
  }

  std::vector<int64_t> lifetime_of(num_values, -1);
  std::vector<Lifetime> lifetimes;
  for (size_t v = 0; v < num_values; ++v) {
    const ir::Value& value = g.value(make_id<ValueId>(v));
    if (value.kind == ir::ValueKind::kParameter) continue;
    ValueId root = m.storage_of[v];
    if (lifetime_of[index(root)] < 0) {
      lifetime_of[index(root)] = static_cast<int64_t>(lifetimes.size());
      Lifetime l;
      l.root = root;
      l.bytes = storage_bytes(g, options, root);
      lifetimes.push_back(l);
    }
    Lifetime& l = lifetimes[lifetime_of[index(root)]];
    for (NodeId c : value.consumers) l.readers.push_back(units.unit_of(c));
    if (value.kind == ir::ValueKind::kActivation) {
      // A view is computed by its own unit from the storage it lies in: that unit reads.
      const bool view = placement[v] && placement[v]->is_view;
      (view ? l.readers : l.writers).push_back(units.unit_of(value.producer));
    }
    // Graph inputs are written before the run and outputs read after it.
    if (g.is_output(make_id<ValueId>(v)) || value.kind == ir::ValueKind::kInput) l.pinned = true;
  }

  // Dependences are a subset of any valid plan's happens-before (a plan orders every edge).
  const std::vector<std::vector<bool>> reach = options.order == ReuseOrder::kDependences
                                                   ? ir::transitive_closure(units)
                                                   : std::vector<std::vector<bool>>{};
  const auto& hb = options.order == ReuseOrder::kDependences ? reach : plan.happens_before;
  // a is done before b starts when every unit that touches a (writers and readers) happens
  // before every writer of b. Pinned storage is never handed on.
  auto done_before = [&](const Lifetime& a, const Lifetime& b) {
    if (a.pinned || b.writers.empty()) return false;
    for (UnitId w : b.writers) {
      const size_t p = index(w);
      for (UnitId x : a.writers)
        if (!hb[index(x)][p]) return false;
      for (UnitId r : a.readers)
        if (!hb[index(r)][p]) return false;
    }
    return true;
  };

  // First fit in order of first writer; larger tensors first among ties keeps the arena tight.
  auto first_writer = [&](const Lifetime& l) {
    size_t first = 0;  // 0: no writer (a graph input)
    for (UnitId w : l.writers) first = first == 0 ? index(w) + 1 : std::min(first, index(w) + 1);
    return first;
  };
  std::vector<size_t> order(lifetimes.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const size_t fa = first_writer(lifetimes[a]), fb = first_writer(lifetimes[b]);
    if (fa != fb) return fa < fb;
    return lifetimes[a].bytes > lifetimes[b].bytes;
  });
  BRAID_ASSERT(options.alignment > 0, "memory plan: alignment must be positive");
  auto align = [&](Bytes n) {
    return (n + options.alignment - 1) / options.alignment * options.alignment;
  };
  std::vector<size_t> placed;
  for (size_t i : order) {
    Lifetime& l = lifetimes[i];
    const Bytes size = align(l.bytes);
    m.unshared_bytes += size;
    std::vector<std::pair<int64_t, int64_t>> busy;  // [begin, end) of conflicting placed storage
    for (size_t j : placed) {
      const Lifetime& other = lifetimes[j];
      bool disjoint = options.reuse && (done_before(other, l) || done_before(l, other));
      if (!disjoint) busy.push_back({other.offset, other.offset + align(other.bytes)});
    }
    std::sort(busy.begin(), busy.end());
    int64_t offset = 0;
    for (auto [begin, end] : busy) {
      if (offset + size <= begin) break;
      offset = std::max(offset, end);
    }
    l.offset = offset;
    m.arena_bytes = std::max(m.arena_bytes, offset + size);
    placed.push_back(i);
  }
  for (size_t v = 0; v < num_values; ++v) {
    if (g.value(make_id<ValueId>(v)).kind == ir::ValueKind::kParameter) continue;
    m.offset[v] = lifetimes[lifetime_of[index(m.storage_of[v])]].offset + within[v];
  }
  return m;
}

}  // namespace braid::exec
