#include "sched/optimal.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cstdio>
#include <functional>
#include <numeric>
#include <random>
#include <string>

#include "base/error.h"
#include "cost/dag_cost.h"
#include "ir/analysis.h"
#include "models/random_dag.h"
#include "sched/predict.h"
#include "sched/registry.h"
#include "sched/test_graphs.h"
#include "sched/validate.h"

namespace braid::sched {
namespace {

// A seeded random weighted DAG of n units: each pair i < j is an edge with probability
// 1/4, 2/5 or 3/5. Latencies come in three flavours, to stress ties: integers 1..4, reals
// 0.1..4 (step 0.001), or integers 0..3 (zero-latency units).
ir::UnitGraph small_dag(uint64_t seed, int n) {
  std::mt19937_64 rng(seed);
  const uint64_t density = std::array<uint64_t, 3>{5, 8, 12}[rng() % 3];  // in twentieths
  const uint64_t flavour = rng() % 3;
  std::vector<ir::Unit> units(n);
  for (int i = 0; i < n; ++i) {
    units[i].name = "u" + std::to_string(i);
    const uint64_t r = rng();
    const double ms = flavour == 0   ? 1.0 + static_cast<double>(r % 4)
                      : flavour == 1 ? 0.1 + static_cast<double>(r % 3901) * 0.001
                                     : static_cast<double>(r % 4);
    units[i].latency = Micros{1000 * ms};
  }
  std::vector<ir::UnitEdge> edges;
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j)
      if (rng() % 20 < density)
        edges.push_back({.from = make_id<UnitId>(i), .to = make_id<UnitId>(j)});
  return ir::UnitGraph::from_dag("small" + std::to_string(seed), std::move(units),
                                 std::move(edges));
}

// HIOS's layered random DAG of `ops` units (random_dag.h) with 3 or 4 layers and the edge
// count nearest a seeded target that the layering admits.
ir::UnitGraph layered_dag(uint64_t seed, int ops) {
  std::mt19937_64 rng(seed);
  models::RandomDagOptions o{.ops = ops, .layers = 3 + static_cast<int>(rng() % 2), .seed = seed};
  return models::random_dag_near(o, ops - 1 + static_cast<int>(rng() % static_cast<uint64_t>(ops)));
}

Micros total_work(const ir::UnitGraph& g, const cost::CostModel& cost) {
  Micros sum{0};
  for (size_t i = 0; i < g.num_units(); ++i) sum += cost.unit_latency(make_id<UnitId>(i));
  return sum;
}

Micros critical_path(const ir::UnitGraph& g, const cost::CostModel& cost) {
  std::vector<double> lat(g.num_units());
  for (size_t i = 0; i < g.num_units(); ++i) lat[i] = cost.unit_latency(make_id<UnitId>(i)).count();
  return Micros{ir::critical_path(g, lat).length};
}

// The reference, written independently of the search: every assignment of units to at most k
// lanes (unlabeled: restricted growth strings), every order of every lane, each evaluated by
// predict.h with a sync on every cross-lane edge. Combinations that deadlock are skipped.
Micros brute_force(const ir::UnitGraph& g, const cost::CostModel& cost, int k) {
  const int n = static_cast<int>(g.num_units());
  if (k == 0 || k > n) k = n;
  std::vector<std::vector<bool>> edge(n, std::vector<bool>(n, false));
  for (const ir::UnitEdge& e : g.edges()) edge[index(e.from)][index(e.to)] = true;
  Micros best{std::numeric_limits<double>::infinity()};
  std::vector<int> lane_of(n);
  std::vector<std::vector<UnitId>> lanes;

  auto deadlocks = [&]() {
    std::vector<size_t> next(lanes.size(), 0);
    std::vector<bool> done(n, false);
    for (int placed = 0; placed < n;) {
      bool progressed = false;
      for (size_t l = 0; l < lanes.size(); ++l) {
        while (next[l] < lanes[l].size()) {
          const UnitId u = lanes[l][next[l]];
          bool ready = true;
          for (UnitId p : g.predecessors(u)) ready = ready && done[index(p)];
          if (!ready) break;
          done[index(u)] = true;
          ++next[l];
          ++placed;
          progressed = true;
        }
      }
      if (!progressed) return true;
    }
    return false;
  };
  auto evaluate = [&]() {
    if (deadlocks()) return;
    Schedule s;
    for (size_t l = 0; l < lanes.size(); ++l)
      s.lanes.push_back({.device = 0, .stream = static_cast<int>(l), .units = lanes[l]});
    for (const ir::UnitEdge& e : g.edges())
      if (lane_of[index(e.from)] != lane_of[index(e.to)]) s.syncs.push_back({e.from, e.to});
    best = std::min(best, predicted_latency(g, s, cost));
  };
  // Every order of lanes[l..]: permutations that keep each in-lane edge forward.
  std::function<void(size_t)> orders = [&](size_t l) {
    if (l == lanes.size()) return evaluate();
    std::sort(lanes[l].begin(), lanes[l].end());
    do {
      bool forward = true;
      for (size_t i = 0; i < lanes[l].size() && forward; ++i)
        for (size_t j = i + 1; j < lanes[l].size() && forward; ++j)
          forward = !edge[index(lanes[l][j])][index(lanes[l][i])];
      if (forward) orders(l + 1);
    } while (std::next_permutation(lanes[l].begin(), lanes[l].end()));
  };
  std::function<void(int, int)> assign = [&](int i, int used) {
    if (i == n) {
      lanes.assign(used, {});
      for (int u = 0; u < n; ++u) lanes[lane_of[u]].push_back(make_id<UnitId>(u));
      return orders(0);
    }
    for (int l = 0; l < std::min(used + 1, k); ++l) {
      lane_of[i] = l;
      assign(i + 1, std::max(used, l + 1));
    }
  };
  assign(0, 0);
  return best;
}

void expect_near(Micros a, Micros b, const std::string& what) {
  EXPECT_LE(std::abs(a.count() - b.count()), 1e-9 * std::max(1.0, std::abs(b.count())))
      << what << ": " << a.count() << " vs " << b.count() << " us";
}

// The schedule is valid with no warnings, and its predicted latency is predict.h's.
void expect_well_formed(const ir::UnitGraph& g, const cost::CostModel& cost, const Schedule& s) {
  std::string diagnostics;
  for (const Diagnostic& d : check(g, s)) diagnostics += to_string(d) + "\n";
  EXPECT_EQ(diagnostics, "");
  if (!diagnostics.empty()) return;
  EXPECT_EQ(s.algorithm, "optimal");
  ASSERT_TRUE(s.predicted_latency.has_value());
  expect_near(*s.predicted_latency, predicted_latency(g, s, cost), "predicted_latency");
}

TEST(Optimal, MatchesBruteForce) {
  int cases = 0;
  for (uint64_t seed = 0; seed < 240; ++seed) {
    const int n = 2 + static_cast<int>(seed % 6);  // 2..7 units
    const ir::UnitGraph g = small_dag(seed, n);
    const cost::DagCostModel cost(g);
    for (int k : {1, 2, 3, 0}) {
      SCOPED_TRACE("seed " + std::to_string(seed) + ", " + std::to_string(n) + " units, " +
                   std::to_string(k) + " streams");
      const Schedule s = OptimalScheduler({.max_streams = k}).schedule(g, cost);
      expect_well_formed(g, cost, s);
      if (k > 0) {
        EXPECT_LE(num_streams(s), k);
      }
      const Micros reference = brute_force(g, cost, k);
      expect_near(*s.predicted_latency, reference, "optimal vs brute force");
      // The reference itself meets the closed forms.
      if (k == 1) expect_near(reference, total_work(g, cost), "brute force, 1 stream");
      if (k == 0) expect_near(reference, critical_path(g, cost), "brute force, unbounded");
      ++cases;
    }
  }
  EXPECT_EQ(cases, 960);
}

// The same on HIOS's layered random DAGs (one source, one sink; 4..7 units).
TEST(Optimal, MatchesBruteForceOnLayeredDags) {
  for (uint64_t seed = 0; seed < 60; ++seed) {
    const ir::UnitGraph g = layered_dag(seed, 4 + static_cast<int>(seed % 4));
    const cost::DagCostModel cost(g);
    for (int k : {1, 2, 3, 0}) {
      SCOPED_TRACE("seed " + std::to_string(seed) + ", " + std::to_string(k) + " streams");
      const Schedule s = OptimalScheduler({.max_streams = k}).schedule(g, cost);
      expect_well_formed(g, cost, s);
      expect_near(*s.predicted_latency, brute_force(g, cost, k), "optimal vs brute force");
    }
  }
}

// One stream runs everything back to back; unbounded streams reach the critical path; in
// between, both bounds hold. 8..14 units, too many for the brute force.
TEST(Optimal, ClosedFormsAndBounds) {
  for (uint64_t seed = 0; seed < 60; ++seed) {
    const int n = 8 + static_cast<int>(seed % 7);
    const ir::UnitGraph g = small_dag(1000 + seed, n);
    const cost::DagCostModel cost(g);
    SCOPED_TRACE("seed " + std::to_string(1000 + seed) + ", " + std::to_string(n) + " units");
    const Micros work = total_work(g, cost), cp = critical_path(g, cost);
    const Schedule one = OptimalScheduler({.max_streams = 1}).schedule(g, cost);
    expect_well_formed(g, cost, one);
    expect_near(*one.predicted_latency, work, "1 stream vs total work");
    const Schedule unbounded = OptimalScheduler({.max_streams = 0}).schedule(g, cost);
    expect_well_formed(g, cost, unbounded);
    expect_near(*unbounded.predicted_latency, cp, "unbounded vs critical path");
    Micros previous = *one.predicted_latency;
    for (int k : {2, 3, 4}) {
      const Schedule s = OptimalScheduler({.max_streams = k}).schedule(g, cost);
      expect_well_formed(g, cost, s);
      const double t = s.predicted_latency->count(), eps = 1e-9 * std::max(1.0, t);
      EXPECT_GE(t, cp.count() - eps) << k << " streams";
      EXPECT_GE(t, work.count() / k - eps) << k << " streams";
      EXPECT_LE(t, previous.count() + eps) << "more streams never hurt: " << k;
      previous = *s.predicted_latency;
    }
  }
}

// Blocks are solved one by one: a chain of identical diamonds-with-a-tail takes exactly the
// copies times one copy's minimum, even when the whole graph is far above max_block_units.
TEST(Optimal, SolvesBlockByBlock) {
  const ir::UnitGraph one = small_dag(7, 7);
  const cost::DagCostModel one_cost(one);
  const int copies = 6;
  std::vector<ir::Unit> units;
  std::vector<ir::UnitEdge> edges;
  for (int c = 0; c < copies; ++c) {
    const size_t base = units.size();
    ir::Unit source{.name = "src" + std::to_string(c), .latency = Micros{500}};
    units.push_back(source);
    for (const ir::Unit& u : one.units()) {
      units.push_back(u);
      units.back().name += "_" + std::to_string(c);
    }
    ir::Unit sink{.name = "sink" + std::to_string(c), .latency = Micros{300}};
    units.push_back(sink);
    for (const ir::UnitEdge& e : one.edges())
      edges.push_back({.from = make_id<UnitId>(base + 1 + index(e.from)),
                       .to = make_id<UnitId>(base + 1 + index(e.to))});
    for (size_t i = 0; i < one.num_units(); ++i) {
      edges.push_back({.from = make_id<UnitId>(base), .to = make_id<UnitId>(base + 1 + i)});
      edges.push_back({.from = make_id<UnitId>(base + 1 + i),
                       .to = make_id<UnitId>(base + 1 + one.num_units())});
    }
    if (c > 0) edges.push_back({.from = make_id<UnitId>(base - 1), .to = make_id<UnitId>(base)});
  }
  const ir::UnitGraph g = ir::UnitGraph::from_dag("chain", std::move(units), std::move(edges));
  ASSERT_EQ(g.num_units(), static_cast<size_t>(copies * 9));
  const cost::DagCostModel cost(g);
  for (int k : {1, 2, 3}) {
    SearchStats stats;
    const Schedule s =
        OptimalScheduler({.max_streams = k}, {.max_block_units = 8}).schedule(g, cost, &stats);
    expect_well_formed(g, cost, s);
    const Micros block =
        *OptimalScheduler({.max_streams = k}).schedule(one, one_cost).predicted_latency;
    expect_near(*s.predicted_latency, copies * (block + Micros{800}), "chain of copies");
    EXPECT_EQ(stats.nodes, s.stats["nodes"].get<int64_t>());
    EXPECT_GT(stats.nodes, 0);
  }
}

// Rejection tests: a block beyond the limit would run for hours, not fail; several devices
// would need transfers the model does not have.
TEST(Optimal, RefusesWhatItCannotSolve) {
  const ir::UnitGraph g = small_dag(3, 12);
  const cost::DagCostModel cost(g);
  try {
    OptimalScheduler({}, {.max_block_units = 6}).schedule(g, cost);
    ADD_FAILURE() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("max_block_units = 6"), std::string::npos) << e.what();
  }
  EXPECT_THROW(OptimalScheduler({}, {.max_block_units = 0}), Error);
  EXPECT_THROW(OptimalScheduler({}, {.max_block_units = 65}), Error);
  try {
    make_scheduler("optimal", {.num_devices = 2});
    ADD_FAILURE() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
  }
  // A long chain is all cut units: no search, whatever its length.
  std::vector<ir::Unit> units(200);
  std::vector<ir::UnitEdge> edges;
  for (size_t i = 0; i < units.size(); ++i) {
    units[i] = {.name = "c" + std::to_string(i), .latency = Micros{1}};
    if (i > 0) edges.push_back({.from = make_id<UnitId>(i - 1), .to = make_id<UnitId>(i)});
  }
  const ir::UnitGraph chain = ir::UnitGraph::from_dag("chain", std::move(units), std::move(edges));
  const Schedule s = make_scheduler("optimal")->schedule(chain);
  EXPECT_EQ(s.lanes.size(), 1u);
  EXPECT_DOUBLE_EQ(s.predicted_latency->count(), 200);
}

