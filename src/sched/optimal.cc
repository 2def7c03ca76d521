#include "sched/optimal.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <numeric>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/error.h"
#include "ir/analysis.h"
#include "sched/moldable.h"

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
// last: the block starts at time 0 with every core free. `optimal` is the case of one thread
// per unit, its lanes the cores.
struct Problem {
  std::vector<UnitId> units;
  std::vector<std::vector<Micros>> latency;  // [unit][threads - 1]
  // The thread counts worth trying, ascending: each runs the unit faster than every fewer.
  std::vector<std::vector<int>> choices;
  std::vector<Micros> fastest;  // the lowest latency over the choices
  std::vector<Micros> area;     // the least work, threads x latency, over the choices
  std::vector<std::vector<int>> preds;
  std::vector<Mask> pred_mask, succ_mask;
  std::vector<Mask> ancestors, descendants;  // transitive, the unit itself excluded
  // Identical twins (same predecessors, successors and latencies) of lower index: they are
  // interchangeable, so the search places twins in index order.
  std::vector<Mask> twins_before;
  // The longest path from the unit to a sink, the unit included, each unit at its fastest.
  std::vector<Micros> tail;
  int cores = 1;
};

// A unit placed on cores (ascending).
struct Placed {
  int unit = 0;  // local index while searching, UnitId index once assembled
  std::vector<int> cores;
};

struct Solution {
  // Placement order: each unit after its predecessors and the units before it on its cores,
  // i.e. a linear extension of every edge and core order (the launch order).
  std::vector<Placed> placements;
  Micros makespan = kInfinity;
};

Mask bit(int i) {
  return Mask{1} << i;
}

Micros area_of(const Problem& p, Mask set) {
  Micros sum{0};
  for (; set != 0; set &= set - 1) sum += p.area[std::countr_zero(set)];
  return sum;
}

// The thread counts of `latency` (at 1, 2, ... threads) that beat every smaller count.
std::vector<int> thread_choices(std::span<const Micros> latency) {
  std::vector<int> choices;
  Micros best = kInfinity;
  for (size_t k = 1; k <= latency.size(); ++k)
    if (latency[k - 1] < best) {
      best = latency[k - 1];
      choices.push_back(static_cast<int>(k));
    }
  return choices;
}

// `latency[u]`: unit u's latency at 1, 2, ... threads.
Problem make_problem(const ir::UnitGraph& graph, const ir::Block& block,
                     std::span<const std::vector<Micros>> latency, int cores) {
  Problem p;
  const int m = static_cast<int>(block.units.size());
  std::vector<int> local(graph.num_units(), -1);
  for (int i = 0; i < m; ++i) local[index(block.units[i])] = i;
  p.units = block.units;
  p.preds.resize(m);
  p.pred_mask.assign(m, 0);
  p.succ_mask.assign(m, 0);
  for (int i = 0; i < m; ++i) {
    const std::vector<Micros>& at = latency[index(block.units[i])];
    p.latency.push_back(at);
    p.choices.push_back(thread_choices(at));
    p.fastest.push_back(at[p.choices[i].back() - 1]);
    Micros least = kInfinity;
    for (int k : p.choices[i]) least = std::min(least, static_cast<double>(k) * at[k - 1]);
    p.area.push_back(least);
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
    p.tail[i] = p.fastest[i] + longest;
  }
  p.twins_before.assign(m, 0);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < i; ++j)
      if (p.pred_mask[j] == p.pred_mask[i] && p.succ_mask[j] == p.succ_mask[i] &&
          p.latency[j] == p.latency[i])
        p.twins_before[i] |= bit(j);
  p.cores = cores;
  return p;
}

// The k cores a unit starting at `start` takes: among those free by then (`free`, at least k
// of them), the latest free (best fit: it leaves the earlier ones for later units), the lowest
// index on ties. Ascending in `cores`.
void take_cores(std::span<const Micros> free, Micros start, int k, std::vector<int>& cores) {
  cores.clear();
  for (int c = 0; c < static_cast<int>(free.size()); ++c)
    if (free[c] <= start) cores.push_back(c);
  BRAID_ASSERT(static_cast<int>(cores.size()) >= k, k, " cores wanted at ", start.count(), " us, ",
               cores.size(), " free");
  std::partial_sort(cores.begin(), cores.begin() + k, cores.end(),
                    [&](int a, int b) { return free[a] != free[b] ? free[a] > free[b] : a < b; });
  cores.resize(k);
  std::sort(cores.begin(), cores.end());
}

