#include "models/random_dag.h"

#include <algorithm>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/error.h"

namespace braid::models {

namespace {

// Portable draws: the std distributions differ between standard libraries, and a seed must
// give the same graph everywhere.
class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}
  // Uniform integer in [lo, hi].
  int64_t uniform_int(int64_t lo, int64_t hi) {
    BRAID_ASSERT(lo <= hi);
    const uint64_t range = static_cast<uint64_t>(hi - lo) + 1;
    const uint64_t limit = UINT64_MAX - UINT64_MAX % range;  // reject the biased tail
    uint64_t x;
    do x = engine_();
    while (x >= limit);
    return lo + static_cast<int64_t>(x % range);
  }
  // Uniform real in [lo, hi).
  double uniform_real(double lo, double hi) {
    double unit = static_cast<double>(engine_() >> 11) * 0x1.0p-53;
    return lo + (hi - lo) * unit;
  }

 private:
  std::mt19937_64 engine_;
};

// Node ids per layer; ids grow layer by layer, so id order is topological.
using Layers = std::vector<std::vector<size_t>>;

Layers fill_layers(const RandomDagOptions& o, int min_width, int max_width, Rng& rng) {
  const int middle = o.layers - 2;
  std::vector<int> width(o.layers, 0);
  width.front() = width.back() = 1;
  int remaining = o.ops - 2;
  // HIOS: each pass adds randint(max(min - len, 0), min(min, max - len)) nodes to each middle
  // layer, capped by what is left; the first pass therefore places exactly `min_width`.
  while (remaining > 0) {
    for (int l = 1; l <= middle && remaining > 0; ++l) {
      int lo = std::max(min_width - width[l], 0);
      int hi = std::min(min_width, max_width - width[l]);
      if (hi < lo) continue;  // the layer is full
      int add = std::min(static_cast<int>(rng.uniform_int(lo, hi)), remaining);
      width[l] += add;
      remaining -= add;
    }
  }
  Layers layers(o.layers);
  size_t next = 0;
  for (int l = 0; l < o.layers; ++l)
    for (int k = 0; k < width[l]; ++k) layers[l].push_back(next++);
  return layers;
}

// Pass 1: every node of layer l gets a successor in l+1, every node of l+1 a predecessor in l.
std::set<std::pair<size_t, size_t>> link_adjacent_layers(const Layers& layers, Rng& rng) {
  std::set<std::pair<size_t, size_t>> edges;
  auto pick = [&](const std::vector<size_t>& layer) {
    return layer[rng.uniform_int(0, static_cast<int64_t>(layer.size()) - 1)];
  };
  for (size_t l = 0; l + 1 < layers.size(); ++l) {
    for (size_t u : layers[l]) edges.insert({u, pick(layers[l + 1])});
    for (size_t v : layers[l + 1]) edges.insert({pick(layers[l]), v});
  }
  return edges;
}

// The most edges a layering can hold: pass 2 only starts edges in the middle layers, so the
// source keeps its pass-1 edges to layer 1.
int64_t edge_capacity(const Layers& layers) {
  int64_t capacity = static_cast<int64_t>(layers[1].size());
  int64_t later = 0;
  for (size_t l = layers.size() - 1; l >= 1; --l) {
    if (l + 1 < layers.size()) capacity += static_cast<int64_t>(layers[l].size()) * later;
    later += static_cast<int64_t>(layers[l].size());
  }
  return capacity;
}

// Pass 2: random forward edges from a middle layer to a later one until `target` edges.
void add_distant_edges(const Layers& layers, int64_t target, int64_t capacity, Rng& rng,
                       std::set<std::pair<size_t, size_t>>& edges) {
  const int64_t last = static_cast<int64_t>(layers.size()) - 1;
  auto pick = [&](int64_t l) {
    const auto& layer = layers[l];
    return layer[rng.uniform_int(0, static_cast<int64_t>(layer.size()) - 1)];
  };
  // HIOS's rejection sampling, while free pairs are plentiful.
  while (static_cast<int64_t>(edges.size()) < target) {
    int64_t free_pairs = capacity - static_cast<int64_t>(edges.size());
    if (free_pairs < 2 * (target - static_cast<int64_t>(edges.size()))) break;
    int64_t a = rng.uniform_int(1, last - 1);
    int64_t b = rng.uniform_int(a + 1, last);
    edges.insert({pick(a), pick(b)});
  }
  if (static_cast<int64_t>(edges.size()) == target) return;
  // Nearly full: enumerate the free pairs and take a random subset (Fisher-Yates), which
  // always terminates.
  std::vector<std::pair<size_t, size_t>> free;
  for (int64_t a = 1; a < last; ++a)
    for (int64_t b = a + 1; b <= last; ++b)
      for (size_t u : layers[a])
        for (size_t v : layers[b])
          if (!edges.contains({u, v})) free.push_back({u, v});
  size_t need = static_cast<size_t>(target) - edges.size();
  BRAID_ASSERT(need <= free.size());
  for (size_t i = 0; i < need; ++i) {
    size_t j =
        i + static_cast<size_t>(rng.uniform_int(0, static_cast<int64_t>(free.size() - i) - 1));
    std::swap(free[i], free[j]);
    edges.insert(free[i]);
  }
}

}  // namespace