// Nodes and wall time of the searches a test prints (printed, not asserted).
struct SearchEffort {
  int64_t most_nodes = 0, total_nodes = 0;
  double slowest_ms = 0, total_ms = 0;
  int searches = 0;

  // Runs search(&stats), counts its nodes and time, and returns its schedule.
  template <typename Search>
  Schedule add(const Search& search) {
    SearchStats stats;
    const auto begin = std::chrono::steady_clock::now();
    Schedule s = search(&stats);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin).count();
    most_nodes = std::max(most_nodes, stats.nodes);
    total_nodes += stats.nodes;
    slowest_ms = std::max(slowest_ms, ms);
    total_ms += ms;
    ++searches;
    return s;
  }
  // "WHAT: N graphs, nodes mean .. max .., time mean .. ms max .. ms".
  void print(const std::string& what) const {
    std::printf("%s: %d graphs, nodes mean %lld max %lld, time mean %.1f ms max %.1f ms\n",
                what.c_str(), searches, static_cast<long long>(total_nodes / searches),
                static_cast<long long>(most_nodes), total_ms / searches, slowest_ms);
  }
};

// Search effort on 14-unit blocks (printed, not asserted beyond exactness of the bounds): the
// numbers the header quotes.
TEST(Optimal, FourteenUnitBlocks) {
  for (int k : {2, 3}) {
    SearchEffort effort;
    for (uint64_t seed = 0; seed < 20; ++seed) {
      const ir::UnitGraph g = small_dag(5000 + seed, 14);
      const cost::DagCostModel cost(g);
      const Schedule s = effort.add([&](SearchStats* stats) {
        return OptimalScheduler({.max_streams = k}).schedule(g, cost, stats);
      });
      expect_well_formed(g, cost, s);
      EXPECT_GE(s.predicted_latency->count(), total_work(g, cost).count() / k - 1e-6);
    }
    effort.print("[optimal] 14 units, " + std::to_string(k) + " streams");
  }
}

