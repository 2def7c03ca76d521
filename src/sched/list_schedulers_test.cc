// Tests of the stream-based schedulers: lios (and its ablations), heft, nimble and opara.
#include <gtest/gtest.h>

#include <random>

#include "base/error.h"
#include "cost/dag_cost.h"
#include "cost/roofline.h"
#include "ir/analysis.h"
#include "models/dag_json.h"
#include "models/loader.h"
#include "models/random_dag.h"
#include "models/zoo.h"
#include "sched/heft.h"
#include "sched/lios.h"
#include "sched/nimble.h"
#include "sched/opara.h"
#include "sched/predict.h"
#include "sched/test_graphs.h"
#include "sched/trivial.h"
#include "sched/validate.h"
#include "test_env.h"

namespace braid::sched {
namespace {

constexpr std::string_view kStreamSchedulers[] = {"lios",   "lios-rand1", "lios-rand2", "lios-rand",
                                                  "nimble", "opara",      "heft"};

ir::UnitGraph load_golden(const std::string& name) {
  return models::load_dag_json_file(testing::source_dir() / "tests/golden" / name);
}

UnitId unit(const ir::UnitGraph& g, std::string_view name) {
  auto u = g.find_unit(name);
  EXPECT_TRUE(u.has_value()) << name;
  return u.value_or(UnitId{0});
}

// Lane contents by unit name, for readable comparisons.
std::vector<std::vector<std::string>> lane_names(const ir::UnitGraph& g, const Schedule& s) {
  std::vector<std::vector<std::string>> out;
  for (const Lane& lane : s.lanes) {
    out.emplace_back();
    for (UnitId u : lane.units) out.back().push_back(g.unit(u).name);
  }
  return out;
}

std::vector<double> in_ms(const std::vector<Micros>& times) {
  std::vector<double> out;
  for (Micros t : times) out.push_back(Millis(t).count());
  return out;
}

using testing::random_graph;

double critical_path_us(const ir::UnitGraph& g, const cost::CostModel& cost) {
  std::vector<double> w(g.num_units());
  for (size_t i = 0; i < w.size(); ++i) w[i] = cost.unit_latency(make_id<UnitId>(i)).count();
  return ir::critical_path(g, w).length;
}

// The properties every stream scheduler keeps on `g`: a valid schedule, a prediction no
// shorter than the critical path, and for lios/heft none longer than sequential execution.
void expect_sound(const ir::UnitGraph& g, const cost::CostModel& cost, int max_streams,
                  uint64_t seed) {
  const double cp = critical_path_us(g, cost);
  const double sequential =
      predicted_latency(g, SequentialScheduler().schedule(g, cost), cost).count();
  for (std::string_view name : kStreamSchedulers) {
    SCOPED_TRACE(std::string(name) + ", max_streams " + std::to_string(max_streams));
    Schedule s =
        make_scheduler(name, {.max_streams = max_streams, .seed = seed})->schedule(g, cost);
    EXPECT_EQ(s.algorithm, name);
    ASSERT_NO_THROW(validate_or_throw(g, s));
    for (const Diagnostic& d : check(g, s)) ADD_FAILURE() << to_string(d);  // no warnings either
    const double predicted = predicted_latency(g, s, cost).count();
    EXPECT_GE(predicted, cp * (1 - 1e-9));
    if (name == "lios" || name == "heft") {
      EXPECT_LE(predicted, sequential * (1 + 1e-9));
    }
    if (name.starts_with("lios") || name == "heft") {
      if (max_streams > 0) {
        EXPECT_LE(s.lanes.size(), static_cast<size_t>(max_streams));
      }
      // The plan is what predict.h simulates: a unit starts when its lane is free and its
      // predecessors are done, no later.
      double planned = 0;
      for (const Lane& lane : s.lanes) {
        ASSERT_EQ(lane.start.size(), lane.units.size());
        ASSERT_EQ(lane.finish.size(), lane.units.size());
        for (Micros f : lane.finish) planned = std::max(planned, f.count());
      }
      EXPECT_NEAR(planned, predicted, 1e-9 * (1 + predicted));
      ASSERT_TRUE(s.predicted_latency.has_value());
      EXPECT_NEAR(s.predicted_latency->count(), predicted, 1e-9 * (1 + predicted));
    }
  }
}

// lios.txt §IV, Fig. 3 and Table III: 10 nodes, 12 edges, three streams. The edges are read
// from Table III's wait lists and EST columns (Fig. 3 itself is an image); the latencies are
// Fig. 3's table.
TEST(Lios, ReproducesTableIII) {
  ir::UnitGraph g = load_golden("lios_fig3.dag.json");
  ASSERT_EQ(g.num_units(), 10u);
  ASSERT_EQ(g.num_distinct_edges(), 12u);
  cost::DagCostModel cost(g);
  Schedule s = LiosScheduler({.max_streams = 3}).schedule(g, cost);
  validate_or_throw(g, s);
  // Table III's schedule tuples, stream by stream. The paper prints v6's tuple as
  // (v6, p2, 8, 13), but its EFT column says 23 (= 8 + 15) and later rows see p2 busy until 23.
  EXPECT_EQ(lane_names(g, s),
            (std::vector<std::vector<std::string>>{
                {"v1", "v5", "v8", "v9", "v10"}, {"v2", "v6"}, {"v3", "v4", "v7"}}));
  ASSERT_EQ(s.lanes.size(), 3u);
  EXPECT_EQ(in_ms(s.lanes[0].start), (std::vector<double>{0, 3, 11, 23, 36}));
  EXPECT_EQ(in_ms(s.lanes[0].finish), (std::vector<double>{3, 11, 18, 36, 38}));
  EXPECT_EQ(in_ms(s.lanes[1].start), (std::vector<double>{3, 8}));
  EXPECT_EQ(in_ms(s.lanes[1].finish), (std::vector<double>{8, 23}));
  EXPECT_EQ(in_ms(s.lanes[2].start), (std::vector<double>{3, 8, 13}));
  EXPECT_EQ(in_ms(s.lanes[2].finish), (std::vector<double>{8, 13, 23}));
  // Table III's selection order (steps 1-10) is the launch order.
  std::vector<std::string> order;
  for (UnitId u : s.launch_order) order.push_back(g.unit(u).name);
  EXPECT_EQ(order, (std::vector<std::string>{"v1", "v5", "v8", "v2", "v3", "v6", "v4", "v7", "v9",
                                             "v10"}));
  EXPECT_DOUBLE_EQ(Millis(predicted_latency(g, s, cost)).count(), 38);
  EXPECT_DOUBLE_EQ(Millis(*s.predicted_latency).count(), 38);
  // "LIOS reduces the theoretical makespan from 73 to 38."
  EXPECT_DOUBLE_EQ(Millis(predicted_latency(g, SequentialScheduler().schedule(g), cost)).count(),
                   73);
  // Exactly the edges between streams wait.
  for (const ir::UnitEdge& e : g.edges()) {
    const bool crosses =
        placements(s, 10)[index(e.from)]->stage != placements(s, 10)[index(e.to)]->stage;
    const bool synced =
        std::find(s.syncs.begin(), s.syncs.end(), SyncEdge{e.from, e.to}) != s.syncs.end();
    EXPECT_EQ(crosses, synced) << g.unit(e.from).name << " -> " << g.unit(e.to).name;
  }
}

TEST(Lios, OneStreamIsSequential) {
  ir::UnitGraph g = load_golden("lios_fig3.dag.json");
  cost::DagCostModel cost(g);
  Schedule s = LiosScheduler({.max_streams = 1}).schedule(g, cost);
  validate_or_throw(g, s);
  ASSERT_EQ(s.lanes.size(), 1u);
  EXPECT_TRUE(s.syncs.empty());
  EXPECT_DOUBLE_EQ(Millis(predicted_latency(g, s, cost)).count(), 73);
}

// Unbounded streams: every unit may open a stream, yet a fresh one is taken only when it
// finishes the unit earlier; fig. 3 reaches its critical path (v1 v3 v6 v9 v10 = 38) with no
// more streams than its width (4).
TEST(Lios, UnboundedStreamsOpenOnlyWhatHelps) {
  ir::UnitGraph g = load_golden("lios_fig3.dag.json");
  cost::DagCostModel cost(g);
  Schedule s = LiosScheduler({.max_streams = 0}).schedule(g, cost);
  validate_or_throw(g, s);
  EXPECT_DOUBLE_EQ(Millis(predicted_latency(g, s, cost)).count(), 38);
  EXPECT_LE(s.lanes.size(), ir::width(g));
}

Schedule run(std::string_view name, const ir::UnitGraph& g, const cost::CostModel& cost,
             uint64_t seed, int max_streams = 3) {
  return make_scheduler(name, {.max_streams = max_streams, .seed = seed})->schedule(g, cost);
}

bool same(const Schedule& a, const Schedule& b) {
  if (a.lanes.size() != b.lanes.size() || a.syncs != b.syncs) return false;
  for (size_t k = 0; k < a.lanes.size(); ++k)
    if (a.lanes[k].units != b.lanes[k].units || a.lanes[k].start != b.lanes[k].start) return false;
  return true;
}

// lios.txt §V RQ3's ablations: replayable from the seed, and the seed matters.
TEST(Lios, RandomVariantsFollowTheSeed) {
  ir::UnitGraph g = load_golden("lios_fig3.dag.json");
  cost::DagCostModel cost(g);
  const Schedule lios = run("lios", g, cost, 0);
  for (std::string_view name : {"lios-rand1", "lios-rand2", "lios-rand"}) {
    SCOPED_TRACE(std::string(name));
    bool differs_across_seeds = false, differs_from_lios = false;
    const Schedule first = run(name, g, cost, 0);
    for (uint64_t seed = 0; seed < 20; ++seed) {
      const Schedule a = run(name, g, cost, seed), b = run(name, g, cost, seed);
      EXPECT_TRUE(same(a, b)) << "seed " << seed;
      validate_or_throw(g, a);
      differs_across_seeds |= !same(a, first);
      differs_from_lios |= !same(a, lios);
    }
    EXPECT_TRUE(differs_across_seeds);
    EXPECT_TRUE(differs_from_lios);
  }
  // The deterministic LIOS ignores the seed.
  EXPECT_TRUE(same(run("lios", g, cost, 0), run("lios", g, cost, 7)));
}

// HEFT's upward rank is the longest path to the end, the unit included.
TEST(Heft, UpwardRankAndSchedule) {
  ir::UnitGraph g = load_golden("lios_fig3.dag.json");
  cost::DagCostModel cost(g);
  const std::vector<Micros> rank = upward_rank(g, cost);
  EXPECT_DOUBLE_EQ(Millis(rank[index(unit(g, "v1"))]).count(), 38);  // v1 v3 v6 v9 v10
  EXPECT_DOUBLE_EQ(Millis(rank[index(unit(g, "v4"))]).count(), 30);  // v4 v7 v9 v10
  EXPECT_DOUBLE_EQ(Millis(rank[index(unit(g, "v10"))]).count(), 2);
  Schedule s = HeftScheduler({.max_streams = 3}).schedule(g, cost);
  validate_or_throw(g, s);
  EXPECT_DOUBLE_EQ(Millis(predicted_latency(g, s, cost)).count(), 38);
}

// HEFT's insertion: a unit of lower rank fills the idle gap a stream has before a unit that
// waits for its predecessor. a(10) -> y(10), a -> x(5), z(3) alone; ranks 20, 10, 5, 3. Two
// streams: a, y on stream 0; x on stream 1 at 10 (after a); z fits in stream 1's gap [0, 10).
TEST(Heft, InsertsIntoIdleGaps) {
  std::vector<ir::Unit> units(4);
  const char* names[] = {"a", "y", "x", "z"};
  const double ms[] = {10, 10, 5, 3};
  for (size_t i = 0; i < 4; ++i) {
    units[i].name = names[i];
    units[i].latency = Millis(ms[i]);
  }
  ir::UnitGraph g = ir::UnitGraph::from_dag(
      "gap", units, {{.from = UnitId{0}, .to = UnitId{1}}, {.from = UnitId{0}, .to = UnitId{2}}});
  cost::DagCostModel cost(g);
  Schedule s = HeftScheduler({.max_streams = 2}).schedule(g, cost);
  validate_or_throw(g, s);
  EXPECT_EQ(lane_names(g, s), (std::vector<std::vector<std::string>>{{"a", "y"}, {"z", "x"}}));
  ASSERT_EQ(s.lanes.size(), 2u);
  EXPECT_EQ(in_ms(s.lanes[1].start), (std::vector<double>{0, 10}));
  EXPECT_DOUBLE_EQ(Millis(predicted_latency(g, s, cost)).count(), 20);
}

// Nimble's MEG drops exactly the edges implied by a longer path.
TEST(Nimble, MinimumEquivalentGraph) {
  // a -> b -> c, a -> c (implied), a -> d.
  std::vector<ir::Unit> units(4);
  for (size_t i = 0; i < 4; ++i) {
    units[i].name = std::string(1, static_cast<char>('a' + i));
    units[i].latency = Millis(1);
  }
  auto e = [](size_t a, size_t b) {
    return ir::UnitEdge{.from = make_id<UnitId>(a), .to = make_id<UnitId>(b)};
  };
  ir::UnitGraph g = ir::UnitGraph::from_dag("meg", units, {e(0, 1), e(1, 2), e(0, 2), e(0, 3)});
  using P = std::pair<UnitId, UnitId>;
  EXPECT_EQ(
      minimum_equivalent_graph(g),
      (std::vector<P>{{UnitId{0}, UnitId{1}}, {UnitId{0}, UnitId{3}}, {UnitId{1}, UnitId{2}}}));
}

// Nimble on random DAGs: exactly width streams (Dilworth), and syncs exactly on the MEG edges
// between streams.
TEST(Nimble, WidthStreamsAndSyncsOnlyOnReducedEdgesBetweenStreams) {
  for (uint64_t seed = 0; seed < 300; ++seed) {
    ir::UnitGraph g = random_graph(seed);
    SCOPED_TRACE("seed " + std::to_string(seed) + " (" + g.name() + ")");
    Schedule s = NimbleScheduler().schedule(g);
    ASSERT_NO_THROW(validate_or_throw(g, s));
    EXPECT_EQ(s.lanes.size(), ir::width(g));
    // An independent transitive reduction: u -> v is implied when another successor of u
    // reaches v.
    const auto reach = ir::transitive_closure(g);
    const auto where = placements(s, g.num_units());
    std::vector<SyncEdge> expected;
    for (const ir::UnitEdge& e : g.edges()) {
      bool implied = false;
      for (UnitId w : g.successors(e.from)) implied |= w != e.to && reach[index(w)][index(e.to)];
      if (!implied && where[index(e.from)]->stage != where[index(e.to)]->stage)
        expected.push_back({e.from, e.to});
    }
    EXPECT_EQ(s.syncs, expected);
    EXPECT_GE(s.stats["chains"].get<size_t>(), s.lanes.size());
  }
}

// Opara on the golden diamond (a compute, b compute, c memory, d unknown = compute).
// Algorithm 2: a; then b and c are ready and the lists alternate: after compute-bound a comes
// memory-bound c, then b, then d. Algorithm 1 in that order: c inherits a's stream (the first
// successor to claim it), b opens stream 1, d continues b (its first predecessor not yet
// passed on).
TEST(Opara, DiamondStreamsAndLaunchOrder) {
  ir::UnitGraph g = load_golden("diamond.dag.json");
  Schedule s = OparaScheduler().schedule(g);
  validate_or_throw(g, s);
  std::vector<std::string> order;
  for (UnitId u : s.launch_order) order.push_back(g.unit(u).name);
  EXPECT_EQ(order, (std::vector<std::string>{"a", "c", "b", "d"}));
  EXPECT_EQ(lane_names(g, s), (std::vector<std::vector<std::string>>{{"a", "c"}, {"b", "d"}}));
  EXPECT_EQ(s.syncs,
            (std::vector<SyncEdge>{{unit(g, "a"), unit(g, "b")}, {unit(g, "c"), unit(g, "d")}}));
}

// An Inception-like fan-out: in -> {b1; b2a -> b2b; b3a -> b3b -> b3c; pool -> b4} -> concat,
// with the pool and the concat memory-bound and demand given by bytes.
TEST(Opara, InceptionFanOut) {
  struct Spec {
    const char* name;
    ir::UnitClass cls;
    int64_t bytes;
  };
  using C = ir::UnitClass;
  const Spec specs[] = {{"in", C::kCompute, 1000}, {"b1", C::kCompute, 400},
                        {"b2a", C::kCompute, 100}, {"b2b", C::kCompute, 200},
                        {"b3a", C::kCompute, 300}, {"b3b", C::kCompute, 250},
                        {"b3c", C::kCompute, 350}, {"pool", C::kMemory, 50},
                        {"b4", C::kCompute, 150},  {"concat", C::kMemory, 10}};
  std::vector<ir::Unit> units;
  for (const Spec& sp : specs) {
    ir::Unit u;
    u.name = sp.name;
    u.unit_class = sp.cls;
    u.bytes = sp.bytes;
    units.push_back(u);
  }
  auto e = [](size_t a, size_t b) {
    return ir::UnitEdge{.from = make_id<UnitId>(a), .to = make_id<UnitId>(b)};
  };
  ir::UnitGraph g = ir::UnitGraph::from_dag("fanout", units,
                                            {e(0, 1), e(0, 2), e(0, 4), e(0, 7), e(2, 3), e(4, 5),
                                             e(5, 6), e(7, 8), e(1, 9), e(3, 9), e(6, 9), e(8, 9)});
  Schedule s = OparaScheduler().schedule(g);
  validate_or_throw(g, s);
  // Algorithm 2: after compute-bound `in` the memory-bound pool; then only compute-bound units
  // are ready until the concat, least bytes first.
  std::vector<std::string> order;
  for (UnitId u : s.launch_order) order.push_back(g.unit(u).name);
  EXPECT_EQ(order, (std::vector<std::string>{"in", "pool", "b2a", "b4", "b2b", "b3a", "b3b", "b3c",
                                             "b1", "concat"}));
  // Algorithm 1: the pool, launched first, keeps in's stream; each later branch opens one; the
  // concat continues b1, its first predecessor whose stream is not yet passed on.
  EXPECT_EQ(lane_names(g, s),
            (std::vector<std::vector<std::string>>{
                {"in", "pool", "b4"}, {"b2a", "b2b"}, {"b3a", "b3b", "b3c"}, {"b1", "concat"}}));
  EXPECT_EQ(s.syncs.size(), 6u);  // in -> b1, b2a, b3a; b2b, b3c, b4 -> concat
}

// Without a given class, the arithmetic intensity decides against the ridge point.
TEST(Opara, ClassFromIntensity) {
  ir::Unit u;
  u.flops = 100;
  u.bytes = 100;  // 1 FLOP/byte
  EXPECT_EQ(opara_unit_class(u), ir::UnitClass::kMemory);
  u.flops = 100 * 100;  // 100 FLOP/byte
  EXPECT_EQ(opara_unit_class(u), ir::UnitClass::kCompute);
  u.unit_class = ir::UnitClass::kMemory;
  EXPECT_EQ(opara_unit_class(u), ir::UnitClass::kMemory);
  EXPECT_DOUBLE_EQ(opara_ridge_point(), 5);
}

// A cost model whose device answers given resources for some units (CostModel::unit_resources)
// and nothing for the others; latencies are not asked by Opara.
class ResourceCost final : public cost::CostModel {
 public:
  ResourceCost(const ir::UnitGraph& g, std::vector<std::optional<cost::UnitResources>> r)
      : CostModel(g), r_(std::move(r)) {}
  std::string_view name() const override { return "resources"; }
  Micros unit_latency(UnitId) const override { return Micros{1}; }
  Micros stage_latency(std::span<const std::vector<UnitId>>) const override { return Micros{1}; }
  std::optional<cost::UnitResources> unit_resources(UnitId u) const override {
    return r_[index(u)];
  }

