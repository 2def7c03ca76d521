#include "sched/ios.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <random>

#include "base/error.h"
#include "cost/dag_cost.h"
#include "cost/roofline.h"
#include "ir/analysis.h"
#include "models/dag_json.h"
#include "models/loader.h"
#include "models/random_dag.h"
#include "models/zoo.h"
#include "sched/predict.h"
#include "sched/validate.h"
#include "test_env.h"

namespace braid::sched {
namespace {

constexpr ScheduleOptions kUnpruned = {.max_streams = 0, .max_group_size = 0, .max_groups = 0};

// A random weighted DAG of `n` units: each pair (i, j), i < j, an edge with probability
// `density`; latencies uniform in [0.1, 4] ms. Unlike HIOS's layered graphs, it may have
// several sources, sinks and components. Replayable from the seed.
ir::UnitGraph random_small_dag(uint64_t seed, int n, double density) {
  std::mt19937_64 rng(seed);
  auto uniform = [&rng] { return static_cast<double>(rng() >> 11) * 0x1.0p-53; };
  std::vector<ir::Unit> units(n);
  for (int i = 0; i < n; ++i) {
    units[i].name = "u" + std::to_string(i);
    units[i].latency = Micros{100 + 3900 * uniform()};
  }
  std::vector<ir::UnitEdge> edges;
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j)
      if (uniform() < density)
        edges.push_back({.from = make_id<UnitId>(i), .to = make_id<UnitId>(j)});
  return ir::UnitGraph::from_dag("random_" + std::to_string(seed), std::move(units),
                                 std::move(edges));
}

// HIOS's layered random DAG (one source, one sink) of n >= 4 units, with the first edge count
// from a seeded target that the layering admits.
ir::UnitGraph layered_dag(uint64_t seed, int n) {
  const int layers = 3 + static_cast<int>(seed % std::min(n - 2, 3));
  const int most = n * (n - 1) / 2;
  for (int edges = n - 1 + static_cast<int>(seed % 5); edges <= most; ++edges) {
    try {
      return models::random_dag({.ops = n, .layers = layers, .edges = edges, .seed = seed});
    } catch (const Error&) {  // too few edges for the layering
    }
  }
  return models::random_dag({.ops = n, .layers = 3, .edges = 2 * (n - 2), .seed = seed});
}

// The oracle: every ordered partition of the units into stages, first stage first, each stage
// a set with no edge into it from the units still unscheduled; its groups are its connected
// parts. Stage latencies come from the cost model, asked once per set up front. No
// memoization: each schedule is one path of the recursion.
class BruteForce {
 public:
  BruteForce(const ir::UnitGraph& g, const cost::CostModel& cost) : g_(g) {
    const size_t n = g.num_units();
    latency_.assign(size_t{1} << n, 0.0);
    for (uint32_t set = 1; set < (1u << n); ++set) {
      std::vector<std::vector<UnitId>> groups;
      uint32_t rest = set;
      while (rest != 0) {
        uint32_t group = rest & (~rest + 1), grown = 0;
        while (grown != group) {  // flood the component within `set`
          grown = group;
          for (size_t u = 0; u < n; ++u)
            if (group >> u & 1) {
              for (UnitId v : g.successors(make_id<UnitId>(u))) group |= (1u << index(v)) & set;
              for (UnitId v : g.predecessors(make_id<UnitId>(u))) group |= (1u << index(v)) & set;
            }
        }
        groups.emplace_back();
        for (size_t u = 0; u < n; ++u)
          if (group >> u & 1) groups.back().push_back(make_id<UnitId>(u));
        rest &= ~group;
      }
      latency_[set] = cost.stage_latency(groups).count();
    }
  }

