#include "sched/lower.h"

#include <algorithm>
#include <map>

#include "base/error.h"
#include "ir/analysis.h"
#include "sched/validate.h"

namespace braid::sched {
namespace {

struct LaneBuilder {
  std::map<std::pair<int, int>, size_t> index;  // (device, stream) -> lane
  std::vector<PlanLane> lanes;

  PlanLane& lane(int device, int stream) {
    auto [it, inserted] = index.try_emplace({device, stream}, lanes.size());
    if (inserted) lanes.push_back({.device = device, .stream = stream});
    return lanes[it->second];
  }
};

// Events for syncs and transfers: one per producer unit, recorded right after it.
struct ProducerEvents {
  std::map<UnitId, uint32_t> event_of;
  uint32_t next = 0;
  uint32_t get(UnitId u) {
    auto [it, inserted] = event_of.try_emplace(u, next);
    if (inserted) ++next;
    return it->second;
  }
};

void lower_stages(const Schedule& s, ExecutionPlan& plan, LaneBuilder& lanes, uint32_t& next_event,
                  ProducerEvents& producer_events,
                  const std::map<UnitId, std::vector<UnitId>>& waits_before) {
  // Per device: the lanes used by the previous stage and the events they recorded at its end.
  std::map<int, std::vector<std::pair<int, uint32_t>>> previous;  // device -> (stream, event)
  std::map<int, int> previous_single_stream;                      // device -> stream or -1
  auto emit_launch = [&](PlanLane& lane, UnitId u, int32_t merge) {
    if (auto it = waits_before.find(u); it != waits_before.end())
      for (UnitId from : it->second) lane.steps.push_back(WaitStep{producer_events.get(from)});
    lane.steps.push_back(LaunchStep{u, merge});
    if (producer_events.event_of.count(u))
      lane.steps.push_back(RecordStep{producer_events.event_of[u]});
  };
  for (const Stage& stage : s.stages) {
    const int device = stage.device;
    const bool merge = stage.kind == StageKind::kMerge;
    int32_t merge_index = -1;
    if (merge) {
      merge_index = static_cast<int32_t>(plan.merges.size());
      plan.merges.emplace_back();
      for (const auto& group : stage.groups) plan.merges.back().push_back(group.front());
    }
    // Merge stages run on stream 0; group i of a concurrent stage on stream i.
    std::vector<int> streams;
    if (merge)
      streams.push_back(0);
    else
      for (size_t i = 0; i < stage.groups.size(); ++i) streams.push_back(static_cast<int>(i));
    const bool single = streams.size() == 1;
    auto prev_single = previous_single_stream.find(device);
    const bool skip_barrier = single && prev_single != previous_single_stream.end() &&
                              prev_single->second == streams.front();
    for (size_t gi = 0; gi < streams.size(); ++gi) {
      PlanLane& lane = lanes.lane(device, streams[gi]);
      if (!skip_barrier)
        for (auto [stream, event] : previous[device])
          if (stream != streams[gi]) lane.steps.push_back(WaitStep{event});
      if (merge) {
        for (const auto& group : stage.groups) emit_launch(lane, group.front(), merge_index);
      } else {
        for (UnitId u : stage.groups[gi]) emit_launch(lane, u, -1);
      }
    }
    previous[device].clear();
    for (int stream : streams) {
      PlanLane& lane = lanes.lane(device, stream);
      uint32_t e = next_event++;
      lane.steps.push_back(RecordStep{e});
      previous[device].push_back({stream, e});
    }
    previous_single_stream[device] = single ? streams.front() : -1;
  }
}

}  // namespace

ExecutionPlan lower(const ir::UnitGraph& graph, const Schedule& s) {
  // A schedule from a file or a scheduler may be anything: refuse it with the validator's
  // message, never build a plan that deadlocks (the assertions below are internal invariants).
  validate_or_throw(graph, s);
  ExecutionPlan plan;
  const size_t n = graph.num_units();
  if (s.has_allotment()) {
    plan.unit_threads = unit_threads(s, n, 1);
    plan.cores = s.cores;
  }
  plan.launch_order = s.launch_order.empty() ? scheduled_units(s) : s.launch_order;
  // Lanes without a launch order: unit ids are a topological order, lane by lane is not one.
  if (s.launch_order.empty() && s.is_stream_based())
    std::sort(plan.launch_order.begin(), plan.launch_order.end());
  // Syncs and transfers: `to` waits for an event recorded after `from`.
  std::map<UnitId, std::vector<UnitId>> waits_before;
  ProducerEvents producer_events;
  for (const SyncEdge& e : s.syncs) waits_before[e.to].push_back(e.from);
  for (const Transfer& t : s.transfers) waits_before[t.to].push_back(t.from);
  for (auto& [to, froms] : waits_before) {
    std::sort(froms.begin(), froms.end());
    froms.erase(std::unique(froms.begin(), froms.end()), froms.end());
    for (UnitId f : froms) producer_events.get(f);
  }
  uint32_t next_event = producer_events.next;
  LaneBuilder lanes;
  if (s.is_stage_based()) {
    lower_stages(s, plan, lanes, next_event, producer_events, waits_before);
  } else {
    for (const Lane& l : s.lanes) {
      PlanLane& lane = lanes.lane(l.device, l.stream);
      for (UnitId u : l.units) {
        if (auto it = waits_before.find(u); it != waits_before.end())
          for (UnitId from : it->second) lane.steps.push_back(WaitStep{producer_events.get(from)});
        lane.steps.push_back(LaunchStep{u, -1});
        if (auto it = producer_events.event_of.find(u); it != producer_events.event_of.end())
          lane.steps.push_back(RecordStep{it->second});
      }
    }
  }
  plan.lanes = std::move(lanes.lanes);
  std::sort(plan.lanes.begin(), plan.lanes.end(), [](const PlanLane& a, const PlanLane& b) {
    return std::pair(a.device, a.stream) < std::pair(b.device, b.stream);
  });
  plan.num_events = next_event;

  // Blocks: a wait belongs to the launch after it, a record to the launch before it.
  auto blocks = ir::block_partition(graph);
  plan.num_blocks = blocks.size();
  plan.block_of_unit.assign(n, 0);
  for (size_t b = 0; b < blocks.size(); ++b)
    for (UnitId u : blocks[b].units) plan.block_of_unit[index(u)] = static_cast<uint32_t>(b);
  for (PlanLane& lane : plan.lanes) {
    std::vector<uint32_t> step_block(lane.steps.size(), 0);
    uint32_t current = 0;
    for (size_t i = lane.steps.size(); i-- > 0;) {  // waits take the block of the next launch
      if (auto* l = std::get_if<LaunchStep>(&lane.steps[i]))
        current = plan.block_of_unit[index(l->unit)];
      step_block[i] = current;
    }
    current = 0;
    for (size_t i = 0; i < lane.steps.size(); ++i) {  // records take the block of the previous one
      if (auto* l = std::get_if<LaunchStep>(&lane.steps[i]))
        current = plan.block_of_unit[index(l->unit)];
      if (std::holds_alternative<RecordStep>(lane.steps[i])) step_block[i] = current;
      BRAID_ASSERT(i == 0 || step_block[i] >= step_block[i - 1], "lane steps out of block order");
    }
    lane.block_begin.assign(plan.num_blocks + 1, static_cast<uint32_t>(lane.steps.size()));
    for (size_t i = lane.steps.size(); i-- > 0;)
      lane.block_begin[step_block[i]] = static_cast<uint32_t>(i);
    for (size_t b = plan.num_blocks; b-- > 0;)
      lane.block_begin[b] = std::min(lane.block_begin[b], lane.block_begin[b + 1]);
  }

  // Happens-before over units: program order in each lane plus record -> wait edges.
  std::vector<std::vector<size_t>> succ(n);
  std::vector<std::vector<UnitId>> recorded_after(plan.num_events);  // units done before event e
  std::vector<std::vector<UnitId>> waiting_units(
      plan.num_events);  // units started after a wait on e
  for (const PlanLane& lane : plan.lanes) {
    std::optional<UnitId> last;
    std::vector<uint32_t> pending_waits;
    for (const Step& step : lane.steps) {
      if (auto* l = std::get_if<LaunchStep>(&step)) {
        if (last) succ[index(*last)].push_back(index(l->unit));
        for (uint32_t e : pending_waits) waiting_units[e].push_back(l->unit);
        pending_waits.clear();
        last = l->unit;
      } else if (auto* r = std::get_if<RecordStep>(&step)) {
        if (last) recorded_after[r->event].push_back(*last);
      } else {
        pending_waits.push_back(std::get<WaitStep>(step).event);
      }
    }
  }
  for (uint32_t e = 0; e < plan.num_events; ++e)
    for (UnitId a : recorded_after[e])
      for (UnitId b : waiting_units[e]) succ[index(a)].push_back(index(b));
  // Transitive closure in a topological order of the happens-before DAG (Kahn).
  std::vector<size_t> indegree(n, 0), order;
  for (size_t u = 0; u < n; ++u)
    for (size_t v : succ[u]) ++indegree[v];
  for (size_t u = 0; u < n; ++u)
    if (indegree[u] == 0) order.push_back(u);
  for (size_t i = 0; i < order.size(); ++i)
    for (size_t v : succ[order[i]])
      if (--indegree[v] == 0) order.push_back(v);
  BRAID_ASSERT(order.size() == n, "lowered plan of a valid schedule deadlocks");
  plan.happens_before.assign(n, std::vector<bool>(n, false));
  for (size_t i = n; i-- > 0;) {
    size_t u = order[i];
    for (size_t v : succ[u]) {
      plan.happens_before[u][v] = true;
      for (size_t w = 0; w < n; ++w)
        if (plan.happens_before[v][w]) plan.happens_before[u][w] = true;
    }
  }
  return plan;
}

std::vector<IssueSegment> issue_order(const ExecutionPlan& plan, size_t first_block,
                                      size_t last_block) {
  last_block = std::min(last_block, plan.num_blocks);
  size_t num_units = 0;
  for (UnitId u : plan.launch_order) num_units = std::max(num_units, index(u) + 1);
  std::vector<size_t> position(num_units, SIZE_MAX);
  for (size_t i = 0; i < plan.launch_order.size(); ++i) position[index(plan.launch_order[i])] = i;
  struct Pending {
    IssueSegment segment;
    size_t priority = SIZE_MAX;
  };
  std::vector<std::vector<Pending>> lanes(plan.lanes.size());
  for (size_t li = 0; li < plan.lanes.size(); ++li) {
    const PlanLane& lane = plan.lanes[li];
    size_t begin = 0, end = 0;
    if (first_block < last_block) {
      begin = lane.block_begin.empty() ? 0 : lane.block_begin[first_block];
      end = lane.block_begin.empty() ? lane.steps.size() : lane.block_begin[last_block];
    }
    Pending seg{.segment = {uint32_t(li), uint32_t(begin), uint32_t(begin)}};
    bool launched = false;
    for (size_t s = begin; s < end; ++s) {
      const auto* launch = std::get_if<LaunchStep>(&lane.steps[s]);
      if (launch == nullptr) continue;
      if (launched) {  // a launch closes the previous segment, less the waits that precede it
        size_t cut = s;
        while (cut > seg.segment.begin && std::holds_alternative<WaitStep>(lane.steps[cut - 1]))
          --cut;
        seg.segment.end = uint32_t(cut);
        lanes[li].push_back(seg);
        seg = {.segment = {uint32_t(li), uint32_t(cut), uint32_t(cut)}};
      }
      const size_t u = index(launch->unit);
      seg.priority = u < position.size() ? position[u] : SIZE_MAX;
      launched = true;
    }
    seg.segment.end = uint32_t(end);
    if (seg.segment.end > seg.segment.begin) lanes[li].push_back(seg);
  }
  std::vector<IssueSegment> order;
  std::vector<size_t> next(lanes.size(), 0);
  while (true) {
    size_t best = SIZE_MAX;
    for (size_t li = 0; li < lanes.size(); ++li)
      if (next[li] < lanes[li].size() &&
          (best == SIZE_MAX || lanes[li][next[li]].priority < lanes[best][next[best]].priority))
        best = li;
    if (best == SIZE_MAX) break;
    order.push_back(lanes[best][next[best]++].segment);
  }
  return order;
}

std::string to_string(const ExecutionPlan& plan, const ir::UnitGraph& graph) {
  std::string out;
  for (size_t i = 0; i < plan.lanes.size(); ++i) {
    const PlanLane& lane = plan.lanes[i];
    out += "lane " + std::to_string(i) + " (dev " + std::to_string(lane.device) + ", stream " +
           std::to_string(lane.stream) + "):";
    for (const Step& step : lane.steps) {
      if (auto* l = std::get_if<LaunchStep>(&step))
        out += " " + graph.unit(l->unit).name;
      else if (auto* r = std::get_if<RecordStep>(&step))
        out += " record e" + std::to_string(r->event);
      else
        out += " wait e" + std::to_string(std::get<WaitStep>(step).event);
    }
    out += "\n";
  }
  return out;
}

}  // namespace braid::sched
