#include "sched/ios.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <queue>
#include <span>
#include <string>

#include "base/error.h"
#include "ir/analysis.h"
#include "sched/endings.h"
#include "sched/merge.h"
#include "sched/moldable.h"

namespace braid::sched {
namespace {

// A set of the units of one part: bit i is the part's i-th unit (ios.h: parts have <= 64).
using Mask = UnitMask;

constexpr double kInfinity = std::numeric_limits<double>::infinity();

Mask bit(size_t i) {
  return Mask{1} << i;
}
size_t lowest(Mask m) {
  return static_cast<size_t>(std::countr_zero(m));
}
int count(Mask m) {
  return std::popcount(m);
}

// A hash map from non-empty masks to values: open addressing, linear probing, key 0 marks a
// free slot. The DP makes millions of lookups; node-based maps would allocate for each entry.
template <typename Value>
class MaskMap {
 public:
  MaskMap() { rehash(kInitialSlots); }

  const Value* find(Mask key) const {
    for (size_t i = slot(key);; i = (i + 1) & (keys_.size() - 1)) {
      if (keys_[i] == key) return &values_[i];
      if (keys_[i] == 0) return nullptr;
    }
  }
  // Inserts `key`, or overwrites its value. Invalidates pointers from find().
  void insert(Mask key, const Value& value) {
    BRAID_ASSERT(key != 0, "MaskMap keys are non-empty sets");
    if (2 * (size_ + 1) > keys_.size()) rehash(2 * keys_.size());
    size_t i = slot(key);
    while (keys_[i] != 0 && keys_[i] != key) i = (i + 1) & (keys_.size() - 1);
    if (keys_[i] == 0) ++size_;
    keys_[i] = key;
    values_[i] = value;
  }
  size_t size() const { return size_; }

 private:
  static constexpr size_t kInitialSlots = 256;  // a power of two

  // Fibonacci hashing: the top bits of key * 2^64 / golden ratio.
  size_t slot(Mask key) const {
    return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_);
  }
  void rehash(size_t slots) {
    std::vector<Mask> keys = std::move(keys_);
    std::vector<Value> values = std::move(values_);
    keys_.assign(slots, 0);
    values_.assign(slots, Value{});
    shift_ = 64 - std::countr_zero(slots);
    size_ = 0;
    for (size_t i = 0; i < keys.size(); ++i)
      if (keys[i] != 0) insert(keys[i], values[i]);
  }

