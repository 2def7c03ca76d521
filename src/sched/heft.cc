#include "sched/heft.h"

#include <algorithm>
#include <utility>

#include "base/error.h"
#include "sched/lanes.h"

namespace braid::sched {

HeftScheduler::HeftScheduler(const ScheduleOptions& options) : options_(options) {
  BRAID_CHECK(options.max_streams >= 0, ErrorCode::kInvalidArgument,
              "heft: max_streams must be >= 0 (0 = unbounded), got ", options.max_streams);
}

std::vector<Micros> upward_rank(const ir::UnitGraph& graph, const cost::CostModel& cost) {
  const size_t n = graph.num_units();
  std::vector<Micros> rank(n, Micros{0});
  for (size_t i = n; i-- > 0;) {  // ids are topological: successors are done
    const UnitId u = make_id<UnitId>(i);
    Micros tail{0};
    for (UnitId s : graph.successors(u)) tail = std::max(tail, rank[index(s)]);
    rank[i] = cost.unit_latency(u) + tail;
  }
  return rank;
}

namespace {

// One unit placed on a stream, for the gap search.
struct Slot {
  Micros start, finish;
  UnitId unit;
};

// Where `latency` fits on `slots` (sorted by start) no earlier than `ready`: the position to
// insert at and the start time.
std::pair<size_t, Micros> earliest_fit(const std::vector<Slot>& slots, Micros ready,
                                       Micros latency) {
  if (latency > Micros{0}) {
    Micros gap_begin{0};
    for (size_t k = 0; k < slots.size(); ++k) {
      const Micros begin = std::max(gap_begin, ready);
      if (begin + latency <= slots[k].start) return {k, begin};
      gap_begin = slots[k].finish;
    }
  }
  const Micros free = slots.empty() ? Micros{0} : slots.back().finish;
  return {slots.size(), std::max(free, ready)};
}

}  // namespace

Schedule HeftScheduler::schedule(const ir::UnitGraph& graph, const cost::CostModel& cost,
                                 SearchStats*) const {
  const size_t n = graph.num_units();
  const std::vector<Micros> rank = upward_rank(graph, cost);
  std::vector<UnitId> by_rank(n);
  for (size_t i = 0; i < n; ++i) by_rank[i] = make_id<UnitId>(i);
  // rank(u) >= rank(v) on an edge u -> v, equal only when latency(u) is 0 (or vanishes in
  // rounding); then u < v by id: this order is topological.
  std::stable_sort(by_rank.begin(), by_rank.end(),
                   [&](UnitId a, UnitId b) { return rank[index(a)] > rank[index(b)]; });

  const size_t bound = options_.max_streams > 0 ? static_cast<size_t>(options_.max_streams) : n;
  std::vector<std::vector<Slot>> streams;  // opened on use; all fresh streams are alike
  std::vector<int> stream_of(n, 0);
  std::vector<Micros> start(n), finish(n);
  for (UnitId v : by_rank) {
    Micros ready{0};
    for (UnitId p : graph.predecessors(v)) ready = std::max(ready, finish[index(p)]);
    const Micros latency = cost.unit_latency(v);
    const size_t candidates = std::min(streams.size() + 1, bound);
    size_t best = 0, best_at = 0;
    Micros best_start{0};
    for (size_t p = 0; p < candidates; ++p) {
      static const std::vector<Slot> kFresh;
      const auto [at, begin] =
          earliest_fit(p < streams.size() ? streams[p] : kFresh, ready, latency);
      if (p == 0 || begin < best_start) {
        best = p;
        best_at = at;
        best_start = begin;
      }
    }
    if (best == streams.size()) streams.emplace_back();
    start[index(v)] = best_start;
    finish[index(v)] = best_start + latency;
    streams[best].insert(streams[best].begin() + static_cast<std::ptrdiff_t>(best_at),
                         {start[index(v)], finish[index(v)], v});
    stream_of[index(v)] = static_cast<int>(best);
  }

  Schedule s;
  s.algorithm = std::string(name());
  s.model = graph.name();
  if (n == 0) return s;
  std::vector<UnitId> order;  // lane by lane, each in start order
  order.reserve(n);
  for (const auto& slots : streams)
    for (const Slot& slot : slots) order.push_back(slot.unit);
  s.lanes = make_lanes(stream_of, order, start, finish);
  s.syncs = cross_lane_syncs(graph, stream_of);
  // The planned makespan. A unit starts at max(its lane's previous finish, its predecessors'
  // finish) even after an insertion (a gap exists only where the next unit waited for its
  // predecessors), so this is exactly what predict.h simulates.
  s.predicted_latency = *std::max_element(finish.begin(), finish.end());
  return s;
}

}  // namespace braid::sched
