#include "sched/hios.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <queue>
#include <tuple>

#include "base/error.h"
#include "ir/analysis.h"

namespace braid::sched {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kEps = 1e-9;  // latencies are sums of doubles: compare with slack

// The graph with plain double weights (microseconds), and the orders both steps use.
struct Problem {
  const ir::UnitGraph& g;
  const cost::CostModel& cost;
  int devices = 1;
  std::vector<double> latency;      // per unit
  std::vector<double> transfer;     // per edge index
  std::vector<UnitId> by_priority;  // descending priority, ties by id (a topological order)
  // cost::StartRule::kProducerDevice (HIOS's simulator code): a unit waits for its producers'
  // devices' timelines, and the temporal step takes units in id order (HIOS's node index)
  // instead of by_priority. Algorithm 3's table keeps by_priority and producers' finish times,
  // as HIOS's `hios_pdp` does.
  bool producer_device = false;
  std::vector<UnitId> order;             // the temporal step's order
  std::vector<std::vector<bool>> reach;  // ir::transitive_closure: reach[u][v], a path u -> v

  size_t n() const { return g.num_units(); }
  bool dependent(UnitId a, UnitId b) const {
    return reach[index(a)][index(b)] || reach[index(b)][index(a)];
  }
};

Problem make_problem(const ir::UnitGraph& g, const cost::CostModel& cost, int devices) {
  Problem p{g, cost, devices};
  const size_t n = g.num_units();
  for (size_t u = 0; u < n; ++u) p.latency.push_back(cost.unit_latency(UnitId(u)).count());
  for (const ir::UnitEdge& e : g.edges()) p.transfer.push_back(cost.transfer_latency(e).count());
  const std::vector<Micros> priority = hios_priority(g, cost);
  for (size_t u = 0; u < n; ++u) p.by_priority.push_back(UnitId(u));
  std::stable_sort(p.by_priority.begin(), p.by_priority.end(),
                   [&](UnitId a, UnitId b) { return priority[index(a)] > priority[index(b)]; });
  p.reach = ir::transitive_closure(g);
  p.producer_device = cost.start_rule() == cost::StartRule::kProducerDevice;
  p.order = p.by_priority;
  if (p.producer_device)
    for (size_t u = 0; u < n; ++u) p.order[u] = UnitId(u);
  return p;
}

// Lines 10-13 of Algorithm 1: the mapped units (device >= 0) in priority order, each at the end
// of its device's timeline once its mapped inputs have arrived. Unmapped units are ignored.
// Under HIOS's code rule, in id order, an input from another device arriving after that
// device's timeline as it stands (+ the transfer).
double list_schedule(const Problem& p, const std::vector<int>& device) {
  std::vector<double> free(p.devices, 0), finish(p.n(), 0);
  double makespan = 0;
  for (UnitId v : p.order) {
    const int d = device[index(v)];
    if (d < 0) continue;
    double start = free[d];
    for (uint32_t e : p.g.in_edges(v)) {
      const UnitId u = p.g.edges()[e].from;
      const int du = device[index(u)];
      if (du < 0) continue;
      if (du == d)
        start = std::max(start, finish[index(u)]);
      else
        start = std::max(start, (p.producer_device ? free[du] : finish[index(u)]) + p.transfer[e]);
    }
    finish[index(v)] = start + p.latency[index(v)];
    free[d] = finish[index(v)];
    makespan = std::max(makespan, finish[index(v)]);
  }
  return makespan;
}

// Line 5 of Algorithm 1: the longest valid path among unmapped units, in path order.
std::vector<UnitId> longest_valid_path(const Problem& p, const std::vector<int>& device) {
  const size_t n = p.n();
  std::vector<double> entry(n, 0), exit(n, 0), start(n, -kInf), ext(n, -kInf);
  std::vector<bool> clean(n, true);
  std::vector<int64_t> parent(n, -1);
  for (size_t v = 0; v < n; ++v) {
    if (device[v] >= 0) continue;
    for (uint32_t e : p.g.in_edges(UnitId(v)))
      if (device[index(p.g.edges()[e].from)] >= 0) {
        entry[v] = std::max(entry[v], p.transfer[e]);
        clean[v] = false;
      }
    for (uint32_t e : p.g.out_edges(UnitId(v)))
      if (device[index(p.g.edges()[e].to)] >= 0) {
        exit[v] = std::max(exit[v], p.transfer[e]);
        clean[v] = false;
      }
  }
  double best = -kInf;
  int64_t last = -1;
  for (size_t v = 0; v < n; ++v) {  // ids are topological
    if (device[v] >= 0) continue;
    start[v] = entry[v] + p.latency[v];
    ext[v] = start[v];
    for (uint32_t e : p.g.in_edges(UnitId(v))) {
      const size_t u = index(p.g.edges()[e].from);
      if (device[u] >= 0) continue;
      // u is the path's first unit, or an intermediate one, which must be clean.
      const double before = clean[u] ? ext[u] : start[u];
      const double through = before + p.transfer[e] + p.latency[v];
      if (through > ext[v] + kEps) {
        ext[v] = through;
        parent[v] = int64_t(u);
      }
    }
    if (ext[v] + exit[v] > best + kEps) {
      best = ext[v] + exit[v];
      last = int64_t(v);
    }
  }
  std::vector<UnitId> path;
  for (int64_t v = last; v >= 0;) {
    path.push_back(UnitId(size_t(v)));
    const int64_t u = parent[v];
    if (u < 0) break;
    if (!clean[u]) {  // an unclean predecessor can only start the path
      path.push_back(UnitId(size_t(u)));
      break;
    }
    v = u;
  }
  std::reverse(path.begin(), path.end());
  return path;
}

// Algorithm 1 without its last line: the device of every unit.
std::vector<int> map_longest_path(const Problem& p, int64_t& evaluations) {
  std::vector<int> device(p.n(), -1);
  size_t mapped = 0;
  while (mapped < p.n()) {
    const std::vector<UnitId> path = longest_valid_path(p, device);
    BRAID_ASSERT(!path.empty(), "hios-lp: no path among unmapped units");
    int best_device = 0;
    double best = kInf;
    for (int d = 0; d < p.devices; ++d) {
      for (UnitId u : path) device[index(u)] = d;
      const double l = list_schedule(p, device);
      ++evaluations;
      if (l < best - kEps) {
        best = l;
        best_device = d;
      }
    }
    for (UnitId u : path) device[index(u)] = best_device;
    mapped += path.size();
  }
  return device;
}

// Algorithm 3 without its last line: the device of every unit.
std::vector<int> map_recording(const Problem& p, int64_t& evaluations) {
  const size_t n = p.n(), m = size_t(p.devices);
  std::vector<size_t> position(n);
  for (size_t i = 0; i < n; ++i) position[index(p.by_priority[i])] = i;
  std::vector<std::vector<double>> t(n, std::vector<double>(m, kInf));
  std::vector<std::vector<int>> from(n, std::vector<int>(m, -1));
  t[0][0] = p.latency[index(p.by_priority[0])];
  std::vector<double> finish(n);
  std::vector<int> on(n);
  for (size_t i = 1; i < n; ++i) {
    const UnitId v = p.by_priority[i];
    for (size_t k = 0; k < std::min(m, i); ++k) {
      if (t[i - 1][k] == kInf) continue;
      // The recorded mapping of units 0..i-1 that puts unit i-1 on device k.
      for (size_t l = i, d = k; l-- > 0;) {
        finish[l] = t[l][d];
        on[l] = int(d);
        d = l > 0 ? size_t(from[l][d]) : d;
      }
      for (size_t j = 0; j < std::min(m, i + 1); ++j) {
        double ready = 0;
        for (size_t l = 0; l < i; ++l)
          if (on[l] == int(j)) ready = std::max(ready, finish[l]);
        for (uint32_t e : p.g.in_edges(v)) {
          const size_t l = position[index(p.g.edges()[e].from)];
          ready = std::max(ready, finish[l] + (on[l] == int(j) ? 0 : p.transfer[e]));
        }
        ++evaluations;
        const double done = ready + p.latency[index(v)];
        if (done < t[i][j] - kEps) {
          t[i][j] = done;
          from[i][j] = int(k);
        }
      }
    }
  }
  size_t d = 0;
  for (size_t j = 1; j < m; ++j)
    if (t[n - 1][j] < t[n - 1][d] - kEps) d = j;
  std::vector<int> device(n);
  for (size_t l = n; l-- > 0;) {
    device[index(p.by_priority[l])] = int(d);
    if (l > 0) d = size_t(from[l][d]);
  }
  return device;
}

// Stages ("positions") on devices, in order per device: Algorithm 2's state.
class DeviceStages {
 public:
  DeviceStages(const Problem& p, const std::vector<int>& device) : p_(p), position_of_(p.n()) {
    order_.resize(p.devices);
    for (UnitId u : p.order) {
      const int d = device[index(u)];
      position_of_[index(u)] = positions_.size();
      positions_.push_back({d, {u}, p.latency[index(u)]});
      order_[d].push_back(positions_.size() - 1);
    }
  }