  double best(uint32_t remaining) const {
    if (remaining == 0) return 0;
    double best = std::numeric_limits<double>::infinity();
    for (uint32_t stage = remaining; stage != 0; stage = (stage - 1) & remaining) {
      bool first = true;  // no unscheduled predecessor outside the stage
      for (size_t u = 0; u < g_.num_units() && first; ++u)
        if (stage >> u & 1)
          for (UnitId p : g_.predecessors(make_id<UnitId>(u)))
            if ((remaining & ~stage) >> index(p) & 1) first = false;
      if (first) best = std::min(best, latency_[stage] + this->best(remaining & ~stage));
    }
    return best;
  }

 private:
  const ir::UnitGraph& g_;
  std::vector<double> latency_;
};

double sequential_latency(const ir::UnitGraph& g, const cost::CostModel& cost) {
  double sum = 0;
  for (size_t u = 0; u < g.num_units(); ++u) sum += cost.unit_latency(make_id<UnitId>(u)).count();
  return sum;
}

double critical_path_latency(const ir::UnitGraph& g, const cost::CostModel& cost) {
  std::vector<double> latency(g.num_units());
  for (size_t u = 0; u < g.num_units(); ++u)
    latency[u] = cost.unit_latency(make_id<UnitId>(u)).count();
  return ir::critical_path(g, latency).length;
}

// Valid, its predicted latency the DP's and within [critical path, sequential] (cost models
// whose stage is the slowest group, plus `overhead` per stage).
void expect_sound(const ir::UnitGraph& g, const cost::CostModel& cost, const Schedule& s,
                  Micros overhead = Micros{0}) {
  ASSERT_NO_THROW(validate_or_throw(g, s)) << to_string(s, g);
  ASSERT_TRUE(s.predicted_latency.has_value());
  const double predicted = s.predicted_latency->count();
  const double tolerance = 1e-9 * std::max(1.0, predicted);
  EXPECT_NEAR(predicted_latency(g, s, cost).count(), predicted, tolerance);
  const double n = static_cast<double>(g.num_units());
  EXPECT_GE(predicted, critical_path_latency(g, cost) + overhead.count() - tolerance);
  EXPECT_LE(predicted, sequential_latency(g, cost) + n * overhead.count() + tolerance);
}

// ios.txt §4: the DP explores every ending, so without pruning it finds the best stage
// partition: the brute force over all of them, on 240 random DAGs of 1..8 units.
TEST(Ios, UnprunedEqualsBruteForce) {
  const auto ios = make_scheduler("ios", kUnpruned);
  for (uint64_t seed = 0; seed < 240; ++seed) {
    const int n = 1 + static_cast<int>(seed % 8);
    ir::UnitGraph g = seed % 3 == 2 ? layered_dag(seed, std::max(n, 4))
                                    : random_small_dag(seed, n, 0.1 + 0.1 * (seed % 5));
    SCOPED_TRACE("seed " + std::to_string(seed) + " (" + g.name() + ")");
    cost::DagCostModel cost(g);
    const Schedule s = ios->schedule(g, cost);
    ASSERT_NO_THROW(validate_or_throw(g, s));
    const double oracle = BruteForce(g, cost).best((1u << g.num_units()) - 1);
    EXPECT_NEAR(s.predicted_latency->count(), oracle, 1e-9 * oracle);
  }
}

// With a stage overhead, fewer stages pay: the DP still equals the brute force on graphs of
// one block. Across blocks it cannot do better, and may do worse: a stage never spans a cut
// unit, where one group running through the cut would save an overhead (ios.txt §4.2's
// block-wise search is exact only when a stage's latency is its slowest group's sum).
TEST(Ios, UnprunedWithStageOverheadEqualsBruteForceOnOneBlock) {
  const auto ios = make_scheduler("ios", kUnpruned);
  int one_block = 0;
  for (uint64_t seed = 0; seed < 80; ++seed) {
    ir::UnitGraph g = random_small_dag(1000 + seed, 2 + static_cast<int>(seed % 7), 0.3);
    SCOPED_TRACE("seed " + std::to_string(1000 + seed));
    cost::DagCostModel cost(g, {.stage_overhead = Micros{500}});
    const Schedule s = ios->schedule(g, cost);
    const double oracle = BruteForce(g, cost).best((1u << g.num_units()) - 1);
    if (ir::block_partition(g).size() == 1) {
      ++one_block;
      EXPECT_NEAR(s.predicted_latency->count(), oracle, 1e-9 * oracle);
    } else {
      EXPECT_GE(s.predicted_latency->count(), oracle - 1e-9 * oracle);
    }
  }
  EXPECT_GE(one_block, 20);
}

// Every variant, pruned or not, on random DAGs: valid and between the two bounds; groups and
// streams within the options.
TEST(Ios, VariantsAreSoundOnRandomDags) {
  for (uint64_t seed = 0; seed < 60; ++seed) {
    ir::UnitGraph g = random_small_dag(seed, 5 + static_cast<int>(seed % 26), 0.15);
    SCOPED_TRACE("seed " + std::to_string(seed));
    cost::DagCostModel cost(g);
    const ScheduleOptions options = {.max_streams = static_cast<int>(seed % 4),
                                     .max_group_size = static_cast<int>(seed % 3) + 1,
                                     .max_groups = static_cast<int>(seed % 5)};
    for (std::string_view name : {"ios", "ios-parallel", "ios-merge"}) {
      SCOPED_TRACE(std::string(name));
      SearchStats stats;
      const Schedule s = make_scheduler(name, options)->schedule(g, cost, &stats);
      EXPECT_EQ(s.algorithm, name);
      expect_sound(g, cost, s);
      EXPECT_GT(stats.transitions, 0);
      EXPECT_GT(stats.states, 0);
      EXPECT_GT(stats.stage_queries, 0);
      for (const Stage& stage : s.stages) {
        const size_t streams = options.max_streams > 0 ? options.max_streams : SIZE_MAX;
        const size_t groups = options.max_groups > 0 ? options.max_groups : SIZE_MAX;
        EXPECT_LE(stage.groups.size(), std::min(streams, groups));
        for (const auto& group : stage.groups)
          EXPECT_LE(group.size(), static_cast<size_t>(options.max_group_size));
        // A weighted DAG has no merges: ios-merge gives single-unit stages.
        EXPECT_TRUE(name != "ios-merge" || stage.groups.size() == 1u);
      }
    }
  }
}

// Larger r or s only adds endings (ios.txt §4.3), so the DP's result can only improve.
TEST(Ios, PruningIsMonotone) {
  constexpr int kMost = 5;
  for (uint64_t seed = 0; seed < 30; ++seed) {
    ir::UnitGraph g = random_small_dag(500 + seed, 10 + static_cast<int>(seed % 15), 0.2);
    SCOPED_TRACE("seed " + std::to_string(500 + seed));
    cost::DagCostModel cost(g, {.stage_overhead = Micros{100.0 * static_cast<double>(seed % 3)}});
    // latency[r][s]; index 0 = unbounded.
    double latency[kMost + 1][kMost + 1];
    for (int r = 0; r <= kMost; ++r)
      for (int s = 0; s <= kMost; ++s) {
        const ScheduleOptions o = {.max_streams = 0, .max_group_size = r, .max_groups = s};
        latency[r][s] = make_scheduler("ios", o)->schedule(g, cost).predicted_latency->count();
      }
    auto bound = [](int k) { return k == 0 ? kMost + 1 : k; };
    for (int r = 0; r <= kMost; ++r)
      for (int s = 0; s <= kMost; ++s)
        for (int r2 = 0; r2 <= kMost; ++r2)
          for (int s2 = 0; s2 <= kMost; ++s2)
            if (bound(r2) >= bound(r) && bound(s2) >= bound(s)) {
              EXPECT_LE(latency[r2][s2], latency[r][s] * (1 + 1e-9))
                  << "r,s = " << r2 << "," << s2 << " vs " << r << "," << s;
            }
  }
}

// ios.txt Figure 5: a -> b, and c on its own. The paper counts six states and twelve
// transitions; it gives no latencies, so the file's are ours. Under an ideal stage (the slowest
// group) one stage {a -> b} ∥ {c} is best: max(a + b, c).
TEST(Ios, PaperFigure5) {
  const ir::UnitGraph g =
      models::load_dag_json_file(testing::source_dir() / "tests/golden/ios_fig5.dag.json");
  ASSERT_EQ(g.num_units(), 3u);
  cost::DagCostModel cost(g);
  SearchStats stats;
  const Schedule s = make_scheduler("ios-parallel", kUnpruned)->schedule(g, cost, &stats);
  EXPECT_EQ(stats.states, 6);
  EXPECT_EQ(stats.transitions, 12);
  EXPECT_EQ(stats.stage_queries, 7);  // {a}, {b}, {c}, {a,b}, {a,c}, {b,c}, {a,b,c}
  ASSERT_EQ(s.stages.size(), 1u);
  EXPECT_EQ(s.stages[0].groups, (std::vector<std::vector<UnitId>>{
                                    {*g.find_unit("a"), *g.find_unit("b")}, {*g.find_unit("c")}}));
  EXPECT_DOUBLE_EQ(Millis(*s.predicted_latency).count(), 3.0);  // max(1 + 2, 2.5)
  // With r = 1 the chain a -> b needs two stages: {a}, then {b} ∥ {c}.
  const Schedule r1 =
      make_scheduler("ios-parallel", {.max_streams = 0, .max_group_size = 1, .max_groups = 0})
          ->schedule(g, cost);
  EXPECT_DOUBLE_EQ(Millis(*r1.predicted_latency).count(), 3.5);  // 1 + max(2, 2.5)
}

// ios.txt Table 1: SqueezeNet's largest block has 6 operators of width 3 and 51 transitions
// (under the paper's pruning r = 3, s = 8; the bound C(6/3 + 2, 2)^3 is 216).
TEST(Ios, PaperTable1SqueezeNet) {
  const models::LoadedModel m = models::load_model("squeezenet", {.with_weights = false});
  const ir::UnitGraph& g = m.units;
  std::vector<UnitId> largest;
  for (const ir::Block& block : ir::block_partition(g))
    if (block.units.size() > largest.size()) largest = block.units;
  std::vector<ir::Unit> units;
  std::vector<ir::UnitEdge> edges;
  for (UnitId u : largest) units.push_back({.name = g.unit(u).name, .latency = Micros{1}});
  for (size_t i = 0; i < largest.size(); ++i)
    for (UnitId v : g.successors(largest[i]))
      if (auto it = std::find(largest.begin(), largest.end(), v); it != largest.end())
        edges.push_back({.from = make_id<UnitId>(i), .to = make_id<UnitId>(it - largest.begin())});
  const ir::UnitGraph block = ir::UnitGraph::from_dag("fire", std::move(units), std::move(edges));
  ASSERT_EQ(block.num_units(), 6u);
  EXPECT_EQ(ir::width(block), 3u);
  cost::DagCostModel cost(block);
  SearchStats stats;
  make_scheduler("ios", {.max_streams = 0, .max_group_size = 3, .max_groups = 8})
      ->schedule(block, cost, &stats);
  EXPECT_EQ(stats.transitions, 51);
}

// Parts: the cut-point blocks in order, blocks over max_part_size cut into consecutive parts
// no larger than it.
TEST(Ios, PartsCoverBlocksInOrder) {
  ir::UnitGraph g = models::random_dag({.ops = 150, .layers = 8, .edges = 300, .seed = 3});
  for (int size : {1, 2, 7, 50, 64}) {
    const auto parts = ios_parts(g, size);
    std::vector<UnitId> all;
    for (const auto& part : parts) {
      EXPECT_LE(part.size(), static_cast<size_t>(size));
      all.insert(all.end(), part.begin(), part.end());
    }
    ASSERT_EQ(all.size(), g.num_units());
    for (size_t i = 0; i < all.size(); ++i) EXPECT_EQ(index(all[i]), i);
  }
  EXPECT_THROW(ios_parts(g, 65), Error);
  EXPECT_THROW(IosScheduler({}, IosVariant::kBoth, 0), Error);
  // A schedule over parts of one unit is the sequential one.
  cost::DagCostModel cost(g);
  const Schedule one = IosScheduler({}, IosVariant::kBoth, 1).schedule(g, cost);
  EXPECT_EQ(one.stages.size(), g.num_units());
  EXPECT_NEAR(one.predicted_latency->count(), sequential_latency(g, cost), 1e-6);
}

// NASNet's 371-unit block is cut between its cells where the block is narrowest: every cell,
// both stem cells included, becomes exactly one part, as IOS's hand-written get_parts does
// (peers.md §2.5).
TEST(Ios, NasNetPartsAreCells) {
  const models::LoadedModel m = models::load_model("nasnet", {.with_weights = false});
  std::vector<std::string> whole;  // cells that are exactly one part
  for (const auto& part : ios_parts(m.units, kIosDefaultPartSize)) {
    const std::string first = m.units.unit(part.front()).name;
    const std::string cell = first.substr(0, first.find('/'));
    bool same = m.units.unit(part.back()).name == cell + "/concat";
    for (UnitId u : part) same = same && m.units.unit(u).name.starts_with(cell + "/");
    // The cell is whole when no unit before or after the part belongs to it.
    same = same &&
           (index(part.front()) == 0 ||
            !m.units.unit(make_id<UnitId>(index(part.front()) - 1)).name.starts_with(cell + "/"));
    if (same) whole.push_back(cell);
  }
  std::vector<std::string> cells = {"cell_stem_0", "cell_stem_1"};
  for (int i = 0; i < 18; ++i) {
    if (i == 6 || i == 12) cells.push_back("reduction_cell_" + std::to_string(i / 6 - 1));
    cells.push_back("cell_" + std::to_string(i));
  }
  EXPECT_EQ(whole, cells);
  // Parts smaller than a cell: the scoped cut cannot fit, so the narrowest-point rule cuts inside
  // cells and the contract (no part over the size, every unit once, in order) still holds.
  for (int size : {5, 12}) {
    size_t next = 0;
    for (const auto& part : ios_parts(m.units, size)) {
      EXPECT_LE(part.size(), static_cast<size_t>(size));
      for (UnitId u : part) EXPECT_EQ(index(u), next++);
    }
    EXPECT_EQ(next, m.units.num_units());
  }
}

// x feeds four convs: 1x1 and 3x3 (p1) and 1x3 (p0,1) merge into one 3x3 kernel; a strided one
// does not merge with them.
ir::UnitGraph conv_fan() {
  using namespace ir;
  GraphBuilder b("conv_fan");
  ValueId x = b.add_input("x", {DType::kFloat32, {1, 16, 28, 28}});
  auto conv = [&](std::string name, ConvAttrs attrs, int64_t out_channels) {
    ValueId w = b.add_parameter(
        name + ".w", {DType::kFloat32, {out_channels, 16, attrs.kernel[0], attrs.kernel[1]}});
    return b.add_op(OpKind::Conv, attrs, {x, w}, name);
  };
  const Activation relu = Activation::kRelu;
  std::vector<ValueId> outs = {
      conv("one", {.activation = relu}, 32),
      conv("three", {.kernel = {3, 3}, .pads = {1, 1, 1, 1}, .activation = relu}, 32),
      conv("row", {.kernel = {1, 3}, .pads = {0, 1, 0, 1}, .activation = relu}, 16),
      conv("strided", {.stride = {2, 2}, .activation = relu}, 16)};
  for (ValueId v : outs) b.mark_output(v);
  return fuse(std::make_shared<const Graph>(std::move(b).build()));
}

std::vector<std::string> merged_names(const ir::UnitGraph& g, const Schedule& s) {
  std::vector<std::string> names;
  for (const Stage& stage : s.stages)
    if (stage.kind == StageKind::kMerge)
      for (const auto& group : stage.groups) names.push_back(g.unit(group[0]).name);
  return names;
}

// With a stage overhead, one merged kernel beats one stage per conv (roofline: a merge costs
// the units' sum; ios.txt §4.2).
TEST(Ios, MergeStagesOnConvsReadingOneInput) {
  const ir::UnitGraph g = conv_fan();
  cost::RooflineCostModel cost(g, {.stage_overhead = Micros{20}});
  const Schedule s = make_scheduler("ios-merge")->schedule(g, cost);
  expect_sound(g, cost, s, Micros{20});
  EXPECT_EQ(merged_names(g, s), (std::vector<std::string>{"one", "three", "row"}));
  // s = 2: at most two units per merge stage.
  const Schedule two = make_scheduler("ios-merge", {.max_groups = 2})->schedule(g, cost);
  ASSERT_NO_THROW(validate_or_throw(g, two));
  for (const Stage& stage : two.stages) EXPECT_LE(stage.groups.size(), 2u);
  EXPECT_EQ(merged_names(g, two).size(), 2u);
  // ios-parallel never merges.
  EXPECT_TRUE(merged_names(g, make_scheduler("ios-parallel")->schedule(g, cost)).empty());
}

TEST(Ios, MergeStagesOnInceptionV3) {
  const models::LoadedModel m = models::load_model("inception_v3", {.with_weights = false});
  cost::RooflineCostModel cost(m.units, {.stage_overhead = Micros{20}});
  const Schedule s = make_scheduler("ios-merge")->schedule(m.units, cost);
  expect_sound(m.units, cost, s, Micros{20});
  EXPECT_GE(merged_names(m.units, s).size(), 2u);
}

// Every zoo model, every variant, the paper's pruning: valid and within the bounds.
TEST(Ios, VariantsAreSoundOnTheZoo) {
  for (const models::ZooEntry& entry : models::zoo()) {
    SCOPED_TRACE(std::string(entry.name));
    const models::LoadedModel m = models::load_model(entry.name, {.with_weights = false});
    cost::RooflineCostModel cost(m.units);
    for (std::string_view name : {"ios", "ios-parallel", "ios-merge"}) {
      SCOPED_TRACE(std::string(name));
      expect_sound(m.units, cost, make_scheduler(name)->schedule(m.units, cost));
    }
  }
}

// The stage cache: the cost model is asked once per distinct stage, and the DP is
// deterministic.
TEST(Ios, AsksOncePerStageAndIsDeterministic) {
  const models::LoadedModel m = models::load_model("squeezenet", {.with_weights = false});
  cost::RooflineCostModel cost(m.units);
  SearchStats stats;
  const auto before = cost.stats().stage_queries;
  const Schedule a = make_scheduler("ios")->schedule(m.units, cost, &stats);
  EXPECT_EQ(cost.stats().stage_queries - before, stats.stage_queries);
  EXPECT_LT(stats.stage_queries, stats.transitions);
  const Schedule b = make_scheduler("ios")->schedule(m.units, cost);
  EXPECT_EQ(to_string(a, m.units), to_string(b, m.units));
  EXPECT_EQ(a.stats["transitions"], stats.transitions);
}

// A two-core machine as a measured cost model sees it: a stage takes its lower bound (the
// slowest group, or the work over two cores), 10% more per extra group (contention) and 20 us
// (the barrier). It says it measures, so IOS searches best-first by default.
class ContendedCost final : public cost::CostModel {
 public:
  ContendedCost(const ir::UnitGraph& g, const cost::CostModel& base) : CostModel(g), base_(base) {}
  std::string_view name() const override { return "contended"; }
  Micros unit_latency(UnitId u) const override {
    count_unit_query();
    return base_.unit_latency(u);
  }
  Micros stage_latency(std::span<const std::vector<UnitId>> groups) const override {
    count_stage_query();
    const double contention = 1 + 0.1 * static_cast<double>(groups.size() - 1);
    return Micros{stage_lower_bound(groups).count() * contention + 20};
  }
  double parallelism() const override { return 2; }
  bool measures() const override { return true; }

