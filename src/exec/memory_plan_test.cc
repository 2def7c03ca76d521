#include "exec/memory_plan.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "exec/cpu/layout.h"
#include "ir/analysis.h"
#include "models/zoo.h"
#include "sched/lower.h"
#include "sched/random_schedule.h"
#include "sched/registry.h"

namespace braid::exec {
namespace {

struct Planned {
  std::shared_ptr<const ir::Graph> graph;
  ir::UnitGraph units;
  sched::ExecutionPlan plan;
  MemoryPlan memory;
};

Planned plan_for(const std::string& model, const std::string& algo,
                 const MemoryPlanOptions& options = {}, const models::ZooOptions& zoo = {}) {
  Planned p;
  p.graph = std::make_shared<const ir::Graph>(models::build_zoo_model(model, zoo));
  p.units = ir::fuse(p.graph);
  // "random:SEED": a random valid schedule on 3 streams.
  p.plan = sched::lower(p.units,
                        algo.starts_with("random:")
                            ? sched::random_stream_schedule(p.units, 3, std::stoul(algo.substr(7)))
                            : sched::make_scheduler(algo)->schedule(p.units));
  p.memory = plan_memory(*p.graph, p.units, p.plan, options);
  return p;
}

// Two tensors whose lifetimes may overlap in time (given a happens-before: the plan's unless
// another is given) must not share bytes; otherwise one unit overwrites what another reads.
std::vector<std::string> live_overlaps(const Planned& p,
                                       const std::vector<std::vector<bool>>* happens_before) {
  std::vector<std::string> found;
  const ir::Graph& g = *p.graph;
  const auto& hb = happens_before ? *happens_before : p.plan.happens_before;
  auto touching = [&](ValueId root) {
    std::vector<UnitId> units;
    for (size_t v = 0; v < g.num_values(); ++v) {
      if (p.memory.storage_of[v] != root) continue;
      const ir::Value& value = g.value(make_id<ValueId>(v));
      if (value.kind == ir::ValueKind::kActivation)
        units.push_back(p.units.unit_of(value.producer));
      for (NodeId c : value.consumers) units.push_back(p.units.unit_of(c));
    }
    return units;
  };
  std::vector<ValueId> roots;
  for (size_t v = 0; v < g.num_values(); ++v)
    if (g.value(make_id<ValueId>(v)).kind != ir::ValueKind::kParameter &&
        index(p.memory.storage_of[v]) == v)
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
      if (has(a, is_input) || has(b, is_input)) {
        found.push_back("'" + g.value(a).name + "' and '" + g.value(b).name +
                        "' share bytes with a graph input");
        continue;
      }
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
      if (!a_first && !b_first)
        found.push_back("'" + g.value(a).name + "' and '" + g.value(b).name +
                        "' share bytes while both may be live");
    }
  }
  return found;
}