  struct Position {
    int device = 0;
    std::vector<UnitId> units;  // run concurrently, one per stream
    double latency = 0;
    bool alive = true;
  };

  // What both evaluations walk: each position's successors (the next position on its device,
  // transfer 0, and its units' consumers with the edge's transfer), its producers across unit
  // edges, its count of unfinished predecessors and its place in its device's order.
  struct Dependencies {
    std::vector<std::vector<std::pair<size_t, double>>> out, in;
    std::vector<size_t> indegree, rank;
    const std::vector<Position>* positions = nullptr;
    // Calls `f` on each live position without predecessors; returns the number of live ones.
    template <class F>
    size_t for_each_source(F&& f) const {
      size_t alive = 0;
      for (size_t i = 0; i < positions->size(); ++i) {
        if (!(*positions)[i].alive) continue;
        ++alive;
        if (indegree[i] == 0) f(i);
      }
      return alive;
    }
  };
  Dependencies dependencies() const {
    const size_t count = positions_.size();
    Dependencies d{.out = std::vector<std::vector<std::pair<size_t, double>>>(count),
                   .in = std::vector<std::vector<std::pair<size_t, double>>>(count),
                   .indegree = std::vector<size_t>(count, 0),
                   .rank = std::vector<size_t>(count, 0),
                   .positions = &positions_};
    for (const auto& list : order_)
      for (size_t i = 0; i < list.size(); ++i) {
        d.rank[list[i]] = i;
        if (i == 0) continue;
        d.out[list[i - 1]].push_back({list[i], 0.0});
        ++d.indegree[list[i]];
      }
    for (size_t e = 0; e < p_.g.edges().size(); ++e) {
      const ir::UnitEdge& edge = p_.g.edges()[e];
      const size_t a = position_of_[index(edge.from)], b = position_of_[index(edge.to)];
      if (a == b) continue;
      d.out[a].push_back({b, p_.transfer[e]});
      d.in[b].push_back({a, p_.transfer[e]});
      ++d.indegree[b];
    }
    return d;
  }