// The k-th earliest of the cores' free times (k >= 1).
Micros kth_free(std::vector<Micros> free, int k) {
  std::nth_element(free.begin(), free.begin() + (k - 1), free.end());
  return free[k - 1];
}

// The initial incumbent: list scheduling by critical-path priority (the longest tail first,
// then the lowest index), each unit at the thread count and on the cores where it finishes
// earliest (the fewest threads on ties), the latest-free such cores (take_cores).
Solution greedy(const Problem& p) {
  const int m = static_cast<int>(p.units.size());
  std::vector<Micros> finish(m), core_free(p.cores, Micros{0});
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
    int threads = 0;
    Micros start{0};
    for (int k : p.choices[unit]) {
      const Micros at = std::max(ready, kth_free(core_free, k));
      if (threads == 0 || at + p.latency[unit][k - 1] < finish[unit])
        threads = k, start = at, finish[unit] = at + p.latency[unit][k - 1];
    }
    Placed placement{unit, {}};
    take_cores(core_free, start, threads, placement.cores);
    for (int c : placement.cores) core_free[c] = finish[unit];
    placed |= bit(unit);
    s.placements.push_back(std::move(placement));
    s.makespan = std::max(s.makespan, finish[unit]);
  }
  return s;
}

// Depth-first branch and bound (see optimal.h).
//
// The search runs in "clamped" time: a placement starts at max(previous placement's start,
// cores free, predecessors done), so starts never decrease along a path and core free times
// below the last start act as the last start. Clamping only ever delays a path, and any
// timetable placed in order of its (semi-active) starts is a path that clamping leaves
// unchanged, so the best path is an optimal timetable.
//
// The future of a node depends only on its state: the placed set, the last start, the cores'
// free times (as a multiset: cores are interchangeable) and, for each unplaced unit, when its
// placed predecessors are done. With the same placed set, a state no later in any of these
// leads to a schedule no longer (replay the other's choices: every start is a max of these
// times plus latencies). Pruning rules that follow:
//  - a unit at k threads starts as early as it can, on the k cores that free up last by then
//    (best fit): any other cores, or a later start, give a later state, core by core. With one
//    thread: the lane that frees up last by the time the unit is ready, or, when every lane is
//    busy then, the lane that frees up first;
//  - a node whose state is no earlier than one visited before is skipped (memo).
class Search {
 public:
  Search(const Problem& p, Solution incumbent, int64_t max_nodes, std::string_view name)
      : p_(p),
        max_nodes_(max_nodes),
        name_(name),
        m_(static_cast<int>(p.units.size())),
        all_(m_ == kMaxMaskUnits ? ~Mask{0} : bit(m_) - 1),
        finish_(m_),
        core_free_(p.cores, Micros{0}),
        est_(m_),
        sorted_free_(p.cores),
        free_at_(p.cores),
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
    int threads;
  };

  void visit(int depth) {
    BRAID_CHECK(++nodes_ <= max_nodes_ || max_nodes_ == 0, ErrorCode::kInvalidArgument, name_,
                ": gave up after max_nodes = ", max_nodes_, " search nodes on a block of ", m_,
                " units (", p_.cores, name_ == "optimal" ? " streams)" : " cores)");
    if (placed_ == all_) {
      const Micros makespan = *std::max_element(core_free_.begin(), core_free_.end());
      if (makespan < best_.makespan) record(makespan);
      return;
    }
    if (lower_bound() >= best_.makespan || dominated()) return;

    // sorted_free_ holds the clamped core free times, ascending (lower_bound's).
    std::vector<Child>& children = children_[depth];
    children.clear();
    for (int u = 0; u < m_; ++u) {
      if ((placed_ & bit(u)) || (p_.pred_mask[u] & ~placed_) != 0 ||
          (p_.twins_before[u] & ~placed_) != 0)
        continue;
      Micros ready = last_start_;
      for (int q : p_.preds[u]) ready = std::max(ready, finish_[q]);
      for (int k : p_.choices[u]) children.push_back({std::max(ready, sorted_free_[k - 1]), u, k});
    }
    // Early starts and long tails first, to meet good schedules early; a unit's thread counts
    // by finish.
    std::sort(children.begin(), children.end(), [&](const Child& a, const Child& b) {
      if (a.start != b.start) return a.start < b.start;
      if (p_.tail[a.unit] != p_.tail[b.unit]) return p_.tail[a.unit] > p_.tail[b.unit];
      if (a.unit != b.unit) return a.unit < b.unit;
      return a.start + latency(a) < b.start + latency(b);
    });
    for (const Child& c : children) {
      // The unit at these threads, then its successors at their fastest.
      if (c.start + p_.tail[c.unit] + (latency(c) - p_.fastest[c.unit]) >= best_.makespan) continue;
      for (int l = 0; l < p_.cores; ++l) free_at_[l] = free_at(l);
      const size_t first = path_cores_.size();
      take_cores(free_at_, c.start, c.threads, taken_);
      const Micros saved_start = last_start_;
      finish_[c.unit] = c.start + latency(c);
      for (int l : taken_) {
        path_cores_.push_back(l);
        saved_free_.push_back(core_free_[l]);
        core_free_[l] = finish_[c.unit];
      }
      last_start_ = c.start;
      placed_ |= bit(c.unit);
      path_.push_back(c);
      visit(depth + 1);
      path_.pop_back();
      placed_ &= ~bit(c.unit);
      last_start_ = saved_start;
      for (size_t i = path_cores_.size(); i-- > first;) {
        core_free_[path_cores_[i]] = saved_free_.back();
        saved_free_.pop_back();
      }
      path_cores_.resize(first);
    }
  }

  Micros latency(const Child& c) const { return p_.latency[c.unit][c.threads - 1]; }
  Micros free_at(int core) const { return std::max(core_free_[core], last_start_); }

  void record(Micros makespan) {
    best_.placements.clear();
    size_t at = 0;
    for (const Child& c : path_) {
      best_.placements.push_back({c.unit,
                                  {path_cores_.begin() + static_cast<ptrdiff_t>(at),
                                   path_cores_.begin() + static_cast<ptrdiff_t>(at + c.threads)}});
      at += static_cast<size_t>(c.threads);
    }
    best_.makespan = makespan;
  }

  // The earliest time by which the cores (free times sorted_free_, ascending) can have done
  // `work` more: the water level L with sum over cores of max(0, L - free) = work.
  Micros level(Micros work) const {
    Micros sum{0};
    for (int j = 1; j <= p_.cores; ++j) {
      sum += sorted_free_[j - 1];
      const Micros l = (sum + work) / j;
      if (j == p_.cores || l <= sorted_free_[j]) return l;
    }
    return kInfinity;  // not reached
  }

  // The largest of: the current makespan; every unplaced unit's earliest start (after its
  // predecessors, and after the cores could have run all its unplaced ancestors) plus its
  // tail; the same start plus its latency plus its unplaced descendants spread over all cores;
  // the water level of all remaining work. Latencies are each unit's fastest, work its least.
  Micros lower_bound() {
    for (int l = 0; l < p_.cores; ++l) sorted_free_[l] = free_at(l);
    std::sort(sorted_free_.begin(), sorted_free_.end());
    Micros bound = sorted_free_.back(), work{0};
    for (int v = 0; v < m_; ++v) {
      if (placed_ & bit(v)) continue;
      Micros start = sorted_free_.front();
      for (int q : p_.preds[v])
        start = std::max(start, (placed_ & bit(q)) ? finish_[q] : est_[q] + p_.fastest[q]);
      est_[v] = start;
      const Mask before = p_.ancestors[v] & ~placed_;
      if (before != 0) start = std::max(start, level(area_of(p_, before)));
      bound = std::max(bound, start + p_.tail[v]);
      const Mask after = p_.descendants[v] & ~placed_;
      if (after != 0)
        bound = std::max(bound, est_[v] + p_.fastest[v] + area_of(p_, after) / p_.cores);
      work += p_.area[v];
    }
    return std::max(bound, level(work));
  }

  // True when a state no earlier (see above) with the same placed set was visited before.
  // Otherwise remembers this one, within the budget.
  bool dominated() {
    key_.clear();
    key_.push_back(last_start_.count());
    for (int l = 0; l < p_.cores; ++l) key_.push_back(sorted_free_[l].count());  // lower_bound's
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
  const std::string_view name_;
  const int m_;
  const Mask all_;
  Mask placed_ = 0;
  std::vector<Micros> finish_;     // of placed units
  std::vector<Micros> core_free_;  // the finish of each core's last unit
  Micros last_start_{0};
  std::vector<Micros> est_, sorted_free_;     // lower_bound scratch
  std::vector<Micros> free_at_;               // visit scratch
  std::vector<int> taken_;                    // visit scratch
  std::vector<std::vector<Child>> children_;  // per depth, reused
  std::vector<Child> path_;                   // the placements so far
  std::vector<int> path_cores_;               // their cores, back to back
  std::vector<Micros> saved_free_;            // the core free times they replaced
  Solution best_;
  int64_t nodes_ = 0;
  std::unordered_map<Mask, std::vector<double>> memo_;  // placed set -> keys, back to back
  size_t memo_times_ = 0;
  std::vector<double> key_;
};