  std::vector<Mask> keys_;
  std::vector<Value> values_;
  int shift_ = 0;
  size_t size_ = 0;
};

// One part of a block, its units renumbered 0..n-1 in unit id (topological) order. Edges to
// units outside the part are dropped: earlier parts run entirely before it, later ones after.
struct Part {
  std::vector<UnitId> units;
  EndingGraph edges;
  // Operator merge: units that are mergeable Convs, in classes whose members pairwise have no
  // merge_difference (same input, stride, dilation, output size, activation).
  Mask mergeable = 0;
  std::vector<int> merge_class;  // -1: not mergeable
  std::vector<Mask> class_units;
  std::vector<const ir::ConvAttrs*> conv;  // null: not mergeable
};

Part make_part(const ir::UnitGraph& graph, std::span<const UnitId> units, bool merges) {
  const size_t n = units.size();
  BRAID_ASSERT(n >= 1 && n <= static_cast<size_t>(kIosMaxPartSize), "part of ", n, " units");
  BRAID_ASSERT(std::is_sorted(units.begin(), units.end()), "part units in id order");
  Part p;
  p.units.assign(units.begin(), units.end());
  p.edges = ending_graph(graph, units);
  p.merge_class.assign(n, -1);
  p.conv.assign(n, nullptr);
  if (!merges || graph.graph() == nullptr) return p;
  std::vector<MergeableConv> representative;
  for (size_t i = 0; i < n; ++i) {
    std::string why;
    std::optional<MergeableConv> m = mergeable_conv(graph, p.units[i], &why);
    if (!m) continue;
    size_t c = 0;
    while (c < representative.size() &&
           !merge_difference(*graph.graph(), representative[c], *m).empty())
      ++c;
    if (c == representative.size()) {
      representative.push_back(*m);
      p.class_units.push_back(0);
    }
    p.merge_class[i] = static_cast<int>(c);
    p.class_units[c] |= bit(i);
    p.mergeable |= bit(i);
    p.conv[i] = m->attrs;
  }
  return p;
}

// The pruning of ios.txt §4.3, with 0 (unbounded) replaced by a bound that never binds.
struct Limits {
  int group_size = kIosMaxPartSize;   // r: units per group of a concurrent stage
  int groups = kIosMaxPartSize;       // min(s, max_streams): groups of a concurrent stage
  int merge_units = kIosMaxPartSize;  // s: units of a merge stage (one group each)
  int cores = 0;                      // ios-threads: the cores a stage's groups share; 0: none
};

// The thread counts a group of an allotted stage may get out of `cores`: every count up to 8
// cores, then powers of two and `cores` itself (a stage of g groups has C(cores, g) allotments).
std::vector<int> thread_choices(int cores) {
  std::vector<int> out;
  for (int k = 1; k <= cores; ++k)
    if (cores <= 8 || std::has_single_bit(static_cast<unsigned>(k)) || k == cores) out.push_back(k);
  return out;
}

// The search over one part: Algorithm 1's recurrence (SCHEDULER, GENERATESTAGE) evaluated
// either as the memoized dynamic program or best-first (ios.h).
class PartSearch {
 public:
  // `tolerance` (best-first only): the result may exceed the optimum by this fraction.
  // `priced_by_bounds`: every stage costs the cost model's lower bound (the heuristic's search).
  PartSearch(const Part& part, const cost::CostModel& cost, IosVariant variant, Limits limits,
             double tolerance = 0, bool priced_by_bounds = false)
      : part_(part),
        cost_(cost),
        variant_(variant),
        limits_(limits),
        weight_(1 + tolerance),
        priced_by_bounds_(priced_by_bounds) {}

  // One stage of the result: its unit set and kind.
  struct Step {
    Mask units = 0;
    StageKind kind = StageKind::kConcurrent;
  };
  struct Result {
    double cost = 0;
    std::vector<Step> steps;  // first to last
  };

  // The dynamic program: every state's best choice, each stage's latency asked when met.
  Result dynamic_program(Mask all) {
    solve(all);
    Result r;
    r.cost = memo_.find(all)->cost;
    for (Mask s = all; s != 0;) {
      const Choice* c = memo_.find(s);
      BRAID_ASSERT(c != nullptr, "state solved before its schedule is read");
      r.steps.push_back({c->last, c->kind});
      s &= ~c->last;
    }
    std::reverse(r.steps.begin(), r.steps.end());
    states_ = static_cast<int64_t>(memo_.size()) + 1;  // + the empty set
    return r;
  }