void expect_no_live_overlap(const Planned& p,
                            const std::vector<std::vector<bool>>* happens_before = nullptr) {
  const std::vector<std::string> found = live_overlaps(p, happens_before);
  EXPECT_TRUE(found.empty()) << found.size() << " overlaps, the first: " << found.front();
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

// Reuse by dependences alone (units run outside the plan, in any order that keeps their
// dependences): safe under the units' reachability, not only the plan's order, and still reuses.
TEST(MemoryPlan, DependenceOrderIsSafeInAnyOrder) {
  for (const char* model : {"inception_v3", "squeezenet", "randwire"}) {
    Planned by_plan = plan_for(model, "sequential");
    Planned p = plan_for(model, "sequential", {.order = ReuseOrder::kDependences});
    const std::vector<std::vector<bool>> reach = ir::transitive_closure(p.units);
    expect_no_live_overlap(p, &reach);
    EXPECT_GE(p.memory.arena_bytes, by_plan.memory.arena_bytes) << model;
    EXPECT_LT(p.memory.arena_bytes, p.memory.unshared_bytes) << model;
  }
  // The plan's order is not enough: a sequential plan lets tensors of independent branches
  // share bytes, which units run side by side would overwrite.
  Planned by_plan = plan_for("inception_v3", "sequential");
  const std::vector<std::vector<bool>> reach = ir::transitive_closure(by_plan.units);
  EXPECT_FALSE(live_overlaps(by_plan, &reach).empty());
}

TEST(MemoryPlan, NoReuseGivesEveryTensorItsOwnSlot) {
  Planned p = plan_for("squeezenet", "sequential", {.reuse = false});
  EXPECT_EQ(p.memory.arena_bytes, p.memory.unshared_bytes);
}

// An executor that stores values in other sizes (CUDA's FP16/BF16 plans: 2 bytes a float)
// gets the same lifetimes and reuse: halving every size and the alignment halves every offset
// and the arena. A wider alignment puts every offset on it.
TEST(MemoryPlan, StorageSizesScaleTheSamePlan) {
  for (const char* algo : {"sequential", "greedy"}) {
    const Planned full = plan_for("inception_v3", algo);
    const ir::Graph& g = *full.graph;
    MemoryPlanOptions half;
    half.value_bytes = [&g](ValueId v) { return g.value(v).type.bytes() / 2; };
    half.alignment = kTensorAlignment / 2;
    const MemoryPlan m = plan_memory(g, full.units, full.plan, half);
    EXPECT_EQ(m.arena_bytes * 2, full.memory.arena_bytes) << algo;
    for (size_t v = 0; v < g.num_values(); ++v) {
      if (g.value(make_id<ValueId>(v)).kind == ir::ValueKind::kParameter) continue;
      EXPECT_EQ(m.offset[v] * 2, full.memory.offset[v]) << algo << " " << v;
    }
    const MemoryPlan wide = plan_memory(g, full.units, full.plan, {.alignment = 256});
    EXPECT_GE(wide.arena_bytes, full.memory.arena_bytes) << algo;
    for (size_t v = 0; v < g.num_values(); ++v) {
      if (g.value(make_id<ValueId>(v)).kind == ir::ValueKind::kParameter) continue;
      EXPECT_EQ(wide.offset[v] % 256, 0) << algo << " " << v;
    }
  }
}

size_t count_concats(const ir::Graph& g) {
  return std::count_if(g.nodes().begin(), g.nodes().end(),
                       [](const ir::Node& n) { return n.kind == ir::OpKind::Concat; });
}

// With in-place concats, every input of such a Concat lies exactly in its window, and storage
// shared that way still never overlaps a live tensor, under concurrent and random schedules.
TEST(MemoryPlan, InPlaceConcatsPlaceInputsInTheirWindows) {
  for (const char* algo : {"sequential", "greedy", "random:1", "random:2"}) {
    for (const char* model : {"inception_v3", "googlenet", "randwire"}) {
      MemoryPlanOptions options;
      options.concat_in_place = [](ValueId, ValueId, int64_t) { return true; };
      Planned p = plan_for(model, algo, options);
      const ir::Graph& g = *p.graph;
      EXPECT_EQ(p.memory.in_place_concats.size(), count_concats(g)) << model;
      for (NodeId id : p.memory.in_place_concats) {
        const ir::Node& n = g.node(id);
        int64_t at = p.memory.offset[index(n.outputs.front())];
        for (ValueId v : n.inputs) {
          EXPECT_EQ(p.memory.offset[index(v)], at) << model << " " << n.name;
          at += g.value(v).type.bytes();
        }
      }
      expect_no_live_overlap(p);
    }
  }
}

// The CPU executor's layout rule: plain and nChw16c windows of whole blocks qualify, nhwc
// windows (channels interleaved) never; a batch above 1 makes every window strided.
TEST(MemoryPlan, InPlaceConcatsFollowTheLayouts) {
  for (TensorLayout layout : {TensorLayout::kPlain, TensorLayout::kNChw16c, TensorLayout::kNhwc}) {
    for (int64_t batch : {1, 2}) {
      const ir::Graph g = models::build_zoo_model("inception_v3", {.batch = batch});
      const auto layouts = cpu::choose_layouts(g, {.blocked = layout});
      MemoryPlanOptions options;
      options.concat_in_place = [&](ValueId input, ValueId concat, int64_t offset) {
        return cpu::can_write_into_concat(g, layouts, input, concat, offset);
      };
      Planned p = plan_for("inception_v3", "greedy", options, {.batch = batch});
      const size_t expected =
          batch == 1 && layout != TensorLayout::kNhwc ? count_concats(*p.graph) : 0;
      EXPECT_EQ(p.memory.in_place_concats.size(), expected)
          << cpu::layout_name(layout) << " batch " << batch;
      expect_no_live_overlap(p);
    }
  }
}

}  // namespace
}  // namespace braid::exec