 private:
  const cost::CostModel& base_;
};

ScheduleOptions with_search(ScheduleOptions options, IosSearch search) {
  options.ios_search = search;
  return options;
}

// Best-first asks lower bounds first but finds the dynamic program's optimum, on random DAGs
// under a contended cost model and under the DAG's own (with a stage overhead the bounds do
// not know), for every variant and several prunings; it never asks more stages.
TEST(Ios, BestFirstEqualsDynamicProgram) {
  int fewer = 0;
  for (uint64_t seed = 0; seed < 60; ++seed) {
    ir::UnitGraph g = seed % 3 == 2 ? layered_dag(seed, 6 + static_cast<int>(seed % 14))
                                    : random_small_dag(seed, 3 + static_cast<int>(seed % 18), 0.2);
    SCOPED_TRACE("seed " + std::to_string(seed) + " (" + g.name() + ")");
    const cost::DagCostModel dag(g,
                                 {.stage_overhead = Micros{50.0 * static_cast<double>(seed % 2)}});
    const ContendedCost contended(g, dag);
    const ScheduleOptions options = {.max_streams = static_cast<int>(seed % 4),
                                     .max_group_size = static_cast<int>(seed % 4),
                                     .max_groups = static_cast<int>(seed % 5)};
    for (const cost::CostModel* cost : {static_cast<const cost::CostModel*>(&dag),
                                        static_cast<const cost::CostModel*>(&contended)})
      for (std::string_view name : {"ios", "ios-parallel", "ios-merge"}) {
        SCOPED_TRACE(std::string(name) + " under " + std::string(cost->name()));
        SearchStats dp_stats, bf_stats;
        const Schedule dp = make_scheduler(name, with_search(options, IosSearch::kDynamicProgram))
                                ->schedule(g, *cost, &dp_stats);
        const Schedule bf = make_scheduler(name, with_search(options, IosSearch::kBestFirst))
                                ->schedule(g, *cost, &bf_stats);
        ASSERT_NO_THROW(validate_or_throw(g, bf)) << to_string(bf, g);
        const double optimum = dp.predicted_latency->count();
        EXPECT_NEAR(bf.predicted_latency->count(), optimum, 1e-9 * optimum);
        EXPECT_NEAR(predicted_latency(g, bf, *cost).count(), optimum, 1e-9 * optimum);
        EXPECT_LE(bf_stats.stage_queries, dp_stats.stage_queries);
        fewer += bf_stats.stage_queries < dp_stats.stage_queries;
      }
  }
  EXPECT_GE(fewer, 100);  // of 360 searches: the bounds rule stages out
}

// Unpruned, best-first equals the brute force over all stage partitions too (on graphs of one
// block: the contended cost has a per-stage overhead, see above).
TEST(Ios, BestFirstUnprunedEqualsBruteForce) {
  const auto ios = make_scheduler("ios", with_search(kUnpruned, IosSearch::kBestFirst));
  int one_block = 0;
  for (uint64_t seed = 0; seed < 120; ++seed) {
    ir::UnitGraph g = random_small_dag(2000 + seed, 1 + static_cast<int>(seed % 8), 0.25);
    SCOPED_TRACE("seed " + std::to_string(2000 + seed));
    const cost::DagCostModel dag(g);
    const ContendedCost cost(g, dag);
    if (ir::block_partition(g).size() != 1) continue;
    ++one_block;
    const Schedule s = ios->schedule(g, cost);
    ASSERT_NO_THROW(validate_or_throw(g, s));
    const double oracle = BruteForce(g, cost).best((1u << g.num_units()) - 1);
    EXPECT_NEAR(s.predicted_latency->count(), oracle, 1e-9 * oracle);
  }
  EXPECT_GE(one_block, 30);
}

// With a tolerance, best-first stays within (1 + tolerance) of the optimum, and asks no more
// stages than the exact search in total.
TEST(Ios, BestFirstToleranceBoundsTheResult) {
  int64_t exact_queries = 0, tolerant_queries = 0;
  for (uint64_t seed = 0; seed < 40; ++seed) {
    ir::UnitGraph g = layered_dag(3000 + seed, 8 + static_cast<int>(seed % 7));
    SCOPED_TRACE("seed " + std::to_string(3000 + seed));
    const cost::DagCostModel dag(g);
    const ContendedCost cost(g, dag);
    const double optimum = make_scheduler("ios", {.ios_search = IosSearch::kDynamicProgram})
                               ->schedule(g, cost)
                               .predicted_latency->count();
    for (double tolerance : {0.0, 0.02, 0.1}) {
      SearchStats stats;
      const Schedule s =
          make_scheduler("ios", {.ios_tolerance = tolerance})->schedule(g, cost, &stats);
      ASSERT_NO_THROW(validate_or_throw(g, s));
      EXPECT_LE(s.predicted_latency->count(), optimum * (1 + tolerance) * (1 + 1e-9));
      EXPECT_GE(s.predicted_latency->count(), optimum * (1 - 1e-9));
      (tolerance == 0 ? exact_queries : tolerant_queries) +=
          tolerance == 0.1 ? 0 : stats.stage_queries;
    }
  }
  EXPECT_LE(tolerant_queries, exact_queries);
  EXPECT_THROW(make_scheduler("ios", {.ios_tolerance = -0.1}), Error);
}

// A measuring cost model gets the best-first search by default; on Inception V3 under the
// contended roofline it asks under a third of the stages the dynamic program asks (5,438 and
// 1,299 when written).
TEST(Ios, BestFirstAsksFewerStagesOnInceptionV3) {
  const models::LoadedModel m = models::load_model("inception_v3", {.with_weights = false});
  const cost::RooflineCostModel roofline(m.units);
  const ContendedCost cost(m.units, roofline);
  SearchStats dp_stats, bf_stats;
  const Schedule dp = make_scheduler("ios", {.ios_search = IosSearch::kDynamicProgram})
                          ->schedule(m.units, cost, &dp_stats);
  const Schedule bf = make_scheduler("ios")->schedule(m.units, cost, &bf_stats);
  expect_sound(m.units, cost, bf, Micros{20});
  EXPECT_NEAR(bf.predicted_latency->count(), dp.predicted_latency->count(),
              1e-9 * dp.predicted_latency->count());
  SearchStats tolerant_stats;
  const Schedule tolerant =
      make_scheduler("ios", {.ios_tolerance = 0.02})->schedule(m.units, cost, &tolerant_stats);
  EXPECT_LE(tolerant.predicted_latency->count(), dp.predicted_latency->count() * 1.02 * (1 + 1e-9));
  std::printf(
      "inception_v3 stage queries: dynamic program %lld, best-first %lld, within 2%% %lld\n",
      static_cast<long long>(dp_stats.stage_queries),
      static_cast<long long>(bf_stats.stage_queries),
      static_cast<long long>(tolerant_stats.stage_queries));
  EXPECT_LT(bf_stats.stage_queries * 3, dp_stats.stage_queries);
}

}  // namespace
}  // namespace braid::sched
