#include "ir/analysis.h"

#include <gtest/gtest.h>

#include <random>

namespace braid::ir {
namespace {

UnitGraph dag(size_t n, std::vector<std::pair<int, int>> e) {
  std::vector<Unit> units(n);
  for (size_t i = 0; i < n; ++i) units[i].name = "v" + std::to_string(i);
  std::vector<UnitEdge> edges;
  for (auto [a, b] : e) edges.push_back({make_id<UnitId>(a), make_id<UnitId>(b)});
  return UnitGraph::from_dag("t", units, edges);
}

// Brute force: the largest set of pairwise unreachable units.
size_t brute_width(const UnitGraph& g) {
  auto reach = transitive_closure(g);
  size_t n = g.num_units(), best = 0;
  for (uint32_t mask = 1; mask < (1u << n); ++mask) {
    bool ok = true;
    for (size_t a = 0; a < n && ok; ++a)
      for (size_t b = 0; b < n && ok; ++b)
        if ((mask >> a & 1) && (mask >> b & 1) && reach[a][b]) ok = false;
    if (ok) best = std::max<size_t>(best, __builtin_popcount(mask));
  }
  return best;
}

TEST(Width, MatchesBruteForceOnRandomDags) {
  for (uint64_t seed = 0; seed < 60; ++seed) {
    std::mt19937_64 rng(seed);
    size_t n = 2 + rng() % 9;
    std::vector<std::pair<int, int>> e;
    for (size_t a = 0; a < n; ++a)
      for (size_t b = a + 1; b < n; ++b)
        if (rng() % 3 == 0) e.push_back({static_cast<int>(a), static_cast<int>(b)});
    UnitGraph g = dag(n, e);
    EXPECT_EQ(width(g), brute_width(g)) << "seed " << seed;
  }
}

TEST(CriticalPath, DiamondTakesTheHeavierBranch) {
  UnitGraph g = dag(4, {{0, 1}, {0, 2}, {1, 3}, {2, 3}});
  std::vector<double> cost = {1, 5, 2, 1};
  CriticalPath cp = critical_path(g, cost);
  EXPECT_DOUBLE_EQ(cp.length, 7);
  ASSERT_EQ(cp.units.size(), 3u);
  EXPECT_EQ(cp.units[1], UnitId{1});
  std::vector<double> edge_cost = {0, 10, 0, 0};  // 0->2 carries a transfer
  EXPECT_DOUBLE_EQ(critical_path(g, cost, edge_cost).length, 14);
}

TEST(Blocks, ChainThenTwoModules) {
  // 0 -> 1 (chain), then {2,3} -> 4 (module), then {5,6} -> 7 (module).
  UnitGraph g = dag(8, {{0, 1}, {1, 2}, {1, 3}, {2, 4}, {3, 4}, {4, 5}, {4, 6}, {5, 7}, {6, 7}});
  auto blocks = block_partition(g);
  ASSERT_EQ(blocks.size(), 3u);
  EXPECT_TRUE(blocks[0].is_chain);
  EXPECT_EQ(blocks[0].units.size(), 2u);
  EXPECT_EQ(blocks[1].units.size(), 3u);
  EXPECT_EQ(blocks[2].units.size(), 3u);
}

// A bypass edge (SqueezeNet's residual) keeps the units it skips out of the cut set: a block
// ends only where every path meets.
TEST(Blocks, BypassIsNotCut) {
  UnitGraph g = dag(5, {{0, 1}, {1, 2}, {2, 3}, {0, 3}, {3, 4}});
  auto cut = cut_units(g);
  EXPECT_EQ(cut, (std::vector<bool>{true, false, false, true, true}));
  auto blocks = block_partition(g);
  ASSERT_EQ(blocks.size(), 3u);
  EXPECT_EQ(blocks[1].units.size(), 3u);  // 1, 2 and the closing 3
}

TEST(TopoOrder, RandomOrdersAreTopological) {
  UnitGraph g = dag(6, {{0, 2}, {1, 2}, {2, 3}, {2, 4}, {4, 5}});
  for (uint64_t s = 0; s < 20; ++s) EXPECT_TRUE(is_topological(g, random_topo_order(g, s)));
}

}  // namespace
}  // namespace braid::ir