  // Best-first (A*) from the whole set to the empty one: g = the latency of the stages removed
  // from the end so far, h = lower_bound(state). A transition enters the queue priced by the
  // stage's lower bound; its latency is asked only when that entry reaches the front, so a
  // stage whose bound already ends behind the optimum is never measured. h is consistent
  // (lower_bound), so a state taken from the queue with its exact cost is final, and the
  // result is the dynamic program's optimum. With a tolerance t the heuristic is inflated to
  // (1 + t) h (weighted A*, lazy edges as in Cohen et al.'s Lazy Weighted A*): the search dives
  // toward complete schedules, measures fewer stages, and returns one within (1 + t) of the
  // optimum.
  Result best_first(Mask all) {
    struct Closed {
      Mask parent = 0;  // 0: the start (the whole set)
      Mask ending = 0;
      StageKind kind = StageKind::kConcurrent;
    };
    MaskMap<Closed> closed;
    MaskMap<double> best_exact;  // the lowest exact cost pushed per state
    std::priority_queue<Entry, std::vector<Entry>, Later> open;
    uint64_t sequence = 0;
    auto push = [&](Entry e) {
      e.sequence = sequence++;
      open.push(e);
    };
    push({heuristic(all), 0.0, 0, all, 0, 0, StageKind::kConcurrent, true, 0});
    Closed goal;
    double goal_cost = kInfinity;
    while (!open.empty()) {
      const Entry e = open.top();
      open.pop();
      if (e.state != 0 && closed.find(e.state) != nullptr) continue;
      if (!e.exact) {
        const double g = e.g + latency(e.ending, e.kind);
        const double* known = e.state != 0 ? best_exact.find(e.state) : nullptr;
        if (known != nullptr && *known <= g) continue;
        if (e.state != 0) best_exact.insert(e.state, g);
        push({g + heuristic(e.state), g, e.stages, e.state, e.parent, e.ending, e.kind, true, 0});
        continue;
      }
      if (e.state == 0) {
        goal = {e.parent, e.ending, e.kind};
        goal_cost = e.g;
        break;
      }
      closed.insert(e.state, {e.parent, e.ending, e.kind});
      auto visit = [&](Mask ending, StageKind kind, bool counted) {
        if (counted) ++transitions_;
        const Mask next = e.state & ~ending;
        if (next != 0 && closed.find(next) != nullptr) return;
        const double* known = known_latency(ending, kind);
        // The heuristic's search prices stages by their bounds and caches them: ask it.
        const double g = e.g + (known != nullptr ? *known : bounds().latency(ending, kind));
        const double f = g + heuristic(next);
        if (next != 0) {
          const double* best = best_exact.find(next);
          if (best != nullptr && *best <= g) return;
          if (known != nullptr) best_exact.insert(next, g);
        }
        push({f, e.g + (known != nullptr ? *known : 0.0), e.stages + 1, next, e.state, ending, kind,
              known != nullptr, 0});
      };
      enumerate(e.state, visit);
    }
    BRAID_ASSERT(goal_cost < kInfinity, "the best-first search reaches the empty set");
    states_ = static_cast<int64_t>(closed.size()) + 1;
    Result r;
    r.cost = goal_cost;
    for (Closed c = goal;;) {
      r.steps.push_back({c.ending, c.kind});
      if (c.parent == all) break;
      c = *closed.find(c.parent);
    }
    return r;
  }

  // The stages of `result`, as braid's schedule format writes them.
  std::vector<Stage> stages(const Result& result) const {
    std::vector<Stage> out;
    for (const Step& step : result.steps) {
      Stage stage;
      stage.kind = step.kind;
      if (step.kind == StageKind::kMerge) {
        for (Mask m = step.units; m != 0; m &= m - 1)
          stage.groups.push_back({part_.units[lowest(m)]});
      } else {
        stage.groups = groups_of(step.units);
        if (const std::vector<int>* threads = allotment_.find(step.units)) stage.threads = *threads;
      }
      out.push_back(std::move(stage));
    }
    return out;
  }

  int64_t transitions() const { return transitions_; }
  int64_t states() const { return states_; }
  int64_t stage_queries() const { return stage_queries_; }

 private:
  // The best schedule of the units `s` (closed under predecessors): its cost and stage count.
  struct Choice {
    double cost = kInfinity;
    int32_t stages = 0;
    StageKind kind = StageKind::kConcurrent;
    Mask last = 0;  // the ending chosen as the last stage
  };

  // A queue entry of the best-first search. Exact: `state` reached at cost g. Not exact: the
  // transition from `parent` (reached at cost g) removing `ending`, its latency not yet asked.
  struct Entry {
    double f;  // g (+ the ending's lower bound when not exact) + lower_bound(state)
    double g;
    int32_t stages;
    Mask state, parent, ending;
    StageKind kind;
    bool exact;
    uint64_t sequence;  // ties go to the earlier push: the search is deterministic
  };
  struct Later {
    bool operator()(const Entry& a, const Entry& b) const {
      if (a.f != b.f) return a.f > b.f;
      if (a.stages != b.stages) return a.stages > b.stages;
      return a.sequence > b.sequence;
    }
  };

