#include "sched/optimal.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <span>
#include <unordered_map>
#include <vector>

#include "base/error.h"
#include "ir/analysis.h"

namespace braid::sched {
namespace {

using Mask = uint64_t;  // a set of a block's units, by local index
constexpr int kMaxMaskUnits = 64;
constexpr Micros kInfinity{std::numeric_limits<double>::infinity()};
// Dominance memo budget: states kept per placed set, and times kept in all (8 bytes each).
constexpr size_t kMemoStatesPerSet = 256;
constexpr size_t kMemoTimes = size_t{1} << 22;

// One block as the search sees it: local indices 0..m-1 in unit id order (topological). Edges
// from earlier blocks come only from the cut that closed the previous block, which finishes
// last: the block starts at time 0 with every lane free.
struct Problem {
  std::vector<UnitId> units;
  std::vector<Micros> latency;
  std::vector<std::vector<int>> preds;
  std::vector<Mask> pred_mask, succ_mask;
  std::vector<Mask> ancestors, descendants;  // transitive, the unit itself excluded
  // Identical twins (same predecessors, successors and latency) of lower index: they are
  // interchangeable, so the search places twins in index order.
  std::vector<Mask> twins_before;
  std::vector<Micros> tail;  // the longest path from the unit to a sink, the unit included
  int lanes = 1;
};

struct LaneChoice {
  int unit = 0;  // local index while searching, UnitId index once assembled
  int lane = 0;
};

struct Solution {
  // Placement order: each unit after its predecessors and the units before it on its lane,
  // i.e. a linear extension of every edge and lane order (the launch order).
  std::vector<LaneChoice> placements;
  Micros makespan = kInfinity;
};

Mask bit(int i) {
  return Mask{1} << i;
}

Micros work_of(const Problem& p, Mask set) {
  Micros sum{0};
  for (; set != 0; set &= set - 1) sum += p.latency[std::countr_zero(set)];
  return sum;
}

Problem make_problem(const ir::UnitGraph& graph, const ir::Block& block,
                     std::span<const Micros> latency, int max_streams) {
  Problem p;
  const int m = static_cast<int>(block.units.size());
  std::vector<int> local(graph.num_units(), -1);
  for (int i = 0; i < m; ++i) local[index(block.units[i])] = i;
  p.units = block.units;
  p.preds.resize(m);
  p.pred_mask.assign(m, 0);
  p.succ_mask.assign(m, 0);
  for (int i = 0; i < m; ++i) {
    p.latency.push_back(latency[index(block.units[i])]);
    for (UnitId u : graph.predecessors(block.units[i])) {
      const int q = local[index(u)];
      if (q < 0) continue;  // the previous block's closing cut
      BRAID_ASSERT(q < i, "block units are in topological order");
      p.preds[i].push_back(q);
      p.pred_mask[i] |= bit(q);
      p.succ_mask[q] |= bit(i);
    }
  }
  p.ancestors.assign(m, 0);
  for (int i = 0; i < m; ++i)
    for (int q : p.preds[i]) p.ancestors[i] |= p.ancestors[q] | bit(q);
  p.descendants.assign(m, 0);
  p.tail.assign(m, Micros{0});
  for (int i = m - 1; i >= 0; --i) {
    Micros longest{0};
    for (int v = i + 1; v < m; ++v)
      if (p.succ_mask[i] & bit(v)) {
        longest = std::max(longest, p.tail[v]);
        p.descendants[i] |= p.descendants[v] | bit(v);
      }
    p.tail[i] = p.latency[i] + longest;
  }
  p.twins_before.assign(m, 0);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < i; ++j)
      if (p.pred_mask[j] == p.pred_mask[i] && p.succ_mask[j] == p.succ_mask[i] &&
          p.latency[j] == p.latency[i])
        p.twins_before[i] |= bit(j);
  // More lanes than units never help.
  p.lanes = max_streams == 0 ? m : std::min(max_streams, m);
  return p;
}

// The initial incumbent: list scheduling by critical-path priority (the longest tail first,
// then the lowest index), each unit on the lane where it starts (so finishes) earliest, the
// latest-free such lane on ties (it leaves emptier lanes for later units).
Solution greedy(const Problem& p) {
  const int m = static_cast<int>(p.units.size());
  std::vector<Micros> finish(m), lane_free(p.lanes, Micros{0});
  Mask placed = 0;
  Solution s;
  s.makespan = Micros{0};
  for (int step = 0; step < m; ++step) {
    int unit = -1;
    for (int v = 0; v < m; ++v)
      if (!(placed & bit(v)) && (p.pred_mask[v] & ~placed) == 0 &&
          (unit < 0 || p.tail[v] > p.tail[unit]))
        unit = v;
    Micros ready{0};
    for (int q : p.preds[unit]) ready = std::max(ready, finish[q]);
    int lane = 0;
    for (int l = 1; l < p.lanes; ++l) {
      const Micros start = std::max(lane_free[l], ready);
      const Micros best = std::max(lane_free[lane], ready);
      if (start < best || (start == best && lane_free[l] > lane_free[lane])) lane = l;
    }
    finish[unit] = std::max(lane_free[lane], ready) + p.latency[unit];
    lane_free[lane] = finish[unit];
    placed |= bit(unit);
    s.placements.push_back({unit, lane});
    s.makespan = std::max(s.makespan, finish[unit]);
  }
  return s;
}

// Depth-first branch and bound (see optimal.h).
//
// The search runs in "clamped" time: a placement starts at max(previous placement's start,
// lane free, predecessors done), so starts never decrease along a path and lane free times
// below the last start act as the last start. Clamping only ever delays a path, and any lane
// schedule placed in order of its (semi-active) starts is a path that clamping leaves
// unchanged, so the best path is an optimal lane schedule.
//
// The future of a node depends only on its state: the placed set, the last start, the lanes'
// free times (as a multiset: lanes are interchangeable) and, for each unplaced unit, when its
// placed predecessors are done. With the same placed set, a state no later in any of these
// leads to a schedule no longer (replay the other's choices: every start is a max of these
// times plus latencies). Two pruning rules follow:
//  - a unit goes on the lane that frees up last by the time it is ready (best fit), or, when
//    every lane is busy then, the lane that frees up first: any other lane gives a later
//    state, lane by lane;
//  - a node whose state is no earlier than one visited before is skipped (memo).
class Search {
 public:
  Search(const Problem& p, Solution incumbent, int64_t max_nodes)
      : p_(p),
        max_nodes_(max_nodes),
        m_(static_cast<int>(p.units.size())),
        all_(m_ == kMaxMaskUnits ? ~Mask{0} : bit(m_) - 1),
        finish_(m_),
        lane_free_(p.lanes, Micros{0}),
        est_(m_),
        sorted_free_(p.lanes),
        children_(m_ + 1),
        best_(std::move(incumbent)) {}

