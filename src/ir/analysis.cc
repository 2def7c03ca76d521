#include "ir/analysis.h"

#include <algorithm>
#include <random>

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/max_cardinality_matching.hpp>

namespace braid::ir {

std::vector<UnitId> random_topo_order(const UnitGraph& g, uint64_t seed) {
  const size_t n = g.num_units();
  std::mt19937_64 rng(seed);
  std::vector<size_t> indegree(n);
  std::vector<UnitId> ready, order;
  for (size_t u = 0; u < n; ++u) {
    indegree[u] = g.predecessors(make_id<UnitId>(u)).size();
    if (indegree[u] == 0) ready.push_back(make_id<UnitId>(u));
  }
  while (!ready.empty()) {
    std::uniform_int_distribution<size_t> pick(0, ready.size() - 1);
    size_t k = pick(rng);
    UnitId u = ready[k];
    ready[k] = ready.back();
    ready.pop_back();
    order.push_back(u);
    for (UnitId v : g.successors(u))
      if (--indegree[index(v)] == 0) ready.push_back(v);
  }
  return order;
}

bool is_topological(const UnitGraph& g, std::span<const UnitId> order) {
  if (order.size() != g.num_units()) return false;
  std::vector<size_t> position(g.num_units(), SIZE_MAX);
  for (size_t i = 0; i < order.size(); ++i) {
    if (index(order[i]) >= g.num_units() || position[index(order[i])] != SIZE_MAX) return false;
    position[index(order[i])] = i;
  }
  for (const UnitEdge& e : g.edges())
    if (position[index(e.from)] >= position[index(e.to)]) return false;
  return true;
}

CriticalPath critical_path(const UnitGraph& g, std::span<const double> unit_cost,
                           std::span<const double> edge_cost) {
  const size_t n = g.num_units();
  std::vector<double> finish(n, 0);
  std::vector<int64_t> via(n, -1);
  for (size_t u = 0; u < n; ++u) {  // ids are topological
    double start = 0;
    for (uint32_t e : g.in_edges(make_id<UnitId>(u))) {
      const UnitEdge& edge = g.edges()[e];
      double t = finish[index(edge.from)] + (edge_cost.empty() ? 0.0 : edge_cost[e]);
      if (via[u] < 0 || t > start) {
        start = t;
        via[u] = static_cast<int64_t>(index(edge.from));
      }
    }
    finish[u] = start + unit_cost[u];
  }
  CriticalPath cp;
  if (n == 0) return cp;
  size_t end = static_cast<size_t>(std::max_element(finish.begin(), finish.end()) - finish.begin());
  cp.length = finish[end];
  for (int64_t u = static_cast<int64_t>(end); u >= 0; u = via[u]) cp.units.push_back(make_id<UnitId>(u));
  std::reverse(cp.units.begin(), cp.units.end());
  return cp;
}

std::vector<std::vector<bool>> transitive_closure(const UnitGraph& g) {
  const size_t n = g.num_units();
  std::vector<std::vector<bool>> reach(n, std::vector<bool>(n, false));
  for (size_t u = n; u-- > 0;) {  // reverse topological: successors are complete
    for (UnitId v : g.successors(make_id<UnitId>(u))) {
      reach[u][index(v)] = true;
      const auto& rv = reach[index(v)];
      for (size_t w = index(v) + 1; w < n; ++w)
        if (rv[w]) reach[u][w] = true;
    }
  }
  return reach;
}

size_t width(const UnitGraph& g) {
  const size_t n = g.num_units();
  if (n == 0) return 0;
  auto reach = transitive_closure(g);
  // Left copy u, right copy n + v, an edge when v is reachable from u. A maximum matching is a
  // minimum chain cover of the closure; Dilworth: width = n - |matching|.
  using BGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS>;
  BGraph b(2 * n);
  for (size_t u = 0; u < n; ++u)
    for (size_t v = u + 1; v < n; ++v)
      if (reach[u][v]) boost::add_edge(u, n + v, b);
  std::vector<boost::graph_traits<BGraph>::vertex_descriptor> mate(2 * n);
  boost::edmonds_maximum_cardinality_matching(b, &mate[0]);
  return n - boost::matching_size(b, &mate[0]);
}

std::vector<bool> cut_units(const UnitGraph& g) {
  const size_t n = g.num_units();
  std::vector<bool> cut(n, false);
  std::vector<bool> seen(n);
  std::vector<size_t> stack;
  for (size_t v = 0; v < n; ++v) {
    // v is a cut when no source-to-sink path avoids it: search from every other source
    // without entering v, and look for a sink.
    std::fill(seen.begin(), seen.end(), false);
    seen[v] = true;
    stack.clear();
    for (size_t s = 0; s < n; ++s)
      if (!seen[s] && g.predecessors(make_id<UnitId>(s)).empty()) {
        seen[s] = true;
        stack.push_back(s);
      }
    bool avoided = false;
    while (!stack.empty() && !avoided) {
      size_t u = stack.back();
      stack.pop_back();
      auto succ = g.successors(make_id<UnitId>(u));
      if (succ.empty()) avoided = true;
      for (UnitId w : succ)
        if (!seen[index(w)]) {
          seen[index(w)] = true;
          stack.push_back(index(w));
        }
    }
    cut[v] = !avoided;
  }
  return cut;
}

std::vector<Block> block_partition(const UnitGraph& g) {
  const size_t n = g.num_units();
  std::vector<bool> cut = cut_units(g);

  std::vector<Block> blocks;
  Block current;
  for (size_t u = 0; u < n; ++u) {
    UnitId id = make_id<UnitId>(u);
    if (cut[u]) {
      if (current.units.empty() || current.is_chain) {
        // Extends (or starts) a chain block of consecutive cuts.
        current.is_chain = true;
        current.units.push_back(id);
      } else {
        // Closes a parallel region.
        current.units.push_back(id);
        blocks.push_back(std::move(current));
        current = {};
      }
    } else {
      if (current.is_chain) {
        blocks.push_back(std::move(current));
        current = {};
      }
      current.units.push_back(id);
    }
  }
  if (!current.units.empty()) blocks.push_back(std::move(current));
  return blocks;
}

}  // namespace braid::ir
