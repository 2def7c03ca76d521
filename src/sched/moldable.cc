#include "sched/moldable.h"

#include <algorithm>
#include <numeric>

#include "base/error.h"
#include "sched/lanes.h"

namespace braid::sched {

int allotment_cores(const ScheduleOptions& options, const cost::CostModel& cost) {
  return options.cores > 0 ? options.cores : std::max(1, cost.max_threads());
}

Schedule IntraOpScheduler::schedule(const ir::UnitGraph& graph, const cost::CostModel& cost,
                                    SearchStats* stats) const {
  const int cores = allotment_cores(options_, cost);
  Schedule s;
  s.algorithm = std::string(name());
  s.model = graph.name();
  s.cores = cores;
  Lane lane;
  Micros t{0};
  for (size_t u = 0; u < graph.num_units(); ++u) {
    lane.units.push_back(make_id<UnitId>(u));
    lane.threads.push_back(cores);
    t += cost.unit_latency_at(make_id<UnitId>(u), cores);
  }
  s.lanes.push_back(std::move(lane));
  s.predicted_latency = t;
  if (stats) *stats = {};
  return s;
}

namespace {

// Longest paths with each unit at `latency`: from the sources to a unit's start (top) and from
// its start through a sink (bottom, the unit included).
struct Levels {
  std::vector<double> top, bottom;
  double critical = 0;
};

Levels levels(const ir::UnitGraph& graph, const std::vector<double>& latency) {
  const size_t n = graph.num_units();
  Levels l{std::vector<double>(n, 0), std::vector<double>(n, 0), 0};
  // Unit ids are a topological order.
  for (size_t u = 0; u < n; ++u)
    for (UnitId p : graph.predecessors(make_id<UnitId>(u)))
      l.top[u] = std::max(l.top[u], l.top[index(p)] + latency[index(p)]);
  for (size_t u = n; u-- > 0;) {
    double below = 0;
    for (UnitId s : graph.successors(make_id<UnitId>(u)))
      below = std::max(below, l.bottom[index(s)]);
    l.bottom[u] = latency[u] + below;
    l.critical = std::max(l.critical, l.top[u] + l.bottom[u]);
  }
  return l;
}

}  // namespace

Schedule MoldableScheduler::schedule(const ir::UnitGraph& graph, const cost::CostModel& cost,
                                     SearchStats* stats) const {
  const int cores = allotment_cores(options_, cost);
  const size_t n = graph.num_units();
  auto at = [&](size_t u, int k) { return cost.unit_latency_at(make_id<UnitId>(u), k).count(); };

  // 1. Allotment (CPA).
  std::vector<int> threads(n, 1);
  std::vector<double> latency(n);
  for (size_t u = 0; u < n; ++u) latency[u] = at(u, 1);
  for (;;) {
    const Levels l = levels(graph, latency);
    double area = 0;
    for (size_t u = 0; u < n; ++u) area += threads[u] * latency[u];
    if (l.critical <= area / cores) break;
    size_t best = n;
    double best_gain = 0;
    for (size_t u = 0; u < n; ++u) {
      if (threads[u] >= cores || l.top[u] + l.bottom[u] < l.critical * (1 - 1e-9)) continue;
      const double gain = latency[u] - at(u, threads[u] + 1);
      if (gain > best_gain) best_gain = gain, best = u;
    }
    if (best == n) break;
    latency[best] = at(best, ++threads[best]);
  }

  // 2. List scheduling on `cores` cores, by bottom level.
  const Levels l = levels(graph, latency);
  std::vector<double> core_free(static_cast<size_t>(cores), 0);
  std::vector<int> core_last(static_cast<size_t>(cores), -1);  // the unit that ran last there
  std::vector<Micros> start(n), finish(n);                     // planned, as the lanes carry them
  std::vector<int> lane_of(n, 0), used(n, 0);
  std::vector<size_t> waiting(n);
  std::vector<size_t> ready;
  std::vector<UnitId> order;
  for (size_t u = 0; u < n; ++u) {
    waiting[u] = graph.predecessors(make_id<UnitId>(u)).size();
    if (waiting[u] == 0) ready.push_back(u);
  }
  std::vector<SyncEdge> syncs;
  while (!ready.empty()) {
    // Highest bottom level first; ties by unit id.
    auto pick = std::max_element(ready.begin(), ready.end(), [&](size_t a, size_t b) {
      return l.bottom[a] != l.bottom[b] ? l.bottom[a] < l.bottom[b] : a > b;
    });
    const size_t u = *pick;
    ready.erase(pick);
    double data_ready = 0;
    for (UnitId p : graph.predecessors(make_id<UnitId>(u)))
      data_ready = std::max(data_ready, finish[index(p)].count());
    // Cores by the time they come free (ties: lowest core).
    std::vector<int> by_free(static_cast<size_t>(cores));
    std::iota(by_free.begin(), by_free.end(), 0);
    std::stable_sort(by_free.begin(), by_free.end(),
                     [&](int a, int b) { return core_free[a] < core_free[b]; });
    int best_k = 1;
    double best_start = 0, best_finish = -1;
    for (int k = 1; k <= threads[u]; ++k) {
      const double s = std::max(data_ready, core_free[by_free[k - 1]]);
      const double f = s + at(u, k);
      if (best_finish < 0 || f < best_finish - 1e-9) best_k = k, best_start = s, best_finish = f;
    }
    std::vector<int> taken(by_free.begin(), by_free.begin() + best_k);
    std::sort(taken.begin(), taken.end());
    start[u] = Micros{best_start};
    finish[u] = Micros{best_finish};
    used[u] = best_k;
    lane_of[u] = taken.front();
    for (int c : taken) {
      if (core_last[c] >= 0 && lane_of[core_last[c]] != lane_of[u])
        syncs.push_back({make_id<UnitId>(core_last[c]), make_id<UnitId>(u)});
      core_last[c] = static_cast<int>(u);
      core_free[c] = best_finish;
    }
    order.push_back(make_id<UnitId>(u));
    for (UnitId s : graph.successors(make_id<UnitId>(u)))
      if (--waiting[index(s)] == 0) ready.push_back(index(s));
  }
  BRAID_ASSERT(order.size() == n, "moldable: the unit graph has a cycle");
  // A unit runs on the stream of its lowest core; besides the core waits, every edge between
  // streams waits.
  for (const SyncEdge& e : cross_lane_syncs(graph, lane_of)) syncs.push_back(e);
  std::sort(syncs.begin(), syncs.end(), [](const SyncEdge& a, const SyncEdge& b) {
    return std::pair(index(a.to), index(a.from)) < std::pair(index(b.to), index(b.from));
  });
  syncs.erase(std::unique(syncs.begin(), syncs.end()), syncs.end());

  Schedule s;
  s.algorithm = std::string(name());
  s.model = graph.name();
  s.cores = cores;
  s.lanes = make_lanes(lane_of, order, start, finish);
  if (s.lanes.empty()) s.lanes.push_back({});  // a model without units: one empty stream
  for (Lane& lane : s.lanes)
    for (UnitId u : lane.units) lane.threads.push_back(used[index(u)]);
  s.syncs = std::move(syncs);
  s.predicted_latency = n == 0 ? Micros{0} : *std::max_element(finish.begin(), finish.end());
  int widened = 0;
  for (size_t u = 0; u < n; ++u) widened += used[u] > 1;
  s.stats = {{"cores", cores}, {"widened_units", widened}};
  if (stats) *stats = {};
  return s;
}

}  // namespace braid::sched
