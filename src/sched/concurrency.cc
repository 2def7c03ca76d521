#include "sched/concurrency.h"

// Boost.Graph 1.74's edge iterators trip GCC 12's -Wmaybe-uninitialized (a false positive
// inside boost/graph/detail/adj_list_edge_iterator.hpp), which -Werror would make fatal.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/boykov_kolmogorov_max_flow.hpp>

#include "base/error.h"

namespace braid::sched {

ConcurrentSet heaviest_concurrent_set(std::span<const int> weight,
                                      const std::function<bool(size_t, size_t)>& before) {
  using Traits = boost::adjacency_list_traits<boost::vecS, boost::vecS, boost::directedS>;
  using Graph = boost::adjacency_list<
      boost::vecS, boost::vecS, boost::directedS,
      boost::property<boost::vertex_index_t, long,
                      boost::property<boost::vertex_color_t, boost::default_color_type,
                                      boost::property<boost::vertex_distance_t, long,
                                                      boost::property<boost::vertex_predecessor_t,
                                                                      Traits::edge_descriptor>>>>,
      boost::property<
          boost::edge_capacity_t, long,
          boost::property<boost::edge_residual_capacity_t, long,
                          boost::property<boost::edge_reverse_t, Traits::edge_descriptor>>>>;
  const size_t n = weight.size();
  ConcurrentSet out;
  if (n == 0) return out;
  long total = 0;
  for (int w : weight) {
    BRAID_ASSERT(w >= 0, "a negative weight in heaviest_concurrent_set");
    total += w;
  }
  // Vertices: u' = u, u'' = n + u, source 2n, sink 2n + 1.
  Graph g(2 * n + 2);
  const size_t source = 2 * n, sink = 2 * n + 1;
  auto capacity = boost::get(boost::edge_capacity, g);
  auto reverse = boost::get(boost::edge_reverse, g);
  auto add = [&](size_t from, size_t to, long cap) {
    auto e = boost::add_edge(from, to, g).first;
    auto r = boost::add_edge(to, from, g).first;
    capacity[e] = cap;
    capacity[r] = 0;
    reverse[e] = r;
    reverse[r] = e;
  };
  for (size_t u = 0; u < n; ++u) {
    add(source, u, weight[u]);
    add(n + u, sink, weight[u]);
  }
  const long unbounded = total + 1;
  for (size_t u = 0; u < n; ++u)
    for (size_t v = 0; v < n; ++v)
      if (u != v && before(u, v)) add(u, n + v, unbounded);
  const long flow = boost::boykov_kolmogorov_max_flow(g, source, sink);
  out.threads = total - flow;
  // The source side of the minimum cut: what the source reaches in the residual graph.
  auto residual = boost::get(boost::edge_residual_capacity, g);
  std::vector<bool> reached(2 * n + 2, false);
  std::vector<size_t> stack = {source};
  reached[source] = true;
  while (!stack.empty()) {
    const size_t v = stack.back();
    stack.pop_back();
    for (auto [e, end] = boost::out_edges(v, g); e != end; ++e)
      if (const size_t w = boost::target(*e, g); residual[*e] > 0 && !reached[w]) {
        reached[w] = true;
        stack.push_back(w);
      }
  }
  for (size_t u = 0; u < n; ++u)
    if (reached[u] && !reached[n + u] && weight[u] > 0) out.units.push_back(u);
  return out;
}

}  // namespace braid::sched

#pragma GCC diagnostic pop