  Choice solve(Mask s) {
    if (s == 0) return {0.0, 0, StageKind::kConcurrent, 0};
    if (const Choice* memo = memo_.find(s)) return *memo;
    Choice best;
    auto visit = [&](Mask ending, StageKind kind, bool counted) {
      if (counted) ++transitions_;
      const double stage = latency(ending, kind);
      const Choice rest = solve(s & ~ending);
      const double total = rest.cost + stage;
      if (better(total, rest.stages + 1, best)) best = {total, rest.stages + 1, kind, ending};
    };
    enumerate(s, visit);
    BRAID_ASSERT(best.last != 0, "every state has a single-unit ending");
    memo_.insert(s, best);
    return best;
  }

  // Equal latencies (up to rounding) go to fewer stages: fewer barriers for the same time.
  static bool better(double cost, int32_t stages, const Choice& best) {
    if (best.cost == kInfinity) return cost < kInfinity;
    const double eps = 1e-9 * std::max(1.0, std::abs(best.cost));
    if (cost < best.cost - eps) return true;
    return cost <= best.cost + eps && stages < best.stages;
  }

  // Calls visit(ending, kind, counted) for every ending of s the variant and the pruning allow.
  // `counted`: a distinct (S, S') pair (IOS-Both meets some merge endings as concurrent ones).
  template <typename Visit>
  void enumerate(Mask s, Visit& visit) {
    const Mask sinks = sinks_of(part_.edges, s);
    if (variant_ != IosVariant::kMerge) {
      const EndingLimits pruning{.group_size = limits_.group_size, .groups = limits_.groups};
      for_each_ending(part_.edges, s, pruning,
                      [&](Mask ending, int) { visit(ending, StageKind::kConcurrent, true); });
    } else {
      for (Mask m = sinks; m != 0; m &= m - 1) visit(bit(lowest(m)), StageKind::kConcurrent, true);
    }
    if (variant_ == IosVariant::kBoth || variant_ == IosVariant::kMerge)
      enumerate_merges(s, sinks, visit);
  }

  // Merge endings: sets of at least two sinks of s from one merge class whose kernels center
  // (IOS enumerates every subset of the sinks; a merge stage has no edge inside).
  template <typename Visit>
  void enumerate_merges(Mask s, Mask sinks, Visit& visit) {
    const Mask candidates = sinks & part_.mergeable;
    Mask seen = 0;
    for (Mask m = candidates; m != 0; m &= m - 1) {
      const size_t i = lowest(m);
      if (seen & bit(i)) continue;
      const Mask same = candidates & part_.class_units[part_.merge_class[i]];
      seen |= same;
      if (count(same) < 2) continue;
      for (Mask sub = same; sub != 0; sub = (sub - 1) & same) {
        const int units = count(sub);
        if (units < 2 || units > limits_.merge_units || !centered(sub)) continue;
        // IOS-Both also reaches this set as a concurrent ending: one (S, S') pair, counted there.
        const bool counted = variant_ != IosVariant::kBoth || units > limits_.groups;
        visit(sub, StageKind::kMerge, counted);
      }
    }
  }

  // The groups of a concurrent stage: the connected parts of `ending`, each in topological
  // order, ordered by their first unit.
  std::vector<std::vector<UnitId>> groups_of(Mask ending) const {
    std::vector<std::vector<UnitId>> groups;
    for (Mask group : ending_groups(part_.edges, ending)) groups.push_back(units_of(group));
    return groups;
  }
  std::vector<UnitId> units_of(Mask set) const {
    std::vector<UnitId> units;
    for (Mask m = set; m != 0; m &= m - 1) units.push_back(part_.units[lowest(m)]);
    return units;
  }