ir::UnitGraph random_dag(const RandomDagOptions& o) {
  auto invalid = [](auto&&... args) {
    BRAID_THROW(ErrorCode::kInvalidArgument, "random_dag: ", args...);
  };
  if (o.layers < 3) invalid("layers must be >= 3 (source, middle, sink), got ", o.layers);
  if (o.ops < o.layers)
    invalid("ops (", o.ops, ") must be >= layers (", o.layers, "): every layer needs a node");
  if (o.edges < o.ops - 1)
    invalid("edges (", o.edges, ") must be >= ops - 1 (", o.ops - 1, ") to connect every node");
  if (static_cast<int64_t>(o.edges) > static_cast<int64_t>(o.ops) * (o.ops - 1) / 2)
    invalid("edges (", o.edges, ") exceeds the ", static_cast<int64_t>(o.ops) * (o.ops - 1) / 2,
            " pairs of a DAG with ", o.ops, " nodes");
  if (!(o.min_latency_ms >= 0 && o.max_latency_ms >= o.min_latency_ms))
    invalid("need 0 <= min_latency_ms <= max_latency_ms, got ", o.min_latency_ms, " and ",
            o.max_latency_ms);
  if (!(o.transfer_ratio >= 0) || !(o.min_transfer_ms >= 0))
    invalid("transfer_ratio and min_transfer_ms must be >= 0");
  const int middle = o.layers - 2;
  const int max_width = 10 * o.layers;  // HIOS: ceil(10 L)
  if (static_cast<int64_t>(middle) * max_width < o.ops - 2)
    invalid("ops (", o.ops, ") exceeds ", middle, " middle layers x ", max_width,
            " nodes per layer");
  // HIOS uses ceil(L / 2) nodes per middle layer at least and skips graphs too small for it;
  // we shrink the minimum instead, so small test graphs exist.
  const int min_width = std::min((o.layers + 1) / 2, (o.ops - 2) / middle);

  Rng rng(o.seed);
  constexpr int kAttempts = 100;
  Layers layers;
  std::set<std::pair<size_t, size_t>> edges;
  int64_t fewest_pass1 = INT64_MAX, largest_capacity = 0;
  bool placed = false;
  for (int attempt = 0; attempt < kAttempts && !placed; ++attempt) {
    layers = fill_layers(o, min_width, max_width, rng);
    edges = link_adjacent_layers(layers, rng);
    const int64_t capacity = edge_capacity(layers);
    fewest_pass1 = std::min(fewest_pass1, static_cast<int64_t>(edges.size()));
    largest_capacity = std::max(largest_capacity, capacity);
    if (static_cast<int64_t>(edges.size()) > o.edges || capacity < o.edges) continue;
    add_distant_edges(layers, o.edges, capacity, rng, edges);
    placed = true;
  }
  if (!placed) {
    if (fewest_pass1 > o.edges)
      invalid("linking adjacent layers needs at least ", fewest_pass1, " edges in ", kAttempts,
              " draws, more than the ", o.edges, " asked for (ask for more edges or fewer layers)");
    invalid("the layerings drawn hold at most ", largest_capacity,
            " forward edges, fewer than the ", o.edges,
            " asked for (ask for fewer edges or more layers)");
  }

  std::vector<ir::Unit> units(o.ops);
  // Utilizations from a stream of their own, so that adding them changed no graph.
  Rng utilization_rng(o.seed ^ 0x9e3779b97f4a7c15ull);
  for (int i = 0; i < o.ops; ++i) {
    units[i].name = "v" + std::to_string(i);
    units[i].latency = Millis(rng.uniform_real(o.min_latency_ms, o.max_latency_ms));
    units[i].utilization = utilization_rng.uniform_real(o.min_utilization, o.max_utilization);
  }
  // hios.txt §V-A: "the transfer time between GPUs for the output data of an operator is a
  // maximum of 0.1 milliseconds and p of the execution time of this operator": the operator
  // whose output moves is the producer u, and "a maximum of" reads as max(0.1 ms, p x t(u)).
  // (HIOS's simulator code uses the destination's latency instead; we follow the paper.) A
  // min() would pin almost every transfer to 0.1 ms and make §V-G's sweep of p meaningless.
  std::vector<ir::UnitEdge> unit_edges;
  unit_edges.reserve(edges.size());
  for (auto [u, v] : edges) {
    ir::UnitEdge e{make_id<UnitId>(u), make_id<UnitId>(v)};
    double producer_ms = Millis(*units[u].latency).count();
    e.transfer = Millis(std::max(o.min_transfer_ms, o.transfer_ratio * producer_ms));
    unit_edges.push_back(e);
  }
  std::string name = "random_dag_" + std::to_string(o.ops) + "_" + std::to_string(o.edges) + "_" +
                     std::to_string(o.layers) + "_s" + std::to_string(o.seed);
  return ir::UnitGraph::from_dag(std::move(name), std::move(units), std::move(unit_edges));
}

ir::UnitGraph random_dag_near(RandomDagOptions options, int target_edges) {
  const int fewest = options.ops - 1, most = options.ops * (options.ops - 1) / 2;
  for (int k = 0; target_edges + k <= most || target_edges - k >= fewest; ++k)
    for (int edges : {target_edges + k, target_edges - k}) {
      if (edges < fewest || edges > most) continue;
      try {
        options.edges = edges;
        return random_dag(options);
      } catch (const Error&) {  // too few or too many edges for the layering
      }
    }
  BRAID_THROW(ErrorCode::kInvalidArgument, "random_dag: no edge count near ", target_edges,
              " fits ", options.ops, " ops in ", options.layers, " layers");
}

}  // namespace braid::models