// optimal-threads: P|prec, moldable|Cmax on the allotment schedulers' cost (test_graphs.h).

// Seeded scalings for ScalingCost: 0, 1/4, ..., 1 of the ideal speed-up.
std::vector<double> random_scalings(uint64_t seed, size_t n) {
  std::mt19937_64 rng(seed);
  std::vector<double> scaling(n);
  for (double& x : scaling) x = static_cast<double>(rng() % 5) / 4;
  return scaling;
}

// The reference, written independently of the search: every placement order (a topological
// order), every thread count and every core subset of each unit, each unit listed at its
// earliest start on its subset (after its predecessors and its cores' last units). Cores that
// come free at the same time are interchangeable, so a subset takes the lowest of them
// (cores_ at the same time as a taken one and below it are taken too). A branch whose finish
// is at or above the best makespan so far is cut: makespans only grow along it.
class ThreadsBruteForce {
 public:
  ThreadsBruteForce(const ir::UnitGraph& g, const cost::CostModel& cost, int cores)
      : g_(g), n_(static_cast<int>(g.num_units())), cores_(cores), latency_(g.num_units()) {
    for (int u = 0; u < n_; ++u)
      for (int k = 1; k <= cores; ++k)
        latency_[u].push_back(cost.unit_latency_at(make_id<UnitId>(u), k).count());
  }