 private:
  std::vector<std::optional<cost::UnitResources>> r_;
};

// in -> {b1, b2, b3, b4} -> out, no class or resources in the graph, 10 FLOP/byte everywhere
// (compute-bound against the fallback ridge of 5), bytes b1 100 < b4 200 < b3 300 < b2 400.
ir::UnitGraph fan_out_without_classes() {
  const std::pair<const char*, int64_t> specs[] = {{"in", 1000}, {"b1", 100}, {"b2", 400},
                                                   {"b3", 300},  {"b4", 200}, {"out", 50}};
  std::vector<ir::Unit> units;
  for (const auto& [name, bytes] : specs) {
    ir::Unit u;
    u.name = name;
    u.bytes = bytes;
    u.flops = 10 * bytes;
    units.push_back(u);
  }
  auto e = [](size_t a, size_t b) {
    return ir::UnitEdge{.from = make_id<UnitId>(a), .to = make_id<UnitId>(b)};
  };
  return ir::UnitGraph::from_dag(
      "fanout", units, {e(0, 1), e(0, 2), e(0, 3), e(0, 4), e(1, 5), e(2, 5), e(3, 5), e(4, 5)});
}

std::vector<std::string> launch_names(const ir::UnitGraph& g, const Schedule& s) {
  std::vector<std::string> order;
  for (UnitId u : s.launch_order) order.push_back(g.unit(u).name);
  return order;
}

// Algorithm 2 on the device's answer: b1 and b2 compute-bound with 32 KiB and 8 KiB of shared
// memory, b3 and b4 memory-bound with none and 512 and 128 threads. After compute-bound `in`
// the lists alternate: memory b4 (fewer threads than b3), compute b2 (less shared memory than
// b1), memory b3, compute b1, then out. The fallback (nothing answered) orders the same graph
// by bytes, all compute-bound: in, b1, b4, b3, b2, out.
TEST(Opara, LaunchOrderFollowsTheDevicesResources) {
  const ir::UnitGraph g = fan_out_without_classes();
  using C = ir::UnitClass;
  auto res = [](C bound, int64_t threads, int64_t smem) {
    return std::optional(cost::UnitResources{
        .per_block = {.threads = threads, .registers = 32, .shared_memory = smem},
        .blocks = 1,
        .occupancy = 0.1,
        .bound = bound});
  };
  const ResourceCost device(
      g, {res(C::kCompute, 256, 0), res(C::kCompute, 256, 32768), res(C::kCompute, 256, 8192),
          res(C::kMemory, 512, 0), res(C::kMemory, 128, 0), res(C::kMemory, 256, 0)});
  const Schedule s = OparaScheduler().schedule(g, device);
  validate_or_throw(g, s);
  EXPECT_EQ(launch_names(g, s), (std::vector<std::string>{"in", "b4", "b2", "b3", "b1", "out"}));
  EXPECT_EQ(opara_unit_class(g.unit(unit(g, "b3")), device.unit_resources(unit(g, "b3"))),
            C::kMemory);

  // A device that answers nothing: today's order, from bytes and the fallback ridge.
  const ResourceCost nothing(g, std::vector<std::optional<cost::UnitResources>>(6));
  const Schedule f = OparaScheduler().schedule(g, nothing);
  EXPECT_EQ(launch_names(g, f), (std::vector<std::string>{"in", "b1", "b4", "b3", "b2", "out"}));
  EXPECT_EQ(f.launch_order, opara_launch_order(g));

  // Units the device does not know go after those it does: b2 unknown is taken last among the
  // compute-bound (its fallback class), after b1 with 32 KiB.
  std::vector<std::optional<cost::UnitResources>> partial = {
      res(C::kCompute, 256, 0), res(C::kCompute, 256, 32768), std::nullopt,
      res(C::kMemory, 512, 0),  res(C::kMemory, 128, 0),      res(C::kMemory, 256, 0)};
  const ResourceCost some(g, std::move(partial));
  EXPECT_EQ(launch_names(g, OparaScheduler().schedule(g, some)),
            (std::vector<std::string>{"in", "b4", "b1", "b3", "b2", "out"}));
}

// The roofline and the CPU-side cost models answer no resources: Opara's order on every zoo
// model is the one it gives without a cost model.
TEST(Opara, OrderUnchangedWhereTheCostModelAnswersNothing) {
  for (const char* name : {"googlenet", "inception_v3", "squeezenet"}) {
    SCOPED_TRACE(name);
    models::LoadedModel m = models::load_model(name, {.with_weights = false});
    cost::RooflineCostModel cost(m.units);
    EXPECT_EQ(OparaScheduler().schedule(m.units, cost).launch_order, opara_launch_order(m.units));
  }
}

// Every zoo model under the roofline, at the default and at unbounded streams.
TEST(StreamSchedulers, SoundOnZooModels) {
  for (const models::ZooEntry& entry : models::zoo()) {
    SCOPED_TRACE(std::string(entry.name));
    models::LoadedModel m = models::load_model(entry.name, {.with_weights = false});
    cost::RooflineCostModel cost(m.units);
    for (int max_streams : {0, 10}) expect_sound(m.units, cost, max_streams, 1);
  }
}

TEST(StreamSchedulers, SoundOnRandomDags) {
  for (uint64_t seed = 0; seed < 300; ++seed) {
    ir::UnitGraph g = random_graph(seed);
    SCOPED_TRACE("seed " + std::to_string(seed) + " (" + g.name() + ")");
    cost::DagCostModel cost(g);
    expect_sound(g, cost, seed % 2 ? 0 : 1 + static_cast<int>(seed % 5), seed);
  }
}

// A DAG's latencies on a device that runs `parallelism` units at once (the CPU profiler's CPUs).
class SlotsCost final : public cost::CostModel {
 public:
  SlotsCost(const ir::UnitGraph& g, double parallelism)
      : CostModel(g), dag_(g), parallelism_(parallelism) {}
  std::string_view name() const override { return "slots"; }
  Micros unit_latency(UnitId u) const override { return dag_.unit_latency(u); }
  Micros stage_latency(std::span<const std::vector<UnitId>> groups) const override {
    return dag_.stage_latency(groups);
  }
  double parallelism() const override { return parallelism_; }