  Solution run(int64_t* nodes) {
    visit(0);
    *nodes += nodes_;
    return std::move(best_);
  }

 private:
  struct Child {
    Micros start;
    int unit;
    int lane;
  };

  void visit(int depth) {
    BRAID_CHECK(++nodes_ <= max_nodes_ || max_nodes_ == 0, ErrorCode::kInvalidArgument,
                "optimal: gave up after max_nodes = ", max_nodes_, " search nodes on a block of ",
                m_, " units (", p_.lanes, " streams)");
    if (placed_ == all_) {
      const Micros makespan = *std::max_element(lane_free_.begin(), lane_free_.end());
      if (makespan < best_.makespan) best_ = {path_, makespan};
      return;
    }
    if (lower_bound() >= best_.makespan || dominated()) return;

    std::vector<Child>& children = children_[depth];
    children.clear();
    for (int u = 0; u < m_; ++u) {
      if ((placed_ & bit(u)) || (p_.pred_mask[u] & ~placed_) != 0 ||
          (p_.twins_before[u] & ~placed_) != 0)
        continue;
      Micros ready = last_start_;
      for (int q : p_.preds[u]) ready = std::max(ready, finish_[q]);
      int fit = -1, first = 0;  // ties: the lowest index
      for (int l = 0; l < p_.lanes; ++l) {
        if (free_at(l) <= ready && (fit < 0 || free_at(l) > free_at(fit))) fit = l;
        if (free_at(l) < free_at(first)) first = l;
      }
      if (fit >= 0)
        children.push_back({ready, u, fit});
      else
        children.push_back({free_at(first), u, first});
    }
    // Early starts and long tails first, to meet good schedules early.
    std::sort(children.begin(), children.end(), [&](const Child& a, const Child& b) {
      if (a.start != b.start) return a.start < b.start;
      if (p_.tail[a.unit] != p_.tail[b.unit]) return p_.tail[a.unit] > p_.tail[b.unit];
      return a.unit < b.unit;
    });
    for (const Child& c : children) {
      if (c.start + p_.tail[c.unit] >= best_.makespan) continue;
      const Micros saved_free = lane_free_[c.lane], saved_start = last_start_;
      finish_[c.unit] = c.start + p_.latency[c.unit];
      lane_free_[c.lane] = finish_[c.unit];
      last_start_ = c.start;
      placed_ |= bit(c.unit);
      path_.push_back({c.unit, c.lane});
      visit(depth + 1);
      path_.pop_back();
      placed_ &= ~bit(c.unit);
      last_start_ = saved_start;
      lane_free_[c.lane] = saved_free;
    }
  }

