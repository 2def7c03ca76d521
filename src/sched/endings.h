// The pruned endings of a unit set (ios.txt §4.1, §4.3; top.txt §V-C, Fig. 5): what IOS's
// dynamic program recurses over and what TOP's GPG picks from, one enumeration for both.
//
//   sched::EndingGraph g = sched::ending_graph(units, block);   // <= 64 units, bit i = block[i]
//   sched::for_each_ending(g, state, {.group_size = 3, .groups = 8},
//                          [&](sched::UnitMask ending, int groups) { ... });
//
// An ending E of a state S (a set closed under predecessors) is a non-empty subset of S with no
// edge from E to S - E: the last stage of a schedule of S. Its groups are its weakly connected
// components, each run in order on one stream. The pruning keeps endings whose groups have at
// most `group_size` (r) units and which have at most `groups` (s) groups.
#pragma once

#include <bit>
#include <cstdint>
#include <span>
#include <vector>

#include "base/ids.h"
#include "ir/unit_graph.h"

namespace braid::sched {

// A set of at most 64 units of one graph or part: bit i is its i-th unit.
using UnitMask = uint64_t;
inline constexpr size_t kMaxEndingUnits = 64;

// The edges among n <= 64 units, as masks (edges to units outside are dropped).
struct EndingGraph {
  std::vector<UnitMask> succ, pred, adj;  // adj = succ | pred
  size_t size() const { return succ.size(); }
};

// The graph among `units` (sorted by id, at most 64) of `graph`. kInvalidArgument otherwise.
EndingGraph ending_graph(const ir::UnitGraph& graph, std::span<const UnitId> units);

struct EndingLimits {
  int group_size = static_cast<int>(kMaxEndingUnits);  // r
  int groups = static_cast<int>(kMaxEndingUnits);      // s
};

namespace endings_detail {

inline size_t lowest(UnitMask m) {
  return static_cast<size_t>(std::countr_zero(m));
}

// The units of `within` connected to `start` (a non-empty subset of `within`).
inline UnitMask component(const EndingGraph& g, UnitMask start, UnitMask within) {
  UnitMask comp = start;
  for (UnitMask frontier = start; frontier != 0;) {
    UnitMask next = 0;
    for (UnitMask m = frontier; m != 0; m &= m - 1) next |= g.adj[lowest(m)];
    frontier = next & within & ~comp;
    comp |= frontier;
  }
  return comp;
}

// A depth-first search over the up-closed subsets of s: `ending` grows one unit at a time, each
// drawn from `addable` (units of s - ending whose successors in s all lie in `ending`). Sibling
// branches forbid the units earlier siblings added, so each ending is reached exactly once. A
// group only grows as units join, so a group over r prunes the whole branch; the group count
// can shrink (a unit joins two groups), so s is checked per ending.
template <typename Visit>
void extend(const EndingGraph& g, const EndingLimits& limits, UnitMask s, UnitMask ending,
            UnitMask addable, UnitMask forbidden, int groups, Visit& visit) {
  for (UnitMask candidates = addable & ~forbidden; candidates != 0; candidates &= candidates - 1) {
    const size_t c = lowest(candidates);
    const UnitMask next = ending | (UnitMask{1} << c);
    // c's neighbours in `ending` are its successors in s (its predecessors are not in it).
    UnitMask group = UnitMask{1} << c;
    int joined = 0;
    for (UnitMask rest = g.succ[c] & ending; rest != 0; ++joined) {
      const UnitMask other = component(g, rest & (~rest + 1), ending);
      group |= other;
      rest &= ~other;
    }
    if (std::popcount(group) <= limits.group_size) {
      const int next_groups = groups + 1 - joined;
      if (next_groups <= limits.groups) visit(next, next_groups);
      UnitMask next_addable = addable & ~(UnitMask{1} << c);
      for (UnitMask m = g.pred[c] & s; m != 0; m &= m - 1)
        if ((g.succ[lowest(m)] & s & ~next) == 0) next_addable |= UnitMask{1} << lowest(m);
      extend(g, limits, s, next, next_addable, forbidden, next_groups, visit);
    }
    forbidden |= UnitMask{1} << c;
  }
}

}  // namespace endings_detail

// The units of s with no successor in s.
inline UnitMask sinks_of(const EndingGraph& g, UnitMask s) {
  UnitMask sinks = 0;
  for (UnitMask m = s; m != 0; m &= m - 1)
    if ((g.succ[endings_detail::lowest(m)] & s) == 0)
      sinks |= UnitMask{1} << endings_detail::lowest(m);
  return sinks;
}

// Calls visit(ending, groups) once for every ending of s within `limits` (s must be closed under
// predecessors in g). The order is the search's: deterministic for a graph and state.
template <typename Visit>
void for_each_ending(const EndingGraph& g, UnitMask s, const EndingLimits& limits, Visit&& visit) {
  endings_detail::extend(g, limits, s, 0, sinks_of(g, s), 0, 0, visit);
}

// The groups of an ending: its connected parts, each as a mask, ordered by their lowest unit.
std::vector<UnitMask> ending_groups(const EndingGraph& g, UnitMask ending);

}  // namespace braid::sched