  // Whether the merged kernel's window centers every member's (sched/merge.h).
  bool centered(Mask ending) {
    if (const uint8_t* cached = centered_.find(ending)) return *cached != 0;
    std::vector<const ir::ConvAttrs*> convs;
    for (Mask m = ending; m != 0; m &= m - 1) convs.push_back(part_.conv[lowest(m)]);
    const bool ok = !misaligned_merge(convs);
    centered_.insert(ending, ok ? 1 : 0);
    return ok;
  }

  // Stage latencies, asked once per distinct stage (the set and kind determine the stage).
  double latency(Mask ending, StageKind kind) {
    if (priced_by_bounds_) return stage_bound(ending, kind);
    MaskMap<double>& cache = kind == StageKind::kMerge ? merge_cache_ : concurrent_cache_;
    if (const double* cached = cache.find(ending)) return *cached;
    const double latency = kind == StageKind::kMerge ? cost_.merge_latency(units_of(ending)).count()
                           : limits_.cores > 0       ? allotted_latency(ending)
                                               : cost_.stage_latency(groups_of(ending)).count();
    ++stage_queries_;
    cache.insert(ending, latency);
    return latency;
  }
  // ios-threads: the stage at its best allotment (one thread count per group, summing to at
  // most the cores), which allotment_ records. A cost model that measures is asked for the one
  // allotment its unit latencies predict fastest; one that computes, for every allotment.
  double allotted_latency(Mask ending) {
    const std::vector<std::vector<UnitId>> groups = groups_of(ending);
    const std::vector<int> choices = thread_choices(limits_.cores);
    std::vector<int> threads(groups.size(), 0), best_threads;
    double best = kInfinity;
    auto predicted = [&] {
      return cost_.measures() ? cost_.cost::CostModel::stage_latency_at(groups, threads).count()
                              : cost_.stage_latency_at(groups, threads).count();
    };
    auto assign = [&](auto& self, size_t g, int left) -> void {
      if (g == groups.size()) {
        const double t = predicted();
        if (best_threads.empty() || t < best - 1e-9 * std::max(1.0, best))
          best = t, best_threads = threads;
        return;
      }
      const int others = static_cast<int>(groups.size() - g - 1);  // each needs a core
      for (int k : choices) {
        if (k > left - others) break;
        threads[g] = k;
        self(self, g + 1, left - k);
      }
    };
    assign(assign, 0, limits_.cores);
    BRAID_ASSERT(!best_threads.empty(), "ios-threads: a stage of ", groups.size(), " groups on ",
                 limits_.cores, " cores");
    allotment_.insert(ending, best_threads);
    if (cost_.measures()) best = cost_.stage_latency_at(groups, best_threads).count();
    // Never below the bound the best-first search prices it by, so its heuristic stays
    // consistent (a measurement may come out under it by noise).
    return std::max(best, stage_bound(ending, StageKind::kConcurrent));
  }
  const double* known_latency(Mask ending, StageKind kind) const {
    return (kind == StageKind::kMerge ? merge_cache_ : concurrent_cache_).find(ending);
  }
  // The cost model's lower bound on a stage, asked once per distinct stage.
  double stage_bound(Mask ending, StageKind kind) {
    MaskMap<double>& cache = kind == StageKind::kMerge ? merge_bound_ : concurrent_bound_;
    if (const double* cached = cache.find(ending)) return *cached;
    const double bound = kind == StageKind::kMerge
                             ? cost_.merge_lower_bound(units_of(ending)).count()
                         : limits_.cores > 0 ? allotted_bound(ending)
                                             : cost_.stage_lower_bound(groups_of(ending)).count();
    cache.insert(ending, bound);
    return bound;
  }
  // ios-threads: no allotment runs a stage faster than its slowest group with every unit at its
  // fastest thread count, or than its least work (threads x latency) over the cores.
  double allotted_bound(Mask ending) {
    const std::vector<int> choices = thread_choices(limits_.cores);
    double slowest = 0, work = 0;
    for (const std::vector<UnitId>& group : groups_of(ending)) {
      double sum = 0;
      for (UnitId u : group) {
        double fastest = kInfinity, least = kInfinity;
        for (int k : choices) {
          const double t = cost_.unit_latency_at(u, k).count();
          fastest = std::min(fastest, t);
          least = std::min(least, k * t);
        }
        sum += fastest;
        work += least;
      }
      slowest = std::max(slowest, sum);
    }
    return std::max(slowest, work / limits_.cores);
  }
  double heuristic(Mask s) { return weight_ * lower_bound(s); }

