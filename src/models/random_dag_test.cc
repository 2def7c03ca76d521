#include "models/random_dag.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include <algorithm>
#include <random>

#include "base/error.h"
#include "models/dag_json.h"

namespace braid::models {
namespace {

// Checks the invariants every generated DAG must hold; `what` names the options for replay.
void expect_well_formed(const ir::UnitGraph& g, const RandomDagOptions& o,
                        const std::string& what) {
  SCOPED_TRACE(what);
  ASSERT_EQ(g.num_units(), static_cast<size_t>(o.ops));
  ASSERT_EQ(g.edges().size(), static_cast<size_t>(o.edges));
  size_t sources = 0, sinks = 0;
  for (size_t i = 0; i < g.num_units(); ++i) {
    const UnitId u = make_id<UnitId>(i);
    sources += g.predecessors(u).empty();
    sinks += g.successors(u).empty();
    const double ms = Millis(*g.unit(u).latency).count();
    EXPECT_GE(ms, o.min_latency_ms);
    EXPECT_LE(ms, o.max_latency_ms);
  }
  EXPECT_EQ(sources, 1u);
  EXPECT_EQ(sinks, 1u);
  EXPECT_TRUE(g.predecessors(UnitId{0}).empty());
  EXPECT_TRUE(g.successors(make_id<UnitId>(g.num_units() - 1)).empty());
  for (const ir::UnitEdge& e : g.edges()) {
    EXPECT_LT(e.from, e.to);  // acyclic: ids are topological
    const double producer = Millis(*g.unit(e.from).latency).count();
    EXPECT_DOUBLE_EQ(Millis(*e.transfer).count(),
                     std::max(o.min_transfer_ms, o.transfer_ratio * producer));
  }
}

TEST(RandomDag, HiosDefaultsHaveExactCounts) {
  for (uint64_t seed : {0, 1, 2, 3, 42}) {
    RandomDagOptions o{.seed = seed};
    expect_well_formed(random_dag(o), o, "seed " + std::to_string(seed));
  }
}

TEST(RandomDag, ReproduciblePerSeed) {
  RandomDagOptions o{.ops = 60, .layers = 8, .edges = 120, .seed = 9};
  nlohmann::json a = to_dag_json(random_dag(o)), b = to_dag_json(random_dag(o));
  EXPECT_EQ(a, b);
  o.seed = 10;
  EXPECT_NE(to_dag_json(random_dag(o))["edges"], a["edges"]);
}

// Random small option combinations: every graph either satisfies the invariants or the
// options are refused with kInvalidArgument. Fails print the options to replay.
TEST(RandomDag, SmallGraphsSweep) {
  std::mt19937_64 rng(2024);
  int made = 0;
  for (int trial = 0; trial < 500; ++trial) {
    RandomDagOptions o;
    o.ops = 3 + static_cast<int>(rng() % 40);
    o.layers = 3 + static_cast<int>(rng() % (o.ops - 2));
    o.edges = o.ops - 1 + static_cast<int>(rng() % (2 * o.ops));
    o.seed = rng();
    const std::string what =
        "ops=" + std::to_string(o.ops) + " layers=" + std::to_string(o.layers) +
        " edges=" + std::to_string(o.edges) + " seed=" + std::to_string(o.seed);
    try {
      expect_well_formed(random_dag(o), o, what);
      ++made;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << what << ": " << e.what();
    }
  }
  EXPECT_GT(made, 300);
}

TEST(RandomDag, TransferFollowsTheProducer) {
  RandomDagOptions o{.ops = 30,
                     .layers = 5,
                     .edges = 60,
                     .transfer_ratio = 0.5,
                     .min_transfer_ms = 0.2,
                     .seed = 3};
  expect_well_formed(random_dag(o), o, "ratio 0.5");
}

Error options_error(const RandomDagOptions& o) {
  try {
    random_dag(o);
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "options accepted";
  return Error(ErrorCode::kInternal, "");
}

void expect_refused(const RandomDagOptions& o, std::string_view expected) {
  Error e = options_error(o);
  EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
}

// Impossible combinations must fail up front, naming the conflict, rather than loop forever
// or return a graph with the wrong counts.
TEST(RandomDag, RefusesImpossibleOptions) {
  expect_refused({.ops = 10, .layers = 2, .edges = 20}, "layers must be >= 3");
  expect_refused({.ops = 5, .layers = 8, .edges = 20}, "ops (5) must be >= layers (8)");
  expect_refused({.ops = 50, .layers = 5, .edges = 30}, "edges (30) must be >= ops - 1 (49)");
  expect_refused({.ops = 6, .layers = 3, .edges = 16}, "exceeds the 15 pairs");
  // A chain of 5 layers holds 7 forward edges at most.
  expect_refused({.ops = 5, .layers = 5, .edges = 8}, "hold at most 7 forward edges");
  // ~33 nodes in each of 3 middle layers need far more than 100 edges to link every node
  // to the layers before and after it.
  expect_refused({.ops = 100, .layers = 5, .edges = 100}, "linking adjacent layers needs at least");
  expect_refused({.ops = 100, .layers = 3, .edges = 300, .min_latency_ms = 2, .max_latency_ms = 1},
                 "min_latency_ms <= max_latency_ms");
  expect_refused({.ops = 100, .layers = 3, .edges = 300},
                 "ops (100) exceeds 1 middle layers x 30 nodes");
}

TEST(RandomDag, FullLayeringIsReachable) {
  // Exactly the capacity of a 5-layer chain: pass 2 must enumerate the last free pairs.
  RandomDagOptions o{.ops = 5, .layers = 5, .edges = 7, .seed = 1};
  expect_well_formed(random_dag(o), o, "full chain");
}

// random_dag_near: the admitted edge count nearest the target; every count strictly nearer is
// refused by random_dag (or lies outside [ops - 1, ops (ops - 1) / 2]).
TEST(RandomDag, NearestEdgeCountThatFits) {
  for (const auto& [options, target] :
       {std::pair{RandomDagOptions{.ops = 20, .layers = 5, .seed = 3}, 30},
        {RandomDagOptions{.ops = 5, .layers = 3, .seed = 3}, 10},
        {RandomDagOptions{.ops = 30, .layers = 12, .seed = 8}, 29}}) {
    SCOPED_TRACE("ops " + std::to_string(options.ops) + " target " + std::to_string(target));
    const int got = static_cast<int>(random_dag_near(options, target).edges().size());
    for (int d = 0; d < std::abs(got - target); ++d)
      for (int edges : {target + d, target - d}) {
        if (edges < options.ops - 1 || edges > options.ops * (options.ops - 1) / 2) continue;
        RandomDagOptions o = options;
        o.edges = edges;
        EXPECT_THROW(random_dag(o), Error) << edges << " edges fit, nearer than " << got;
      }
  }
  EXPECT_THROW(random_dag_near({.ops = 2, .layers = 3, .seed = 3}, 2), Error);
}

}  // namespace
}  // namespace braid::models
