#include "sched/lios.h"

#include <algorithm>
#include <random>

#include "base/error.h"
#include "sched/lanes.h"

namespace braid::sched {

LiosScheduler::LiosScheduler(const ScheduleOptions& options, LiosVariant variant)
    : options_(options), variant_(variant) {
  BRAID_CHECK(options.max_streams >= 0, ErrorCode::kInvalidArgument, name(),
              ": max_streams must be >= 0 (0 = unbounded), got ", options.max_streams);
}

std::string_view LiosScheduler::name() const {
  switch (variant_) {
    case LiosVariant::kLios:
      return "lios";
    case LiosVariant::kRand1:
      return "lios-rand1";
    case LiosVariant::kRand2:
      return "lios-rand2";
    case LiosVariant::kRand:
      return "lios-rand";
  }
  return "lios";
}

Schedule LiosScheduler::schedule(const ir::UnitGraph& graph, const cost::CostModel& cost,
                                 SearchStats*) const {
  const bool random_priority = variant_ == LiosVariant::kRand1 || variant_ == LiosVariant::kRand;
  const bool random_stream = variant_ == LiosVariant::kRand2 || variant_ == LiosVariant::kRand;
  // A draw in [0, k): plain modulo on mt19937_64, the same on every platform (the std
  // distributions are implementation-defined).
  std::mt19937_64 rng(options_.seed);
  auto draw = [&rng](size_t k) { return static_cast<size_t>(rng() % k); };

  const size_t n = graph.num_units();
  std::vector<Micros> latency(n);  // Rank(v) = node_weight(v) (Eq. 5)
  std::vector<size_t> waiting(n);  // predecessors not yet scheduled
  std::vector<UnitId> wait_list;   // in the order units became ready
  for (size_t i = 0; i < n; ++i) {
    const UnitId u = make_id<UnitId>(i);
    latency[i] = cost.unit_latency(u);
    waiting[i] = graph.predecessors(u).size();
    if (waiting[i] == 0) wait_list.push_back(u);
  }
  // free(p) per stream. Bounded: all x streams exist from the start; unbounded: opened on use.
  const bool bounded = options_.max_streams > 0;
  std::vector<Micros> free(bounded ? static_cast<size_t>(options_.max_streams) : 0, Micros{0});
  std::vector<int> stream_of(n, 0);
  std::vector<Micros> start(n), finish(n);
  std::vector<UnitId> order;  // scheduling order = launch order
  order.reserve(n);

  while (!wait_list.empty()) {
    // Operator prioritizing (§IV-B).
    size_t pick = 0;
    if (random_priority) {
      pick = draw(wait_list.size());
    } else {
      for (size_t k = 1; k < wait_list.size(); ++k) {
        const size_t a = index(wait_list[k]), b = index(wait_list[pick]);
        if (latency[a] > latency[b] || (latency[a] == latency[b] && a < b)) pick = k;
      }
    }
    const UnitId v = wait_list[pick];
    wait_list.erase(wait_list.begin() + static_cast<std::ptrdiff_t>(pick));

    // Stream selection (§IV-C): EST = max(free(p), max FT(pred)), EFT = EST + w.
    Micros ready{0};
    for (UnitId p : graph.predecessors(v)) ready = std::max(ready, finish[index(p)]);
    const size_t candidates = bounded ? free.size() : free.size() + 1;
    auto free_at = [&](size_t p) { return p < free.size() ? free[p] : Micros{0}; };
    size_t best = 0;
    if (random_stream) {
      best = draw(candidates);
    } else {
      for (size_t p = 1; p < candidates; ++p)
        if (std::max(free_at(p), ready) < std::max(free_at(best), ready)) best = p;
    }
    if (best == free.size()) free.push_back(Micros{0});  // opens a fresh stream
    start[index(v)] = std::max(free[best], ready);
    finish[index(v)] = start[index(v)] + latency[index(v)];
    free[best] = finish[index(v)];
    stream_of[index(v)] = static_cast<int>(best);
    order.push_back(v);

    for (UnitId s : graph.successors(v))
      if (--waiting[index(s)] == 0) wait_list.push_back(s);
  }
  BRAID_ASSERT(order.size() == n, "a UnitGraph is acyclic");

  Schedule s;
  s.algorithm = std::string(name());
  s.model = graph.name();
  if (n == 0) return s;
  s.lanes = make_lanes(stream_of, order, start, finish);
  s.syncs = cross_lane_syncs(graph, stream_of);
  s.launch_order = std::move(order);
  Micros makespan{0};
  for (Micros f : finish) makespan = std::max(makespan, f);
  s.predicted_latency = makespan;  // the planned makespan, which predict.h reproduces
  return s;
}

}  // namespace braid::sched