  // Each device's positions in order, each at its earliest start; +inf when the positions'
  // dependencies form a cycle. `topological` receives the live positions in the order they
  // become ready (by ready time, then place in their device's order).
  double evaluate(std::vector<size_t>* topological = nullptr) const {
    if (p_.producer_device) return evaluate_in_order(topological);
    Dependencies deps = dependencies();
    using Item = std::tuple<double, size_t, int, size_t>;  // ready, rank, device, position
    std::priority_queue<Item, std::vector<Item>, std::greater<>> heap;
    std::vector<double> ready(positions_.size(), 0);
    const size_t alive = deps.for_each_source([&](size_t i) {
      heap.push({0.0, deps.rank[i], positions_[i].device, i});
    });
    size_t done = 0;
    double makespan = 0;
    while (!heap.empty()) {
      const size_t a = std::get<3>(heap.top());
      heap.pop();
      ++done;
      if (topological != nullptr) topological->push_back(a);
      const double finish = ready[a] + positions_[a].latency;
      makespan = std::max(makespan, finish);
      for (auto [b, transfer] : deps.out[a]) {
        const double delay = positions_[a].device != positions_[b].device ? transfer : 0.0;
        ready[b] = std::max(ready[b], finish + delay);
        if (--deps.indegree[b] == 0) heap.push({ready[b], deps.rank[b], positions_[b].device, b});
      }
    }
    return done == alive ? makespan : kInf;
  }