  // A lower bound on the latency of any schedule of the units `s` (best-first only): the
  // optimum of the same recurrence with every stage priced by its lower bound, a dynamic
  // program that measures nothing. It is consistent: h(S) <= bound(S') + h(S - S') <=
  // latency(S') + h(S - S') for every ending S', by the recurrence itself. It charges what the
  // stage structure costs (a barrier after every stage, groups of at most r units), which the
  // critical path and the work over the CPUs alone do not.
  double lower_bound(Mask s) { return s == 0 ? 0.0 : bounds().solve(s).cost; }
  // The search that prices every stage by its bound, made on first use.
  PartSearch& bounds() {
    if (!bounds_)
      bounds_ = std::make_unique<PartSearch>(part_, cost_, variant_, limits_, 0.0, true);
    return *bounds_;
  }

  const Part& part_;
  const cost::CostModel& cost_;
  const IosVariant variant_;
  const Limits limits_;
  const double weight_;   // of the best-first heuristic: 1 + tolerance
  MaskMap<Choice> memo_;  // cost[S] and choice[S] of Algorithm 1
  MaskMap<double> concurrent_cache_, merge_cache_;
  MaskMap<double> concurrent_bound_, merge_bound_;  // priced_by_bounds_ only
  MaskMap<uint8_t> centered_;            // 1: centered (not vector<bool>: find returns a pointer)
  MaskMap<std::vector<int>> allotment_;  // ios-threads: each concurrent stage's best threads
  const bool priced_by_bounds_;          // stage latencies are the cost model's lower bounds
  std::unique_ptr<PartSearch> bounds_;   // the best-first heuristic's search
  int64_t transitions_ = 0;
  int64_t states_ = 0;
  int64_t stage_queries_ = 0;
};

// Appends `units` cut into the fewest consecutive pieces of at most `size` units, of sizes that
// differ by at most one.
void split_balanced(std::span<const UnitId> units, size_t size,
                    std::vector<std::vector<UnitId>>& parts) {
  const size_t n = units.size();
  const size_t k = (n + size - 1) / size;
  size_t begin = 0;
  for (size_t i = 0; i < k; ++i) {
    const size_t length = n / k + (i < n % k ? 1 : 0);
    parts.emplace_back(units.begin() + begin, units.begin() + begin + length);
    begin += length;
  }
}

// Appends a block's parts: the block itself when it is small enough, else cut at its narrowest
// points (ios.h).
void split_block(const ir::UnitGraph& graph, std::span<const UnitId> units, size_t size,
                 std::vector<std::vector<UnitId>>& parts) {
  const size_t n = units.size();
  if (n <= size) {
    parts.emplace_back(units.begin(), units.end());
    return;
  }
  // frontier[i]: units at positions <= i with a successor in the block after position i.
  std::vector<int> frontier(n, 0);
  for (size_t p = 0; p < n; ++p) {
    size_t last = p;
    for (UnitId v : graph.successors(units[p])) {
      auto it = std::lower_bound(units.begin(), units.end(), v);
      if (it != units.end() && *it == v)
        last = std::max(last, static_cast<size_t>(it - units.begin()));
    }
    if (last > p) {
      ++frontier[p];
      --frontier[last];
    }
  }
  for (size_t i = 1; i < n; ++i) frontier[i] += frontier[i - 1];
  auto largest = [](const std::vector<size_t>& cuts) {
    size_t most = 0;
    for (size_t k = 0, begin = 0; k < cuts.size(); begin = cuts[k++] + 1)
      most = std::max(most, cuts[k] + 1 - begin);
    return most;
  };
  const int widest = *std::max_element(frontier.begin(), frontier.end());
  // Where every unit is named in a scope (`cell_3/conv_1x1`: an exporter's module path, the zoo's
  // cells), cut only between scopes, at every boundary of frontier <= t for the smallest t that
  // leaves no part over `size`: the model's own parts, as IOS's hand-written get_parts
  // (peers.md §2.5).
  auto path = [&](size_t p) {  // the unit's name without a leading `/`
    std::string_view name = graph.unit(units[p]).name;
    name.remove_prefix(std::min(name.find_first_not_of('/'), name.size()));
    return name;
  };
  auto scope = [&](size_t p) { return path(p).substr(0, path(p).find('/')); };
  bool scoped = true;
  for (size_t p = 0; p < n && scoped; ++p) scoped = path(p).find('/') != std::string_view::npos;
  for (int t = 0; scoped && t <= widest; ++t) {
    std::vector<size_t> cuts;
    for (size_t i = 0; i + 1 < n; ++i)
      if (frontier[i] <= t && scope(i) != scope(i + 1)) cuts.push_back(i);
    cuts.push_back(n - 1);
    if (largest(cuts) > size) continue;
    for (size_t k = 0, begin = 0; k < cuts.size(); begin = cuts[k++] + 1)
      parts.emplace_back(units.begin() + begin, units.begin() + cuts[k] + 1);
    return;
  }
  // Otherwise cut after the first position of every run of consecutive positions of frontier
  // <= t, for the smallest t that leaves no part over `size` units (or else the smallest largest
  // part).
  auto cuts_at = [&](int t) {
    std::vector<size_t> cuts;  // cut after these positions; the last is n - 1
    for (size_t i = 0; i + 1 < n; ++i)
      if (frontier[i] <= t && (i == 0 || frontier[i - 1] > t)) cuts.push_back(i);
    cuts.push_back(n - 1);
    return cuts;
  };
  std::vector<size_t> cuts = cuts_at(0);
  for (int t = 1; t <= widest && largest(cuts) > size; ++t)
    if (std::vector<size_t> c = cuts_at(t); largest(c) < largest(cuts)) cuts = std::move(c);
  for (size_t k = 0, begin = 0; k < cuts.size(); begin = cuts[k++] + 1)
    split_balanced(units.subspan(begin, cuts[k] + 1 - begin), size, parts);
}

}  // namespace

