#include "sched/trivial.h"

#include <algorithm>
#include <deque>

#include "base/error.h"

namespace braid::sched {

Schedule SequentialScheduler::schedule(const ir::UnitGraph& graph, const cost::CostModel&,
                                       SearchStats*) const {
  Schedule s;
  s.algorithm = std::string(name());
  s.model = graph.name();
  Lane lane;
  for (size_t i = 0; i < graph.num_units(); ++i) lane.units.push_back(make_id<UnitId>(i));
  s.lanes.push_back(std::move(lane));
  return s;
}

GreedyScheduler::GreedyScheduler(const ScheduleOptions& options) : options_(options) {
  BRAID_CHECK(options.max_streams >= 0, ErrorCode::kInvalidArgument,
              "greedy: max_streams must be >= 0 (0 = unbounded), got ", options.max_streams);
}

Schedule GreedyScheduler::schedule(const ir::UnitGraph& graph, const cost::CostModel&,
                                   SearchStats*) const {
  Schedule s;
  s.algorithm = std::string(name());
  s.model = graph.name();
  const size_t n = graph.num_units();
  const size_t width = options_.max_streams == 0 ? n : static_cast<size_t>(options_.max_streams);
  std::vector<size_t> waiting(n);  // predecessors not yet scheduled
  std::deque<UnitId> frontier;
  for (size_t i = 0; i < n; ++i) {
    const UnitId u = make_id<UnitId>(i);
    waiting[i] = graph.predecessors(u).size();
    if (waiting[i] == 0) frontier.push_back(u);
  }
  while (!frontier.empty()) {
    Stage stage;
    std::vector<UnitId> newly_ready;
    for (size_t k = 0; k < width && !frontier.empty(); ++k) {
      const UnitId u = frontier.front();
      frontier.pop_front();
      stage.groups.push_back({u});
      for (UnitId v : graph.successors(u))
        if (--waiting[index(v)] == 0) newly_ready.push_back(v);
    }
    // Successors are sorted per unit, not across the stage: sort for id-order ties.
    std::sort(newly_ready.begin(), newly_ready.end());
    frontier.insert(frontier.end(), newly_ready.begin(), newly_ready.end());
    s.stages.push_back(std::move(stage));
  }
  BRAID_ASSERT(scheduled_units(s).size() == n, "a UnitGraph is acyclic");
  s.stats["stages"] = s.stages.size();
  return s;
}

}  // namespace braid::sched
