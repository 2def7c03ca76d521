#include "sched/endings.h"

#include <algorithm>

#include "base/error.h"

namespace braid::sched {

EndingGraph ending_graph(const ir::UnitGraph& graph, std::span<const UnitId> units) {
  const size_t n = units.size();
  BRAID_CHECK(n >= 1 && n <= kMaxEndingUnits, ErrorCode::kInvalidArgument,
              "endings: a set of 1 to ", kMaxEndingUnits, " units, got ", n);
  BRAID_CHECK(std::is_sorted(units.begin(), units.end()) &&
                  std::adjacent_find(units.begin(), units.end()) == units.end(),
              ErrorCode::kInvalidArgument, "endings: units must be distinct and in id order");
  EndingGraph g;
  g.succ.assign(n, 0);
  g.pred.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    BRAID_CHECK(index(units[i]) < graph.num_units(), ErrorCode::kInvalidArgument,
                "endings: no unit ", index(units[i]), " in '", graph.name(), "'");
    for (UnitId v : graph.successors(units[i])) {
      auto it = std::lower_bound(units.begin(), units.end(), v);
      if (it == units.end() || *it != v) continue;
      const size_t j = static_cast<size_t>(it - units.begin());
      g.succ[i] |= UnitMask{1} << j;
      g.pred[j] |= UnitMask{1} << i;
    }
  }
  g.adj.resize(n);
  for (size_t i = 0; i < n; ++i) g.adj[i] = g.succ[i] | g.pred[i];
  return g;
}

std::vector<UnitMask> ending_groups(const EndingGraph& g, UnitMask ending) {
  std::vector<UnitMask> groups;
  for (UnitMask rest = ending; rest != 0;) {
    const UnitMask group = endings_detail::component(g, rest & (~rest + 1), ending);
    groups.push_back(group);
    rest &= ~group;
  }
  return groups;
}

}  // namespace braid::sched