  double minimum() {
    std::vector<double> finish(n_, 0), core_free(cores_, 0);
    best_ = std::numeric_limits<double>::infinity();
    place(0, finish, core_free, 0);
    return best_;
  }

 private:
  void place(uint32_t placed, std::vector<double>& finish, std::vector<double>& core_free,
             double makespan) {
    if (placed == (1u << n_) - 1) {
      best_ = std::min(best_, makespan);
      return;
    }
    for (int u = 0; u < n_; ++u) {
      if (placed >> u & 1) continue;
      double ready = 0;
      bool ok = true;
      for (UnitId p : g_.predecessors(make_id<UnitId>(u))) {
        ok = ok && (placed >> index(p) & 1);
        ready = std::max(ready, finish[index(p)]);
      }
      if (!ok) continue;
      for (uint32_t subset = 1; subset < (1u << cores_); ++subset) {
        bool canonical = true;
        double start = ready;
        for (int c = 0; c < cores_; ++c) {
          if (!(subset >> c & 1)) continue;
          start = std::max(start, core_free[c]);
          for (int d = 0; d < c; ++d)
            canonical = canonical && (core_free[d] != core_free[c] || (subset >> d & 1));
        }
        if (!canonical) continue;
        const double end = start + latency_[u][std::popcount(subset) - 1];
        if (std::max(makespan, end) >= best_) continue;
        const std::vector<double> saved = core_free;
        for (int c = 0; c < cores_; ++c)
          if (subset >> c & 1) core_free[c] = end;
        finish[u] = end;
        place(placed | 1u << u, finish, core_free, std::max(makespan, end));
        core_free = saved;
      }
    }
  }