  Micros free_at(int lane) const { return std::max(lane_free_[lane], last_start_); }

  // The earliest time by which the lanes (free times sorted_free_, ascending) can have done
  // `work` more: the water level L with sum over lanes of max(0, L - free) = work.
  Micros level(Micros work) const {
    Micros sum{0};
    for (int j = 1; j <= p_.lanes; ++j) {
      sum += sorted_free_[j - 1];
      const Micros l = (sum + work) / j;
      if (j == p_.lanes || l <= sorted_free_[j]) return l;
    }
    return kInfinity;  // not reached
  }

  // The largest of: the current makespan; every unplaced unit's earliest start (after its
  // predecessors, and after the lanes could have run all its unplaced ancestors) plus its
  // tail; the same start plus its latency plus its unplaced descendants spread over all lanes;
  // the water level of all remaining work.
  Micros lower_bound() {
    for (int l = 0; l < p_.lanes; ++l) sorted_free_[l] = free_at(l);
    std::sort(sorted_free_.begin(), sorted_free_.end());
    Micros bound = sorted_free_.back(), work{0};
    for (int v = 0; v < m_; ++v) {
      if (placed_ & bit(v)) continue;
      Micros start = sorted_free_.front();
      for (int q : p_.preds[v])
        start = std::max(start, (placed_ & bit(q)) ? finish_[q] : est_[q] + p_.latency[q]);
      est_[v] = start;
      const Mask before = p_.ancestors[v] & ~placed_;
      if (before != 0) start = std::max(start, level(work_of(p_, before)));
      bound = std::max(bound, start + p_.tail[v]);
      const Mask after = p_.descendants[v] & ~placed_;
      if (after != 0)
        bound = std::max(bound, est_[v] + p_.latency[v] + work_of(p_, after) / p_.lanes);
      work += p_.latency[v];
    }
    return std::max(bound, level(work));
  }

  // True when a state no earlier (see above) with the same placed set was visited before.
  // Otherwise remembers this one, within the budget.
  bool dominated() {
    key_.clear();
    key_.push_back(last_start_.count());
    for (int l = 0; l < p_.lanes; ++l) key_.push_back(sorted_free_[l].count());  // lower_bound's
    for (int v = 0; v < m_; ++v) {
      if ((placed_ & bit(v)) || (p_.pred_mask[v] & placed_) == 0) continue;
      Micros done = last_start_;
      for (int q : p_.preds[v])
        if (placed_ & bit(q)) done = std::max(done, finish_[q]);
      key_.push_back(done.count());
    }
    const size_t stride = key_.size();
    auto it = memo_.find(placed_);
    if (it != memo_.end()) {
      const std::vector<double>& seen = it->second;
      for (size_t at = 0; at < seen.size(); at += stride) {
        bool no_later = true;
        for (size_t i = 0; i < stride && no_later; ++i) no_later = seen[at + i] <= key_[i];
        if (no_later) return true;
      }
    }
    if (memo_times_ + stride > kMemoTimes) return false;
    std::vector<double>& seen = it != memo_.end() ? it->second : memo_[placed_];
    if (seen.size() >= kMemoStatesPerSet * stride) return false;
    seen.insert(seen.end(), key_.begin(), key_.end());
    memo_times_ += stride;
    return false;
  }

