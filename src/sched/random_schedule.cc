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

Schedule with_random_allotment(Schedule s, int threads_per_lane, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> threads(1, threads_per_lane);
  s.cores = num_streams(s) * threads_per_lane;
  for (Stage& st : s.stages) {
    st.threads.clear();
    for (size_t g = 0; g < st.groups.size(); ++g) st.threads.push_back(threads(rng));
  }
  for (Lane& lane : s.lanes) {
    lane.threads.clear();
    for (size_t k = 0; k < lane.units.size(); ++k) lane.threads.push_back(threads(rng));
  }
  return s;
}

}  // namespace braid::sched
