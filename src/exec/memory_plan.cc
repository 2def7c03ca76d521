#include "exec/memory_plan.h"

#include <algorithm>

#include "base/error.h"

namespace braid::exec {
namespace {

Bytes align(Bytes n) { return (n + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment; }

// The lifetime of one storage (a root value and every view of it).
struct Lifetime {
  ValueId root{};
  Bytes bytes = 0;
  std::optional<UnitId> producer;  // none: a graph input, written before the run
  std::vector<UnitId> readers;
  bool pinned = false;             // graph outputs (and inputs of nothing) live to the end
  int64_t offset = -1;
};

}  // namespace

MemoryPlan plan_memory(const ir::Graph& g, const ir::UnitGraph& units,
                       const sched::ExecutionPlan& plan, const MemoryPlanOptions& options) {
  const size_t num_values = g.num_values();
  MemoryPlan m;
  m.offset.assign(num_values, -1);
  m.storage_of.resize(num_values);
  for (size_t v = 0; v < num_values; ++v) m.storage_of[v] = make_id<ValueId>(v);

  // Views alias their input's storage (never a parameter's: kernels write activations).
  if (options.alias_views) {
    for (const ir::Node& n : g.nodes()) {
      if (!ir::is_view(n.kind)) continue;
      ValueId in = n.inputs.front();
      if (g.value(in).kind == ir::ValueKind::kParameter) continue;
      m.storage_of[index(n.outputs.front())] = m.storage_of[index(in)];
    }
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
      l.bytes = g.value(root).type.bytes();
      if (g.value(root).kind == ir::ValueKind::kActivation) l.producer = units.unit_of(g.value(root).producer);
      lifetimes.push_back(l);
    }
    Lifetime& l = lifetimes[lifetime_of[index(root)]];
    for (NodeId c : value.consumers) l.readers.push_back(units.unit_of(c));
    // A view is written by the view's own unit (a copy when not aliased): that unit reads too.
    if (value.kind == ir::ValueKind::kActivation && make_id<ValueId>(v) != root)
      l.readers.push_back(units.unit_of(value.producer));
    if (g.is_output(make_id<ValueId>(v))) l.pinned = true;
  }
  for (size_t v = 0; v < num_values; ++v) {
    // An input that aliases an output, or a graph input, keeps its own memory to the end.
    if (g.value(make_id<ValueId>(v)).kind == ir::ValueKind::kInput) lifetimes[lifetime_of[v]].pinned = true;
  }

  const auto& hb = plan.happens_before;
  // a is done before b starts when every unit that touches a (its producer and its readers)
  // happens before b's producer. Graph inputs and outputs are pinned: never reused.
  auto done_before = [&](const Lifetime& a, const Lifetime& b) {
    if (a.pinned || !b.producer) return false;
    const size_t p = index(*b.producer);
    if (a.producer && !hb[index(*a.producer)][p]) return false;
    for (UnitId r : a.readers)
      if (!hb[index(r)][p]) return false;
    return true;
  };

  // First fit in producer order; larger tensors first among ties keeps the arena tight.
  std::vector<size_t> order(lifetimes.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto producer_rank = [&](const Lifetime& l) { return l.producer ? index(*l.producer) + 1 : 0; };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (producer_rank(lifetimes[a]) != producer_rank(lifetimes[b]))
      return producer_rank(lifetimes[a]) < producer_rank(lifetimes[b]);
    return lifetimes[a].bytes > lifetimes[b].bytes;
  });
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
    m.offset[v] = lifetimes[lifetime_of[index(m.storage_of[v])]].offset;
  }
  return m;
}

}  // namespace braid::exec