std::vector<std::vector<UnitId>> ios_parts(const ir::UnitGraph& graph, int max_part_size) {
  BRAID_CHECK(max_part_size >= 1 && max_part_size <= kIosMaxPartSize, ErrorCode::kInvalidArgument,
              "ios: max_part_size must be in [1, ", kIosMaxPartSize, "], got ", max_part_size);
  std::vector<std::vector<UnitId>> parts;
  for (const ir::Block& block : ir::block_partition(graph))
    split_block(graph, block.units, static_cast<size_t>(max_part_size), parts);
  return parts;
}

IosScheduler::IosScheduler(const ScheduleOptions& options, IosVariant variant, int max_part_size)
    : options_(options), variant_(variant), max_part_size_(max_part_size) {
  BRAID_CHECK(options.max_streams >= 0 && options.max_group_size >= 0 && options.max_groups >= 0,
              ErrorCode::kInvalidArgument,
              "ios: max_streams, max_group_size and max_groups must be >= 0 (0 = unbounded)");
  BRAID_CHECK(max_part_size >= 1 && max_part_size <= kIosMaxPartSize, ErrorCode::kInvalidArgument,
              "ios: max_part_size must be in [1, ", kIosMaxPartSize, "], got ", max_part_size);
  BRAID_CHECK(options.ios_tolerance >= 0 && std::isfinite(options.ios_tolerance),
              ErrorCode::kInvalidArgument, "ios: tolerance must be a finite number >= 0, got ",
              options.ios_tolerance);
}