  const Problem& p_;
  const int64_t max_nodes_;
  const int m_;
  const Mask all_;
  Mask placed_ = 0;
  std::vector<Micros> finish_;     // of placed units
  std::vector<Micros> lane_free_;  // the finish of each lane's last unit
  Micros last_start_{0};
  std::vector<Micros> est_, sorted_free_;     // lower_bound scratch
  std::vector<std::vector<Child>> children_;  // per depth, reused
  std::vector<LaneChoice> path_;
  Solution best_;
  int64_t nodes_ = 0;
  std::unordered_map<Mask, std::vector<double>> memo_;  // placed set -> keys, back to back
  size_t memo_times_ = 0;
  std::vector<double> key_;
};

// Minimal syncs by vector clocks: seen[u][l] = how many units of lane l happen before u or are
// u. A cross-lane edge needs a sync only when its producer is not already among them.
std::vector<SyncEdge> minimal_syncs(const ir::UnitGraph& graph, std::span<const LaneChoice> order,
                                    std::span<const int> lane_of, std::span<const int> position,
                                    size_t num_lanes) {
  const size_t n = graph.num_units();
  std::vector<std::vector<uint32_t>> seen(n, std::vector<uint32_t>(num_lanes, 0));
  std::vector<int> rank(n);  // position in `order`
  for (size_t i = 0; i < order.size(); ++i) rank[order[i].unit] = static_cast<int>(i);
  std::vector<int> lane_last(num_lanes, -1);
  std::vector<SyncEdge> syncs;
  std::vector<UnitId> preds;
  for (const LaneChoice& pl : order) {
    const size_t v = static_cast<size_t>(pl.unit);
    const int lane = lane_of[v];
    if (lane_last[lane] >= 0) seen[v] = seen[lane_last[lane]];
    seen[v][lane] = static_cast<uint32_t>(position[v] + 1);
    // The latest-placed producers first: they carry the most knowledge.
    preds.assign(graph.predecessors(make_id<UnitId>(v)).begin(),
                 graph.predecessors(make_id<UnitId>(v)).end());
    std::sort(preds.begin(), preds.end(),
              [&](UnitId a, UnitId b) { return rank[index(a)] > rank[index(b)]; });
    for (UnitId u : preds) {
      const size_t q = index(u);
      if (seen[v][lane_of[q]] >= static_cast<uint32_t>(position[q] + 1)) continue;
      syncs.push_back({u, make_id<UnitId>(v)});
      for (size_t l = 0; l < num_lanes; ++l) seen[v][l] = std::max(seen[v][l], seen[q][l]);
    }
    lane_last[lane] = static_cast<int>(v);
  }
  std::sort(syncs.begin(), syncs.end(), [](const SyncEdge& a, const SyncEdge& b) {
    return a.from != b.from ? a.from < b.from : a.to < b.to;
  });
  return syncs;
}

}  // namespace

OptimalScheduler::OptimalScheduler(const ScheduleOptions& options, OptimalOptions optimal)
    : options_(options), optimal_(optimal) {
  BRAID_CHECK(options.max_streams >= 0, ErrorCode::kInvalidArgument,
              "optimal: max_streams must be >= 0 (0 = unbounded), got ", options.max_streams);
  BRAID_CHECK(optimal.max_block_units >= 1 && optimal.max_block_units <= kMaxMaskUnits,
              ErrorCode::kInvalidArgument, "optimal: max_block_units must be in [1, ",
              kMaxMaskUnits, "], got ", optimal.max_block_units);
  BRAID_CHECK(options.num_devices == 1, ErrorCode::kUnsupported,
              "optimal: searches one device only (its model has no transfers), got num_devices = ",
              options.num_devices);
}