  const ir::UnitGraph& g_;
  const int n_, cores_;
  std::vector<std::vector<double>> latency_;
  double best_ = 0;
};

// An allotment plan on `cores` that passes the validator without a warning, one thread count
// per unit, no more streams than cores, and a predicted latency that is predict.h's.
void expect_allotment_well_formed(const ir::UnitGraph& g, const cost::CostModel& cost,
                                  const Schedule& s, int cores) {
  std::string diagnostics;
  for (const Diagnostic& d : check(g, s)) diagnostics += to_string(d) + "\n";
  EXPECT_EQ(diagnostics, "");
  if (!diagnostics.empty()) return;
  EXPECT_EQ(s.algorithm, "optimal-threads");
  EXPECT_EQ(s.cores, cores);
  EXPECT_LE(num_streams(s), cores);
  for (const Lane& lane : s.lanes) EXPECT_EQ(lane.threads.size(), lane.units.size());
  EXPECT_EQ(s.launch_order.size(), g.num_units());
  ASSERT_TRUE(s.predicted_latency.has_value());
  expect_near(*s.predicted_latency, predicted_latency(g, s, cost), "predicted_latency");
}

bool widens(const ir::UnitGraph& g, const Schedule& s) {
  const std::vector<int> threads = unit_threads(s, g.num_units(), 1);
  return std::any_of(threads.begin(), threads.end(), [](int k) { return k > 1; });
}