// Minimal syncs by vector clocks: seen[u][l] = how many units of lane l happen before u or are
// u. A unit must follow each unit of `waits` (its producers, and the last unit of each core it
// takes); one on another lane needs a sync only when it is not already among them.
std::vector<SyncEdge> minimal_syncs(std::span<const int> order,
                                    std::span<const std::vector<UnitId>> waits,
                                    std::span<const int> lane_of, std::span<const int> position,
                                    size_t num_lanes) {
  const size_t n = order.size();
  std::vector<std::vector<uint32_t>> seen(n, std::vector<uint32_t>(num_lanes, 0));
  std::vector<int> rank(n);  // position in `order`
  for (size_t i = 0; i < order.size(); ++i) rank[order[i]] = static_cast<int>(i);
  std::vector<int> lane_last(num_lanes, -1);
  std::vector<SyncEdge> syncs;
  std::vector<UnitId> before;
  for (int unit : order) {
    const size_t v = static_cast<size_t>(unit);
    const int lane = lane_of[v];
    if (lane_last[lane] >= 0) seen[v] = seen[lane_last[lane]];
    seen[v][lane] = static_cast<uint32_t>(position[v] + 1);
    // The latest-placed first: they carry the most knowledge.
    before.assign(waits[v].begin(), waits[v].end());
    std::sort(before.begin(), before.end(),
              [&](UnitId a, UnitId b) { return rank[index(a)] > rank[index(b)]; });
    for (UnitId u : before) {
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

// Both schedulers: `cores` > 0 plans an allotment on that many cores (optimal-threads), 0 one
// thread per unit on at most `max_streams` lanes (optimal).
Schedule solve(std::string_view name, const ir::UnitGraph& graph, const cost::CostModel& cost,
               const OptimalOptions& options, int max_streams, int cores, SearchStats* stats) {
  const bool allotment = cores > 0;
  Schedule s;
  s.algorithm = std::string(name);
  s.model = graph.name();
  s.cores = cores;
  const size_t n = graph.num_units();
  if (n == 0) return s;
  const std::vector<ir::Block> blocks = ir::block_partition(graph);
  // With one core every order without idle time is optimal: nothing to search.
  auto searched_block = [&](const ir::Block& b) { return !b.is_chain && cores != 1; };
  // Refuse before searching anything.
  size_t largest = 0;
  for (const ir::Block& b : blocks) {
    if (!searched_block(b)) continue;
    BRAID_CHECK(b.units.size() <= static_cast<size_t>(options.max_block_units),
                ErrorCode::kInvalidArgument, name, ": graph '", graph.name(), "' has a block of ",
                b.units.size(), " units (", graph.unit(b.units.front()).name, " .. ",
                graph.unit(b.units.back()).name,
                "), more than max_block_units = ", options.max_block_units,
                "; the exact search is exponential and meant for small "
                "graphs");
    largest = std::max(largest, b.units.size());
  }

  // latency[u][k - 1]: unit u at k threads.
  std::vector<std::vector<Micros>> latency(n);
  for (size_t i = 0; i < n; ++i) {
    const UnitId u = make_id<UnitId>(i);
    if (!allotment) latency[i] = {cost.unit_latency(u)};
    for (int k = 1; allotment && k <= cores; ++k) latency[i].push_back(cost.unit_latency_at(u, k));
  }
  std::vector<Placed> order;  // global unit indices, search cores
  int64_t nodes = 0;
  Micros searched{0};  // the sum of the blocks' minima
  for (const ir::Block& b : blocks) {
    if (!searched_block(b)) {
      // Every core is free when a chain unit starts: each at its fastest.
      for (UnitId u : b.units) {
        const int k = thread_choices(latency[index(u)]).back();
        Placed placement{static_cast<int>(index(u)), std::vector<int>(k)};
        std::iota(placement.cores.begin(), placement.cores.end(), 0);
        order.push_back(std::move(placement));
        searched += latency[index(u)][k - 1];
      }
      continue;
    }
    // More lanes than units never help; more cores may (a unit widens).
    const int m = static_cast<int>(b.units.size());
    const int block_cores = allotment ? cores : max_streams == 0 ? m : std::min(max_streams, m);
    const Problem p = make_problem(graph, b, latency, block_cores);
    Solution best = Search(p, greedy(p), options.max_nodes, name).run(&nodes);
    for (Placed& pl : best.placements) {
      pl.unit = static_cast<int>(index(p.units[pl.unit]));
      order.push_back(std::move(pl));
    }
    searched += best.makespan;
  }

  // Lanes, one per lowest core, in order of first use, with semi-active times (predict.h's): a
  // unit starts when its cores are free and its predecessors are done. It waits for its
  // producers and for the last unit of each core it takes.
  std::vector<int> lane_index, lane_of(n), position(n), threads(n), units_order, core_last;
  std::vector<std::vector<UnitId>> waits(n);
  std::vector<Micros> finish(n);
  Micros makespan{0};
  for (const Placed& pl : order) {
    const int lowest = pl.cores.front();
    if (static_cast<size_t>(lowest) >= lane_index.size()) lane_index.resize(lowest + 1, -1);
    if (lane_index[lowest] < 0) {
      lane_index[lowest] = static_cast<int>(s.lanes.size());
      s.lanes.push_back({.device = 0, .stream = lane_index[lowest]});
    }
    Lane& lane = s.lanes[lane_index[lowest]];
    const UnitId u = make_id<UnitId>(pl.unit);
    const int k = static_cast<int>(pl.cores.size());
    Micros start{0};
    for (int c : pl.cores) {
      if (static_cast<size_t>(c) >= core_last.size()) core_last.resize(c + 1, -1);
      if (core_last[c] < 0) continue;
      start = std::max(start, finish[core_last[c]]);
      waits[pl.unit].push_back(make_id<UnitId>(core_last[c]));
    }
    for (UnitId q : graph.predecessors(u)) {
      start = std::max(start, finish[index(q)]);
      waits[pl.unit].push_back(q);
    }
    for (int c : pl.cores) core_last[c] = pl.unit;
    finish[pl.unit] = start + latency[pl.unit][k - 1];
    lane_of[pl.unit] = lane_index[lowest];
    position[pl.unit] = static_cast<int>(lane.units.size());
    threads[pl.unit] = k;
    lane.units.push_back(u);
    lane.start.push_back(start);
    lane.finish.push_back(finish[pl.unit]);
    if (allotment) lane.threads.push_back(k);
    s.launch_order.push_back(u);
    units_order.push_back(pl.unit);
    makespan = std::max(makespan, finish[pl.unit]);
  }
  BRAID_ASSERT(order.size() == n, "every unit is placed once");
  // Clamped search times are never earlier than the semi-active ones, and both are minimal.
  BRAID_ASSERT(makespan <= searched + Micros{1e-9} * std::max(1.0, searched.count()), name,
               ": lanes take ", makespan.count(), " us, the search found ", searched.count());
  s.syncs = minimal_syncs(units_order, waits, lane_of, position, s.lanes.size());
  s.predicted_latency = makespan;
  s.stats["nodes"] = nodes;
  s.stats["blocks"] = blocks.size();
  s.stats["largest_block"] = largest;
  if (allotment) {
    s.stats["cores"] = cores;
    s.stats["widened_units"] =
        std::count_if(threads.begin(), threads.end(), [](int k) { return k > 1; });
  }
  if (stats) stats->nodes += nodes;
  return s;
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
  return solve(name(), graph, cost, optimal_, options_.max_streams, 0, stats);
}

OptimalThreadsScheduler::OptimalThreadsScheduler(const ScheduleOptions& options,
                                                 OptimalOptions optimal)
    : options_(options), optimal_(optimal) {
  BRAID_CHECK(options.cores >= 0, ErrorCode::kInvalidArgument,
              "optimal-threads: cores must be >= 0 (0 = every core the cost model has), got ",
              options.cores);
  BRAID_CHECK(optimal.max_block_units >= 1 && optimal.max_block_units <= kMaxMaskUnits,
              ErrorCode::kInvalidArgument, "optimal-threads: max_block_units must be in [1, ",
              kMaxMaskUnits, "], got ", optimal.max_block_units);
  BRAID_CHECK(options.num_devices == 1, ErrorCode::kUnsupported,
              "optimal-threads: searches one device only (its model has no transfers), got "
              "num_devices = ",
              options.num_devices);
}

Schedule OptimalThreadsScheduler::schedule(const ir::UnitGraph& graph, const cost::CostModel& cost,
                                           SearchStats* stats) const {
  return solve(name(), graph, cost, optimal_, 0, allotment_cores(options_, cost), stats);
}

}  // namespace braid::sched