  // HIOS's simulator code: the live positions in a fixed order (Kahn's, the lowest position
  // index first: id order with merged positions at their first unit's place), each at
  // max(its device's timeline, each producer device's timeline + transfer); +inf on a cycle.
  double evaluate_in_order(std::vector<size_t>* topological) const {
    Dependencies deps = dependencies();
    std::priority_queue<size_t, std::vector<size_t>, std::greater<>> heap;
    const size_t alive = deps.for_each_source([&](size_t i) { heap.push(i); });
    size_t done = 0;
    std::vector<double> free(p_.devices, 0), finish(positions_.size(), 0);
    double makespan = 0;
    while (!heap.empty()) {
      const size_t b = heap.top();
      heap.pop();
      ++done;
      if (topological != nullptr) topological->push_back(b);
      const int d = positions_[b].device;
      double start = free[d];
      for (auto [a, transfer] : deps.in[b]) {
        const int da = positions_[a].device;
        start = std::max(start, da == d ? finish[a] : free[da] + transfer);
      }
      finish[b] = start + positions_[b].latency;
      free[d] = finish[b];
      makespan = std::max(makespan, finish[b]);
      for (auto [c, transfer] : deps.out[b])
        if (--deps.indegree[c] == 0) heap.push(c);
    }
    return done == alive ? makespan : kInf;
  }

  // Algorithm 2. Returns the number of candidate schedules evaluated.
  int64_t parallelize(int window) {
    int64_t evaluations = 0;
    double current = evaluate();
    for (UnitId v : p_.order) {
      const size_t at = position_of_[index(v)];
      if (positions_[at].units.size() > 1) continue;  // already grouped
      const auto& list = order_[positions_[at].device];
      const size_t i = size_t(std::find(list.begin(), list.end(), at) - list.begin());
      double best = kInf;
      size_t best_size = 0;
      for (size_t size = 2; size <= size_t(window) && i + size <= list.size(); ++size) {
        const size_t added = list[i + size - 1];
        if (positions_[added].units.size() > 1) break;  // windows cover single units only
        bool independent = true;
        for (size_t k = i; k + 1 < i + size && independent; ++k)
          independent = !p_.dependent(positions_[list[k]].units[0], positions_[added].units[0]);
        if (!independent) break;  // every larger window holds the same dependent pair
        DeviceStages trial = *this;
        trial.merge(positions_[at].device, i, size);
        const double l = trial.evaluate();
        ++evaluations;
        if (l < best - kEps) {
          best = l;
          best_size = size;
        }
      }
      if (best_size > 0 && best < current - kEps) {
        merge(positions_[at].device, i, best_size);
        current = best;
      }
    }
    return evaluations;
  }

  // The stage-form schedule: positions in a topological order by ready time.
  Schedule to_schedule(const std::vector<int>& device) const {
    std::vector<size_t> order;
    evaluate(&order);
    Schedule s;
    s.num_devices = p_.devices;
    for (size_t i : order) {
      Stage stage{.device = positions_[i].device};
      for (UnitId u : positions_[i].units) stage.groups.push_back({u});
      s.stages.push_back(std::move(stage));
    }
    for (const ir::UnitEdge& e : p_.g.edges())
      if (device[index(e.from)] != device[index(e.to)])
        s.transfers.push_back({e.from, e.to, device[index(e.from)], device[index(e.to)]});
    return s;
  }

 private:
  // Positions [i, i + size) of `device`'s order become one.
  void merge(int device, size_t i, size_t size) {
    auto& list = order_[device];
    Position& into = positions_[list[i]];
    for (size_t k = i + 1; k < i + size; ++k) {
      Position& other = positions_[list[k]];
      for (UnitId u : other.units) {
        into.units.push_back(u);
        position_of_[index(u)] = list[i];
      }
      other.alive = false;
      other.units.clear();
    }
    std::vector<std::vector<UnitId>> groups;
    for (UnitId u : into.units) groups.push_back({u});
    into.latency = p_.cost.stage_latency(groups).count();
    list.erase(list.begin() + std::ptrdiff_t(i + 1), list.begin() + std::ptrdiff_t(i + size));
  }

