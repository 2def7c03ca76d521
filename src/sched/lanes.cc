#include "sched/lanes.h"

#include <algorithm>

#include "base/error.h"

namespace braid::sched {

std::vector<Lane> make_lanes(std::span<const int> stream_of, std::span<const UnitId> order,
                             std::span<const Micros> start, std::span<const Micros> finish) {
  BRAID_ASSERT(order.size() == stream_of.size(), "make_lanes: ", order.size(), " units in order, ",
               stream_of.size(), " assigned");
  const bool timed = !start.empty() && !finish.empty();
  // Dense lane numbers in stream order.
  int most = -1;
  for (int s : stream_of) most = std::max(most, s);
  std::vector<int> lane_of(static_cast<size_t>(most + 1), -1);
  for (int s : stream_of) lane_of[static_cast<size_t>(s)] = 0;
  int lanes = 0;
  for (int& l : lane_of)
    if (l == 0) l = lanes++;
  std::vector<Lane> out(static_cast<size_t>(lanes));
  for (size_t k = 0; k < out.size(); ++k) out[k].stream = static_cast<int>(k);
  for (UnitId u : order) {
    Lane& lane = out[static_cast<size_t>(lane_of[static_cast<size_t>(stream_of[index(u)])])];
    lane.units.push_back(u);
    if (timed) {
      lane.start.push_back(start[index(u)]);
      lane.finish.push_back(finish[index(u)]);
    }
  }
  return out;
}

std::vector<SyncEdge> cross_lane_syncs(const ir::UnitGraph& graph, std::span<const int> stream_of) {
  std::vector<SyncEdge> syncs;
  for (const ir::UnitEdge& e : graph.edges())
    if (stream_of[index(e.from)] != stream_of[index(e.to)]) syncs.push_back({e.from, e.to});
  return syncs;
}

}  // namespace braid::sched
