#include "sched/random_schedule.h"

#include <random>

#include "ir/analysis.h"

namespace braid::sched {

Schedule random_stream_schedule(const ir::UnitGraph& graph, int num_streams, uint64_t seed) {
  Schedule s;
  s.algorithm = "random";
  s.model = graph.name();
  std::mt19937_64 rng(seed);
  std::vector<UnitId> order = ir::random_topo_order(graph, rng());
  std::uniform_int_distribution<int> pick(0, num_streams - 1);
  std::vector<int> stream_of(graph.num_units());
  std::vector<Lane> lanes(num_streams);
  for (int i = 0; i < num_streams; ++i) lanes[i].stream = i;
  for (UnitId u : order) {
    int k = pick(rng);
    stream_of[index(u)] = k;
    lanes[k].units.push_back(u);
  }
  for (Lane& lane : lanes)
    if (!lane.units.empty()) s.lanes.push_back(std::move(lane));
  for (const ir::UnitEdge& e : graph.edges())
    if (stream_of[index(e.from)] != stream_of[index(e.to)]) s.syncs.push_back({e.from, e.to});
  return s;
}

}  // namespace braid::sched
