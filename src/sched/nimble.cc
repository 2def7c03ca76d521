#include "sched/nimble.h"

#include <algorithm>

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/max_cardinality_matching.hpp>

#include "base/error.h"
#include "ir/analysis.h"
#include "sched/lanes.h"

namespace braid::sched {

namespace {

using Bipartite = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS>;
using Vertex = boost::graph_traits<Bipartite>::vertex_descriptor;

// Boost's "initial matching finder" that keeps the matching already in `mate`, so that the
// augmenting search continues from it.
template <typename Graph, typename MateMap>
struct KeepMatching {
  static void find_matching(const Graph&, MateMap) {}
};

std::vector<std::pair<UnitId, UnitId>> reduce(const ir::UnitGraph& graph,
                                              const std::vector<std::vector<bool>>& reach) {
  std::vector<std::pair<UnitId, UnitId>> meg;
  for (size_t u = 0; u < graph.num_units(); ++u) {
    const auto succ = graph.successors(make_id<UnitId>(u));
    for (UnitId v : succ) {
      bool implied = false;  // another successor w reaches v
      for (UnitId w : succ)
        if (w != v && reach[index(w)][index(v)]) {
          implied = true;
          break;
        }
      if (!implied) meg.emplace_back(make_id<UnitId>(u), v);
    }
  }
  return meg;  // successors are sorted: so is this
}

}  // namespace

std::vector<std::pair<UnitId, UnitId>> minimum_equivalent_graph(const ir::UnitGraph& graph) {
  return reduce(graph, ir::transitive_closure(graph));
}

Schedule NimbleScheduler::schedule(const ir::UnitGraph& graph, const cost::CostModel&,
                                   SearchStats*) const {
  const size_t n = graph.num_units();
  Schedule s;
  s.algorithm = std::string(name());
  s.model = graph.name();
  if (n == 0) return s;
  const auto reach = ir::transitive_closure(graph);
  const auto meg = reduce(graph, reach);

  // Step 2: left copy u = vertex u, right copy v = vertex n + v; an edge per MEG edge.
  Bipartite b(2 * n);
  for (const auto& [u, v] : meg) boost::add_edge(index(u), n + index(v), b);
  std::vector<Vertex> mate(2 * n);
  boost::edmonds_maximum_cardinality_matching(b, &mate[0]);
  const size_t chains = n - boost::matching_size(b, &mate[0]);

  // Step 3: the rest of the closure's pairs, then augment from step 2's matching.
  for (size_t u = 0; u < n; ++u)
    for (size_t v = u + 1; v < n; ++v)
      if (reach[u][v] && !std::binary_search(meg.begin(), meg.end(),
                                             std::pair(make_id<UnitId>(u), make_id<UnitId>(v))))
        boost::add_edge(u, n + v, b);
  boost::matching<Bipartite, Vertex*, boost::property_map<Bipartite, boost::vertex_index_t>::type,
                  boost::edmonds_augmenting_path_finder, KeepMatching, boost::no_matching_verifier>(
      b, &mate[0], boost::get(boost::vertex_index, b));

  // Chains of the closure: u is followed by v when left u is matched to right v. A chain
  // starts at a unit whose right copy is unmatched; streams are numbered by their first unit.
  const Vertex none = boost::graph_traits<Bipartite>::null_vertex();
  std::vector<int> stream_of(n, -1);
  int streams = 0;
  for (size_t u = 0; u < n; ++u) {
    if (mate[n + u] != none) continue;
    for (size_t w = u;;) {
      stream_of[w] = streams;
      if (mate[w] == none) break;
      w = mate[w] - n;
    }
    ++streams;
  }
  std::vector<UnitId> order(n);
  for (size_t i = 0; i < n; ++i) {
    BRAID_ASSERT(stream_of[i] >= 0, "nimble: unit ", i, " is on no chain");
    order[i] = make_id<UnitId>(i);
  }
  s.lanes = make_lanes(stream_of, order);
  // Step 4: waits only on MEG edges between streams.
  for (const auto& [u, v] : meg)
    if (stream_of[index(u)] != stream_of[index(v)]) s.syncs.push_back({u, v});
  s.stats["meg_edges"] = meg.size();
  s.stats["chains"] = chains;
  s.stats["syncs"] = s.syncs.size();
  return s;
}

}  // namespace braid::sched