 private:
  cost::DagCostModel dag_;
  double parallelism_;
};

// head -> {a, b, c, d} (2 ms each) -> tail: nimble opens a stream per branch; on fewer CPUs
// than streams the streams take turns.
TEST(Predict, StreamsShareTheUnitsTheDeviceRunsAtOnce) {
  const ir::UnitGraph g = testing::fan4();
  const Schedule s = make_scheduler("nimble")->schedule(g, cost::DagCostModel(g));
  ASSERT_EQ(s.lanes.size(), 4u) << to_string(s, g);
  EXPECT_DOUBLE_EQ(Millis(predicted_latency(g, s, cost::DagCostModel(g))).count(), 4);
  EXPECT_DOUBLE_EQ(Millis(predicted_latency(g, s, SlotsCost(g, 4))).count(), 4);
  EXPECT_DOUBLE_EQ(Millis(predicted_latency(g, s, SlotsCost(g, 2))).count(), 6);
  EXPECT_DOUBLE_EQ(Millis(predicted_latency(g, s, SlotsCost(g, 1.5))).count(), 10);  // one slot
  // Slots follow the lanes' order, as the executor pins them, not stream numbers with gaps.
  Schedule gaps = s;
  for (size_t l = 0; l < gaps.lanes.size(); ++l) gaps.lanes[l].stream = 2 * static_cast<int>(l);
  EXPECT_DOUBLE_EQ(Millis(predicted_latency(g, gaps, cost::DagCostModel(g))).count(), 4);
  EXPECT_DOUBLE_EQ(Millis(predicted_latency(g, gaps, SlotsCost(g, 2))).count(), 6);
  // Sequential has one stream: nothing to share.
  const Schedule one = SequentialScheduler().schedule(g);
  EXPECT_DOUBLE_EQ(Millis(predicted_latency(g, one, SlotsCost(g, 1))).count(), 10);
}

TEST(StreamSchedulers, Registered) {
  for (std::string_view name : kStreamSchedulers) {
    auto names = scheduler_names();
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
    EXPECT_EQ(make_scheduler(name)->name(), name);
  }
}

}  // namespace
}  // namespace braid::sched