Schedule OptimalScheduler::schedule(const ir::UnitGraph& graph, const cost::CostModel& cost,
                                    SearchStats* stats) const {
  Schedule s;
  s.algorithm = std::string(name());
  s.model = graph.name();
  const size_t n = graph.num_units();
  if (n == 0) return s;
  const std::vector<ir::Block> blocks = ir::block_partition(graph);
  // Refuse before searching anything.
  size_t largest = 0;
  for (const ir::Block& b : blocks) {
    if (b.is_chain) continue;
    BRAID_CHECK(b.units.size() <= static_cast<size_t>(optimal_.max_block_units),
                ErrorCode::kInvalidArgument, "optimal: graph '", graph.name(), "' has a block of ",
                b.units.size(), " units (", graph.unit(b.units.front()).name, " .. ",
                graph.unit(b.units.back()).name,
                "), more than max_block_units = ", optimal_.max_block_units,
                "; the exact search is exponential and meant for small "
                "graphs");
    largest = std::max(largest, b.units.size());
  }

  std::vector<Micros> latency(n);
  for (size_t i = 0; i < n; ++i) latency[i] = cost.unit_latency(make_id<UnitId>(i));
  std::vector<LaneChoice> order;  // global unit indices, search lanes
  int64_t nodes = 0;
  Micros searched{0};  // the sum of the blocks' minima
  for (const ir::Block& b : blocks) {
    if (b.is_chain) {
      for (UnitId u : b.units) {
        order.push_back({static_cast<int>(index(u)), 0});
        searched += latency[index(u)];
      }
      continue;
    }
    const Problem p = make_problem(graph, b, latency, options_.max_streams);
    Solution best = Search(p, greedy(p), optimal_.max_nodes).run(&nodes);
    for (const LaneChoice& pl : best.placements)
      order.push_back({static_cast<int>(index(p.units[pl.unit])), pl.lane});
    searched += best.makespan;
  }

  // Lanes in order of first use, with semi-active times (predict.h's): a unit starts when its
  // lane is free and its predecessors are done.
  std::vector<int> lane_index, lane_of(n), position(n);
  std::vector<Micros> finish(n);
  Micros makespan{0};
  for (const LaneChoice& pl : order) {
    if (static_cast<size_t>(pl.lane) >= lane_index.size()) lane_index.resize(pl.lane + 1, -1);
    if (lane_index[pl.lane] < 0) {
      lane_index[pl.lane] = static_cast<int>(s.lanes.size());
      s.lanes.push_back({.device = 0, .stream = lane_index[pl.lane]});
    }
    Lane& lane = s.lanes[lane_index[pl.lane]];
    const UnitId u = make_id<UnitId>(pl.unit);
    Micros start = lane.finish.empty() ? Micros{0} : lane.finish.back();
    for (UnitId q : graph.predecessors(u)) start = std::max(start, finish[index(q)]);
    finish[pl.unit] = start + latency[pl.unit];
    lane_of[pl.unit] = lane_index[pl.lane];
    position[pl.unit] = static_cast<int>(lane.units.size());
    lane.units.push_back(u);
    lane.start.push_back(start);
    lane.finish.push_back(finish[pl.unit]);
    s.launch_order.push_back(u);
    makespan = std::max(makespan, finish[pl.unit]);
  }
  BRAID_ASSERT(order.size() == n, "every unit is placed once");
  // Clamped search times are never earlier than the semi-active ones, and both are minimal.
  BRAID_ASSERT(makespan <= searched + Micros{1e-9} * std::max(1.0, searched.count()),
               "optimal: lanes take ", makespan.count(), " us, the search found ",
               searched.count());
  s.syncs = minimal_syncs(graph, order, lane_of, position, s.lanes.size());
  s.predicted_latency = makespan;
  s.stats["nodes"] = nodes;
  s.stats["blocks"] = blocks.size();
  s.stats["largest_block"] = largest;
  if (stats) stats->nodes += nodes;
  return s;
}

}  // namespace braid::sched