  const Problem& p_;
  std::vector<Position> positions_;
  std::vector<std::vector<size_t>> order_;  // per device: positions in order
  std::vector<size_t> position_of_;         // per unit
};

}  // namespace

std::vector<Micros> hios_priority(const ir::UnitGraph& graph, const cost::CostModel& cost) {
  const size_t n = graph.num_units();
  std::vector<Micros> priority(n, Micros{0});
  for (size_t u = n; u-- > 0;) {
    Micros tail{0};
    for (uint32_t e : graph.out_edges(UnitId(u))) {
      const ir::UnitEdge& edge = graph.edges()[e];
      tail = std::max(tail, cost.transfer_latency(edge) + priority[index(edge.to)]);
    }
    priority[u] = cost.unit_latency(UnitId(u)) + tail;
  }
  return priority;
}

HiosScheduler::HiosScheduler(HiosMapping mapping, bool intra_device, const ScheduleOptions& options)
    : mapping_(mapping), intra_device_(intra_device), options_(options) {
  BRAID_CHECK(options.num_devices >= 1, ErrorCode::kInvalidArgument,
              "hios: num_devices must be >= 1, got ", options.num_devices);
  BRAID_CHECK(options.window >= 1, ErrorCode::kInvalidArgument,
              "hios: the window must be >= 1, got ", options.window);
}

std::string_view HiosScheduler::name() const {
  if (mapping_ == HiosMapping::kLongestPath) return intra_device_ ? "hios-lp" : "hios-lp-inter";
  return intra_device_ ? "hios-mr" : "hios-mr-inter";
}

Schedule HiosScheduler::schedule(const ir::UnitGraph& graph, const cost::CostModel& cost,
                                 SearchStats* stats) const {
  BRAID_CHECK(&cost.units() == &graph || cost.units().num_units() == graph.num_units(),
              ErrorCode::kInvalidArgument, "hios: the cost model is bound to another graph");
  Schedule s;
  if (graph.num_units() == 0) {
    s.algorithm = std::string(name());
    return s;
  }
  const Problem p = make_problem(graph, cost, options_.num_devices);
  int64_t evaluations = 0;
  const std::vector<int> device = mapping_ == HiosMapping::kLongestPath
                                      ? map_longest_path(p, evaluations)
                                      : map_recording(p, evaluations);
  DeviceStages placement(p, device);
  // The window never exceeds the streams a device may use.
  const int window =
      options_.max_streams > 0 ? std::min(options_.window, options_.max_streams) : options_.window;
  if (intra_device_ && window >= 2) evaluations += placement.parallelize(window);
  s = placement.to_schedule(device);
  s.algorithm = std::string(name());
  s.model = graph.name();
  s.predicted_latency = Micros(placement.evaluate());
  s.stats["evaluations"] = evaluations;
  s.stats["devices_used"] = [&] {
    std::vector<bool> used(options_.num_devices, false);
    for (int d : device) used[d] = true;
    return std::count(used.begin(), used.end(), true);
  }();
  if (stats != nullptr) stats->transitions = evaluations;
  return s;
}

std::unique_ptr<Scheduler> make_hios_lp_scheduler(const ScheduleOptions& options) {
  return std::make_unique<HiosScheduler>(HiosMapping::kLongestPath, true, options);
}
std::unique_ptr<Scheduler> make_hios_lp_inter_scheduler(const ScheduleOptions& options) {
  return std::make_unique<HiosScheduler>(HiosMapping::kLongestPath, false, options);
}
std::unique_ptr<Scheduler> make_hios_mr_scheduler(const ScheduleOptions& options) {
  return std::make_unique<HiosScheduler>(HiosMapping::kMappingRecording, true, options);
}
std::unique_ptr<Scheduler> make_hios_mr_inter_scheduler(const ScheduleOptions& options) {
  return std::make_unique<HiosScheduler>(HiosMapping::kMappingRecording, false, options);
}

}  // namespace braid::sched