std::string_view IosScheduler::name() const {
  switch (variant_) {
    case IosVariant::kBoth:
      return "ios";
    case IosVariant::kParallel:
      return "ios-parallel";
    case IosVariant::kMerge:
      return "ios-merge";
    case IosVariant::kThreads:
      return "ios-threads";
  }
  return "ios";
}

Schedule IosScheduler::schedule(const ir::UnitGraph& graph, const cost::CostModel& cost,
                                SearchStats* stats) const {
  BRAID_CHECK(cost.units().num_units() == graph.num_units(), ErrorCode::kInvalidArgument,
              "ios: the cost model is bound to a graph of ", cost.units().num_units(),
              " units, not '", graph.name(), "' (", graph.num_units(), ")");
  auto bound = [](int limit) { return limit == 0 ? kIosMaxPartSize : limit; };
  Limits limits;
  limits.group_size = bound(options_.max_group_size);
  limits.groups = std::min(bound(options_.max_groups), bound(options_.max_streams));
  limits.merge_units = bound(options_.max_groups);
  if (variant_ == IosVariant::kThreads) {
    limits.cores = allotment_cores(options_, cost);
    limits.groups = std::min(limits.groups, limits.cores);  // every group needs a core
  }

  Schedule s;
  s.algorithm = std::string(name());
  s.model = graph.name();
  s.cores = limits.cores;
  double total = 0;
  int64_t transitions = 0, states = 0, stage_queries = 0;
  const std::vector<std::vector<UnitId>> parts = ios_parts(graph, max_part_size_);
  const bool best_first = options_.ios_search == IosSearch::kBestFirst ||
                          (options_.ios_search == IosSearch::kAuto && cost.measures());
  for (const std::vector<UnitId>& units : parts) {
    const Part part =
        make_part(graph, units, variant_ == IosVariant::kBoth || variant_ == IosVariant::kMerge);
    PartSearch search(part, cost, variant_, limits, options_.ios_tolerance);
    const Mask all = units.size() == 64 ? ~Mask{0} : bit(units.size()) - 1;
    const PartSearch::Result result =
        best_first ? search.best_first(all) : search.dynamic_program(all);
    total += result.cost;
    for (Stage& stage : search.stages(result)) s.stages.push_back(std::move(stage));
    transitions += search.transitions();
    states += search.states();
    stage_queries += search.stage_queries();
  }
  s.predicted_latency = Micros{total};
  s.stats["parts"] = parts.size();
  s.stats["stages"] = s.stages.size();
  s.stats["transitions"] = transitions;
  s.stats["states"] = states;
  s.stats["stage_queries"] = stage_queries;
  if (stats != nullptr) {
    stats->transitions = transitions;
    stats->states = states;
    stats->stage_queries = stage_queries;
  }
  return s;
}

std::unique_ptr<Scheduler> make_ios_scheduler(const ScheduleOptions& options) {
  return std::make_unique<IosScheduler>(options, IosVariant::kBoth);
}
std::unique_ptr<Scheduler> make_ios_parallel_scheduler(const ScheduleOptions& options) {
  return std::make_unique<IosScheduler>(options, IosVariant::kParallel);
}
std::unique_ptr<Scheduler> make_ios_merge_scheduler(const ScheduleOptions& options) {
  return std::make_unique<IosScheduler>(options, IosVariant::kMerge);
}
std::unique_ptr<Scheduler> make_ios_threads_scheduler(const ScheduleOptions& options) {
  return std::make_unique<IosScheduler>(options, IosVariant::kThreads);
}

}  // namespace braid::sched