// (1) The search's minimum is the reference's on random DAGs of 3..7 units (HIOS's layered
// ones and small_dag's, which have ties and zero-latency units), on 2 and 3 cores.
TEST(OptimalThreads, MatchesBruteForce) {
  int cases = 0, widened = 0, faster = 0;
  for (uint64_t seed = 0; seed < 80; ++seed) {
    const ir::UnitGraph g = seed % 2 == 0
                                ? testing::random_graph(7000 + seed, 3, 7, 4)
                                : small_dag(7000 + seed, 3 + static_cast<int>(seed / 2 % 5));
    const std::vector<double> scaling = random_scalings(seed, g.num_units());
    for (int cores : {2, 3}) {
      SCOPED_TRACE("seed " + std::to_string(seed) + ", " + std::to_string(g.num_units()) +
                   " units, " + std::to_string(cores) + " cores");
      const testing::ScalingCost cost(g, scaling, cores);
      const Schedule s = make_scheduler("optimal-threads")->schedule(g, cost);
      expect_allotment_well_formed(g, cost, s, cores);
      const double reference = ThreadsBruteForce(g, cost, cores).minimum();
      EXPECT_NEAR(s.predicted_latency->count(), reference, 1e-9 * std::max(1.0, reference))
          << to_string(s, g);
      const double one_thread =
          OptimalScheduler({.max_streams = cores}).schedule(g, cost).predicted_latency->count();
      EXPECT_LE(reference, one_thread + 1e-9 * std::max(1.0, one_thread));
      ++cases;
      widened += widens(g, s);
      faster += reference < one_thread * (1 - 1e-9);
    }
  }
  EXPECT_EQ(cases, 160);
  // The allotments matter: many optima widen a unit, and many beat one thread per unit.
  std::printf("[optimal-threads] %d cases, %d optima widen a unit, %d beat one thread per unit\n",
              cases, widened, faster);
  EXPECT_GT(widened, cases * 3 / 4);
  EXPECT_GT(faster, cases * 3 / 4);
}

// (2) The search space holds every plan the other allotment schedulers make and `optimal`'s
// (one thread per unit on as many lanes as cores), so none of them predicts less.
TEST(OptimalThreads, NeverWorseThanTheOtherAllotmentSchedulers) {
  int compared = 0;
  for (uint64_t seed = 0; seed < 60; ++seed) {
    const ir::UnitGraph g = testing::random_graph(8000 + seed, 4, 11, 6);
    const std::vector<double> scaling = random_scalings(100 + seed, g.num_units());
    for (int cores : {2, 3}) {
      SCOPED_TRACE("seed " + std::to_string(8000 + seed) + ", " + std::to_string(g.num_units()) +
                   " units, " + std::to_string(cores) + " cores");
      const testing::ScalingCost cost(g, scaling, cores);
      const Schedule s = make_scheduler("optimal-threads")->schedule(g, cost);
      expect_allotment_well_formed(g, cost, s, cores);
      const double best = s.predicted_latency->count();
      for (const char* name : {"moldable", "ios-threads", "intra", "optimal"}) {
        const Schedule other = make_scheduler(name, {.max_streams = cores})->schedule(g, cost);
        const double latency = predicted_latency(g, other, cost).count();
        EXPECT_GE(latency, best - 1e-9 * std::max(1.0, best)) << name << " beats optimal-threads";
        ++compared;
      }
    }
  }
  EXPECT_EQ(compared, 480);
}

// Without threads to gain it is `optimal` on as many lanes as cores; on one core, one lane.
TEST(OptimalThreads, DegeneratesToOptimal) {
  for (uint64_t seed = 0; seed < 30; ++seed) {
    const ir::UnitGraph g = small_dag(9000 + seed, 4 + static_cast<int>(seed % 7));
    SCOPED_TRACE("seed " + std::to_string(9000 + seed));
    for (int cores : {2, 3}) {
      const testing::ScalingCost cost(g, std::vector<double>(g.num_units(), 0), cores);
      const Schedule s = make_scheduler("optimal-threads")->schedule(g, cost);
      expect_allotment_well_formed(g, cost, s, cores);
      EXPECT_FALSE(widens(g, s));
      expect_near(*s.predicted_latency,
                  *OptimalScheduler({.max_streams = cores}).schedule(g, cost).predicted_latency,
                  "no scaling vs optimal");
    }
    // One core: every unit in id order on one lane, whatever the scaling, and no search.
    const testing::ScalingCost one(g, random_scalings(seed, g.num_units()), 1);
    SearchStats stats;
    const Schedule s = make_scheduler("optimal-threads")->schedule(g, one, &stats);
    expect_allotment_well_formed(g, one, s, 1);
    EXPECT_EQ(s.lanes.size(), 1u);
    EXPECT_EQ(stats.nodes, 0);
    expect_near(*s.predicted_latency, total_work(g, one), "one core vs total work");
    // A cost model without threads (max_threads() 1) and no --threads: one core.
    const cost::DagCostModel dag(g);
    EXPECT_EQ(make_scheduler("optimal-threads")->schedule(g, dag).cores, 1);
  }
}

