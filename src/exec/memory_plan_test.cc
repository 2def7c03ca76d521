#include "exec/memory_plan.h"

#include <gtest/gtest.h>

#include "models/zoo.h"
#include "sched/lower.h"
#include "sched/registry.h"

namespace braid::exec {
namespace {

struct Planned {
  std::shared_ptr<const ir::Graph> graph;
  ir::UnitGraph units;
  sched::ExecutionPlan plan;
  MemoryPlan memory;
};

Planned plan_for(const std::string& model, const std::string& algo, const MemoryPlanOptions& options = {}) {
  Planned p;
  p.graph = std::make_shared<const ir::Graph>(models::build_zoo_model(model));
  p.units = ir::fuse(p.graph);
  p.plan = sched::lower(p.units, sched::make_scheduler(algo)->schedule(p.units));
  p.memory = plan_memory(*p.graph, p.units, p.plan, options);
  return p;
}

// Two tensors whose lifetimes may overlap in time (given the plan's happens-before) must not
// share bytes; otherwise one unit overwrites what another still reads.
void expect_no_live_overlap(const Planned& p) {
  const ir::Graph& g = *p.graph;
  const auto& hb = p.plan.happens_before;
  auto touching = [&](ValueId root) {
    std::vector<UnitId> units;
    for (size_t v = 0; v < g.num_values(); ++v) {
      if (p.memory.storage_of[v] != root) continue;
      const ir::Value& value = g.value(make_id<ValueId>(v));
      if (value.kind == ir::ValueKind::kActivation) units.push_back(p.units.unit_of(value.producer));
      for (NodeId c : value.consumers) units.push_back(p.units.unit_of(c));
    }
    return units;
  };
  std::vector<ValueId> roots;
  for (size_t v = 0; v < g.num_values(); ++v)
    if (g.value(make_id<ValueId>(v)).kind != ir::ValueKind::kParameter && index(p.memory.storage_of[v]) == v)
      roots.push_back(make_id<ValueId>(v));
  auto has = [&](ValueId root, auto pred) {
    for (size_t v = 0; v < g.num_values(); ++v)
      if (p.memory.storage_of[v] == root && pred(make_id<ValueId>(v))) return true;
    return false;
  };
  auto is_input = [&](ValueId v) { return g.value(v).kind == ir::ValueKind::kInput; };
  auto is_output = [&](ValueId v) { return g.is_output(v); };
  for (size_t i = 0; i < roots.size(); ++i) {
    for (size_t j = i + 1; j < roots.size(); ++j) {
      ValueId a = roots[i], b = roots[j];
      int64_t a0 = p.memory.offset[index(a)], a1 = a0 + g.value(a).type.bytes();
      int64_t b0 = p.memory.offset[index(b)], b1 = b0 + g.value(b).type.bytes();
      if (a1 <= b0 || b1 <= a0) continue;  // disjoint bytes
      // Graph inputs are written before the run: nothing may share their bytes.
      ASSERT_FALSE(has(a, is_input) || has(b, is_input)) << g.value(a).name << " / " << g.value(b).name;
      auto ua = touching(a), ub = touching(b);
      auto all_before = [&](const std::vector<UnitId>& x, const std::vector<UnitId>& y) {
        for (UnitId u : x)
          for (UnitId w : y)
            if (!hb[index(u)][index(w)]) return false;
        return true;
      };
      // Graph outputs live to the end: whatever shares their bytes must come before them.
      const bool a_first = all_before(ua, ub) && !has(a, is_output);
      const bool b_first = all_before(ub, ua) && !has(b, is_output);
      EXPECT_TRUE(a_first || b_first)
          << "'" << g.value(a).name << "' and '" << g.value(b).name << "' share bytes while both may be live";
    }
  }
}

TEST(MemoryPlan, SequentialReusesAndNeverOverlapsLiveTensors) {
  Planned p = plan_for("inception_v3", "sequential");
  EXPECT_LT(p.memory.arena_bytes, p.memory.unshared_bytes / 4);
  expect_no_live_overlap(p);
}

TEST(MemoryPlan, ConcurrentStagesKeepTheirTensorsApart) {
  for (const char* model : {"inception_v3", "squeezenet", "randwire"}) {
    Planned p = plan_for(model, "greedy");
    expect_no_live_overlap(p);
    EXPECT_LT(p.memory.arena_bytes, p.memory.unshared_bytes) << model;
  }
}

TEST(MemoryPlan, NoReuseGivesEveryTensorItsOwnSlot) {
  Planned p = plan_for("squeezenet", "sequential", {.reuse = false});
  EXPECT_EQ(p.memory.arena_bytes, p.memory.unshared_bytes);
}

}  // namespace
}  // namespace braid::exec
