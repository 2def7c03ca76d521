#include "sched/endings.h"

#include <gtest/gtest.h>

#include <bit>
#include <set>
#include <vector>

#include "base/error.h"
#include "sched/test_graphs.h"

namespace braid::sched {
namespace {

// Every ending of s by brute force: each subset of s with no edge leaving it into s, its groups
// counted by a union-find over its edges.
std::set<UnitMask> brute_force(const EndingGraph& g, UnitMask s, EndingLimits limits) {
  std::set<UnitMask> out;
  std::vector<size_t> members;
  for (size_t i = 0; i < g.size(); ++i)
    if (s >> i & 1) members.push_back(i);
  for (uint64_t pick = 1; pick < (uint64_t{1} << members.size()); ++pick) {
    UnitMask e = 0;
    for (size_t k = 0; k < members.size(); ++k)
      if (pick >> k & 1) e |= UnitMask{1} << members[k];
    bool closed = true;
    for (size_t i = 0; i < g.size(); ++i)
      if ((e >> i & 1) && (g.succ[i] & s & ~e) != 0) closed = false;
    if (!closed) continue;
    const std::vector<UnitMask> groups = ending_groups(g, e);
    bool fits = static_cast<int>(groups.size()) <= limits.groups;
    for (UnitMask group : groups) fits = fits && std::popcount(group) <= limits.group_size;
    if (fits) out.insert(e);
  }
  return out;
}

TEST(Endings, EqualBruteForceOnRandomStates) {
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    const ir::UnitGraph graph = testing::random_graph(seed, 3, 14, 6);
    std::vector<UnitId> units;
    for (size_t i = 0; i < graph.num_units(); ++i) units.push_back(make_id<UnitId>(i));
    const EndingGraph g = ending_graph(graph, units);
    // States: every prefix of the topological (id) order, which is closed under predecessors.
    for (size_t n = 1; n <= g.size(); ++n) {
      const UnitMask s = n == 64 ? ~UnitMask{0} : (UnitMask{1} << n) - 1;
      for (EndingLimits limits : {EndingLimits{}, EndingLimits{.group_size = 3, .groups = 8},
                                  EndingLimits{.group_size = 1, .groups = 2}}) {
        std::set<UnitMask> seen;
        for_each_ending(g, s, limits, [&](UnitMask e, int groups) {
          EXPECT_TRUE(seen.insert(e).second) << "ending reached twice";
          EXPECT_EQ(groups, static_cast<int>(ending_groups(g, e).size()));
        });
        EXPECT_EQ(seen, brute_force(g, s, limits)) << "seed " << seed << ", " << n << " units";
      }
    }
  }
}

TEST(Endings, GroupsOfTheDiamond) {
  const ir::UnitGraph graph = testing::diamond();
  const std::vector<UnitId> units{make_id<UnitId>(0), make_id<UnitId>(1), make_id<UnitId>(2),
                                  make_id<UnitId>(3)};
  const EndingGraph g = ending_graph(graph, units);
  // Without d: b and c are sinks and two groups.
  EXPECT_EQ(ending_groups(g, 0b0110), (std::vector<UnitMask>{0b0010, 0b0100}));
  std::set<UnitMask> endings;
  for_each_ending(g, 0b0111, {.group_size = 3, .groups = 1},
                  [&](UnitMask e, int) { endings.insert(e); });
  // {b}, {c}, {a, b, c}; {b, c} is two groups.
  EXPECT_EQ(endings, (std::set<UnitMask>{0b0010, 0b0100, 0b0111}));
}

TEST(Endings, RejectsUnsortedOrTooManyUnits) {
  const ir::UnitGraph graph = testing::diamond();
  const std::vector<UnitId> unsorted{make_id<UnitId>(2), make_id<UnitId>(1)};
  EXPECT_THROW(ending_graph(graph, unsorted), Error);
  EXPECT_THROW(ending_graph(graph, {}), Error);
}

}  // namespace
}  // namespace braid::sched