// (4) Rejection tests: a block beyond the limit would run for hours, not fail; several devices
// would need transfers the model does not have.
TEST(OptimalThreads, RefusesWhatItCannotSolve) {
  const ir::UnitGraph g = small_dag(3, 12);
  const testing::ScalingCost cost(g, random_scalings(3, g.num_units()), 2);
  try {
    OptimalThreadsScheduler({}, {.max_block_units = 6}).schedule(g, cost);
    ADD_FAILURE() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    const std::string what = e.what();
    EXPECT_NE(what.find("optimal-threads: graph 'small3' has a block of 12 units"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("max_block_units = 6"), std::string::npos) << what;
  }
  try {
    OptimalThreadsScheduler({}, {.max_nodes = 10}).schedule(g, cost);
    ADD_FAILURE() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("optimal-threads: gave up after max_nodes = 10"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(OptimalThreadsScheduler({}, {.max_block_units = 65}), Error);
  try {
    make_scheduler("optimal-threads", {.num_devices = 2});
    ADD_FAILURE() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
  }
}

// Search effort on 12- and 14-unit blocks with random scalings on 2 and 3 cores (printed; the
// numbers docs/schedulers.md quotes).
TEST(OptimalThreads, TwelveAndFourteenUnitBlocks) {
  for (int n : {12, 14}) {
    for (int cores : {2, 3}) {
      SearchEffort effort;
      for (uint64_t seed = 0; seed < 10; ++seed) {
        const ir::UnitGraph g = small_dag(5000 + seed, n);
        const testing::ScalingCost cost(g, random_scalings(seed, g.num_units()), cores);
        const Schedule s = effort.add([&](SearchStats* stats) {
          return make_scheduler("optimal-threads")->schedule(g, cost, stats);
        });
        expect_allotment_well_formed(g, cost, s, cores);
      }
      effort.print("[optimal-threads] " + std::to_string(n) + " units, " + std::to_string(cores) +
                   " cores");
    }
  }
}

}  // namespace
}  // namespace braid::sched

namespace braid::sched {
namespace {
TEST(OptimalScratch, DISABLED_Stress) {
  for (int kind : {1}) {
    for (int n : {12, 14}) {
      for (int k : {2, 3, 4}) {
        int64_t most = 0, total = 0;
        double slowest_ms = 0, total_ms = 0;
        uint64_t worst = 0;
        int gave_up = 0;
        const int graphs = 50;
        for (uint64_t seed = 0; seed < graphs; ++seed) {
          const ir::UnitGraph g = kind == 0   ? small_dag(9000 + seed, n)
                                  : kind == 1 ? layered_dag(9000 + seed, n + 2)
                                              : models::random_dag({.ops = n + 2,
                                                                    .layers = 5 + (int)(seed % 3),
                                                                    .edges = 2 * (n + 2),
                                                                    .seed = seed});
          const cost::DagCostModel cost(g);
          SearchStats stats;
          const auto begin = std::chrono::steady_clock::now();
          try {
            OptimalScheduler({.max_streams = k}, {.max_nodes = 3'000'000})
                .schedule(g, cost, &stats);
          } catch (const Error& e) {
            ++gave_up;
            stats.nodes = 3'000'000;
          }
          const double ms =
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin)
                  .count();
          if (stats.nodes > most) worst = 9000 + seed;
          most = std::max(most, stats.nodes);
          total += stats.nodes;
          slowest_ms = std::max(slowest_ms, ms);
          total_ms += ms;
        }
        std::printf(
            "kind %d n %d k %d: gave up %d, nodes mean %lld max %lld (seed %llu), ms mean %.2f max "
            "%.1f\n",
            kind, n, k, gave_up, (long long)(total / graphs), (long long)most,
            (unsigned long long)worst, total_ms / graphs, slowest_ms);
        std::fflush(stdout);
      }
    }
  }
}
}  // namespace
}  // namespace braid::sched
