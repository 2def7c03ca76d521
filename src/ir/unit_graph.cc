#include "ir/unit_graph.h"

#include <algorithm>
#include <map>
#include <queue>
#include <set>

#include "base/error.h"
#include "ir/op_cost.h"

namespace braid::ir {

std::string_view to_string(UnitClass c) {
  switch (c) {
    case UnitClass::kUnknown:
      return "unknown";
    case UnitClass::kCompute:
      return "compute";
    case UnitClass::kMemory:
      return "memory";
  }
  return "?";
}

std::optional<uint32_t> UnitGraph::find_edge(UnitId from, UnitId to) const {
  for (uint32_t e : out_edges_[index(from)])
    if (edges_[e].to == to) return e;
  return std::nullopt;
}

size_t UnitGraph::num_edge_references() const {
  size_t n = 0;
  for (const UnitEdge& e : edges_) n += e.references;
  return n;
}

std::optional<UnitId> UnitGraph::find_unit(std::string_view name) const {
  for (size_t i = 0; i < units_.size(); ++i)
    if (units_[i].name == name) return make_id<UnitId>(i);
  return std::nullopt;
}

std::string UnitGraph::signature(UnitId u) const {
  if (!graph_) return "Task";
  std::string s;
  for (NodeId n : unit(u).ops)
    s += (s.empty() ? "" : "-") + std::string(to_string(graph_->node(n).kind));
  return s;
}

void UnitGraph::index_edges() {
  std::sort(edges_.begin(), edges_.end(), [](const UnitEdge& a, const UnitEdge& b) {
    return std::pair(a.from, a.to) < std::pair(b.from, b.to);
  });
  const size_t n = units_.size();
  preds_.assign(n, {});
  succs_.assign(n, {});
  in_edges_.assign(n, {});
  out_edges_.assign(n, {});
  for (uint32_t i = 0; i < edges_.size(); ++i) {
    const UnitEdge& e = edges_[i];
    BRAID_ASSERT(e.from < e.to, "unit ids must be topological");
    succs_[index(e.from)].push_back(e.to);
    preds_[index(e.to)].push_back(e.from);
    out_edges_[index(e.from)].push_back(i);
    in_edges_[index(e.to)].push_back(i);
  }
  for (auto& p : preds_) std::sort(p.begin(), p.end());
}

namespace {

// Kahn's algorithm with ties broken by `priority` (smaller first). Returns the order, or the
// first unit left on a cycle.
std::vector<size_t> topological_sort(size_t n, const std::vector<std::pair<size_t, size_t>>& edges,
                                     const std::vector<size_t>& priority,
                                     std::optional<size_t>* on_cycle) {
  std::vector<std::vector<size_t>> succ(n);
  std::vector<size_t> indegree(n, 0);
  for (auto [a, b] : edges) {
    succ[a].push_back(b);
    ++indegree[b];
  }
  using Item = std::pair<size_t, size_t>;  // (priority, unit)
  std::priority_queue<Item, std::vector<Item>, std::greater<>> ready;
  for (size_t i = 0; i < n; ++i)
    if (indegree[i] == 0) ready.push({priority[i], i});
  std::vector<size_t> order;
  while (!ready.empty()) {
    size_t u = ready.top().second;
    ready.pop();
    order.push_back(u);
    for (size_t v : succ[u])
      if (--indegree[v] == 0) ready.push({priority[v], v});
  }
  if (order.size() != n) {
    for (size_t i = 0; i < n; ++i)
      if (indegree[i] > 0) {
        *on_cycle = i;
        break;
      }
  }
  return order;
}

}  // namespace

UnitGraph UnitGraph::from_dag(std::string name, std::vector<Unit> units,
                              std::vector<UnitEdge> edges) {
  const size_t n = units.size();
  BRAID_CHECK(n > 0, ErrorCode::kInvalidModel, "DAG '", name, "' has no nodes");
  std::vector<std::pair<size_t, size_t>> pairs;
  std::set<std::pair<size_t, size_t>> seen;
  for (const UnitEdge& e : edges) {
    size_t a = index(e.from), b = index(e.to);
    BRAID_CHECK(a < n && b < n, ErrorCode::kInvalidModel, "DAG '", name,
                "': edge names a missing node");
    BRAID_CHECK(a != b, ErrorCode::kInvalidModel, "DAG '", name, "': self-loop on node '",
                units[a].name, "'");
    BRAID_CHECK(seen.insert({a, b}).second, ErrorCode::kInvalidModel, "DAG '", name, "': edge '",
                units[a].name, "' -> '", units[b].name, "' appears twice");
    pairs.push_back({a, b});
  }
  std::vector<size_t> priority(n);
  for (size_t i = 0; i < n; ++i) priority[i] = i;
  std::optional<size_t> cycle;
  std::vector<size_t> order = topological_sort(n, pairs, priority, &cycle);
  BRAID_CHECK(!cycle, ErrorCode::kInvalidModel, "DAG '", name, "' has a cycle through node '",
              cycle ? units[*cycle].name : "", "'");
  std::vector<size_t> new_id(n);
  for (size_t i = 0; i < n; ++i) new_id[order[i]] = i;
  UnitGraph g;
  g.name_ = std::move(name);
  g.units_.resize(n);
  for (size_t i = 0; i < n; ++i) g.units_[new_id[i]] = std::move(units[i]);
  for (UnitEdge& e : edges) {
    e.from = make_id<UnitId>(new_id[index(e.from)]);
    e.to = make_id<UnitId>(new_id[index(e.to)]);
  }
  g.edges_ = std::move(edges);
  g.index_edges();
  return g;
}

namespace {

bool is_parameter(const Graph& g, ValueId v) {
  return g.value(v).kind == ValueKind::kParameter;
}

// Ops that may join the unit of their producer (the chain rule of fuse()).
bool joins_producer(const Graph& g, const Node& n) {
  if (is_activation(n.kind) || n.kind == OpKind::BatchNormalization || is_view(n.kind) ||
      n.kind == OpKind::Transpose || n.kind == OpKind::Erf || n.kind == OpKind::Sqrt ||
      n.kind == OpKind::Cast || n.kind == OpKind::Not)
    return true;
  if (n.kind == OpKind::Add || n.kind == OpKind::Mul || n.kind == OpKind::Sub ||
      n.kind == OpKind::Div || n.kind == OpKind::Pow) {
    int activations = 0;
    for (ValueId v : n.inputs) activations += is_parameter(g, v) ? 0 : 1;
    return activations == 1;
  }
  return false;
}

// The op's single non-parameter input, if it has exactly one.
std::optional<ValueId> sole_activation_input(const Graph& g, const Node& n) {
  std::optional<ValueId> found;
  for (ValueId v : n.inputs) {
    if (is_parameter(g, v)) continue;
    if (found) return std::nullopt;
    found = v;
  }
  return found;
}

// True when every output of `producer` is read once, by `consumer`, and is no graph output.
bool feeds_only(const Graph& g, NodeId producer, NodeId consumer) {
  for (ValueId out : g.node(producer).outputs) {
    const Value& v = g.value(out);
    if (g.is_output(out) || v.consumers.size() != 1 || v.consumers[0] != consumer) return false;
  }
  return true;
}

// The input of a residual Add (two activations of the output's shape, as ResNet's and
// MobileNet V2's blocks add a convolution's result to the block's input) whose producer may take
// the Add into its unit: the last op of a convolution's unit, read by the Add alone. The CPU
// executor then adds the other input inside the convolution (a oneDNN binary post-op) instead
// of reading both back from memory, as ONNX Runtime's Conv+Add fusion does. The first input
// is preferred: torchvision writes `out += identity`.
std::optional<ValueId> residual_input(const Graph& g, NodeId id, const std::vector<size_t>& group,
                                      const std::vector<std::vector<NodeId>>& groups,
                                      const std::vector<bool>& hinted) {
  const Node& add = g.node(id);
  if (add.kind != OpKind::Add || add.inputs.size() != 2) return std::nullopt;
  const ir::Shape& out = g.value(add.outputs[0]).type.shape;
  for (ValueId v : add.inputs)
    if (g.value(v).kind != ValueKind::kActivation || g.value(v).type.shape != out ||
        g.value(v).type.dtype != g.value(add.outputs[0]).type.dtype)
      return std::nullopt;
  if (add.inputs[0] == add.inputs[1]) return std::nullopt;
  for (ValueId v : add.inputs) {
    const NodeId p = g.value(v).producer;
    if (hinted[index(p)] || !feeds_only(g, p, id)) continue;
    const std::vector<NodeId>& unit = groups[group[index(p)]];
    if (unit.back() != p) continue;
    // One residual per unit: the convolution heads it (only a Pad may precede it).
    const bool conv_head =
        std::any_of(unit.begin(), unit.begin() + std::min<size_t>(2, unit.size()),
                    [&](NodeId n) { return g.node(n).kind == OpKind::Conv; });
    const bool has_residual = std::any_of(unit.begin(), unit.end(), [&](NodeId n) {
      return g.node(n).kind == OpKind::Add && g.node(n).inputs.size() == 2 &&
             !is_parameter(g, g.node(n).inputs[0]) && !is_parameter(g, g.node(n).inputs[1]);
    });
    if (conv_head && !has_residual) return v;
  }
  return std::nullopt;
}

}  // namespace

const Node* silu_mul(const Graph& g, const Node& sigmoid) {
  if (sigmoid.kind != OpKind::Sigmoid || sigmoid.inputs.size() != 1) return nullptr;
  const ValueId x = sigmoid.inputs[0], s = sigmoid.outputs[0];
  const Value& xv = g.value(x);
  const Value& sv = g.value(s);
  if (xv.kind != ValueKind::kActivation || g.is_output(x) || g.is_output(s) ||
      xv.consumers.size() != 2 || sv.consumers.size() != 1)
    return nullptr;
  const Node& mul = g.node(sv.consumers[0]);
  if (mul.kind != OpKind::Mul || mul.inputs.size() != 2) return nullptr;
  const bool pair =
      (mul.inputs[0] == x && mul.inputs[1] == s) || (mul.inputs[0] == s && mul.inputs[1] == x);
  const bool reads = xv.consumers[0] == sv.consumers[0] || xv.consumers[1] == sv.consumers[0];
  return pair && reads ? &mul : nullptr;
}

UnitGraph fuse(std::shared_ptr<const Graph> graph, const FuseOptions& options) {
  BRAID_ASSERT(graph != nullptr);
  const Graph& g = *graph;
  check_op_costs(g);  // every FLOP and byte sum below and in the callers then fits int64
  const size_t num_nodes = g.num_nodes();
  constexpr size_t kNone = SIZE_MAX;
  std::vector<size_t> group(num_nodes, kNone);  // provisional unit index per op
  std::vector<std::vector<NodeId>> groups;
  std::vector<bool> hinted(num_nodes, false);

  for (const auto& hint : g.unit_hints()) {
    for (NodeId n : hint) {
      group[index(n)] = groups.size();
      hinted[index(n)] = true;
    }
    groups.push_back(hint);
  }

  for (size_t i = 0; i < num_nodes; ++i) {
    if (group[i] != kNone) continue;
    const NodeId id = make_id<NodeId>(i);
    const Node& n = g.node(id);
    if (joins_producer(g, n)) {
      std::optional<ValueId> in = sole_activation_input(g, n);
      if (in && g.value(*in).kind == ValueKind::kActivation) {
        NodeId p = g.value(*in).producer;
        if (!hinted[index(p)] && feeds_only(g, p, id)) {
          group[i] = group[index(p)];
          groups[group[i]].push_back(id);
          continue;
        }
      }
    }
    // A SiLU joins the unit whose last op makes its x: the Sigmoid, then its Mul.
    if (options.silu && silu_mul(g, n) != nullptr) {
      const NodeId p = g.value(n.inputs[0]).producer;
      if (!hinted[index(p)] && groups[group[index(p)]].back() == p) {
        group[i] = group[index(p)];
        groups[group[i]].push_back(id);
        continue;
      }
    }
    if (options.silu && n.kind == OpKind::Mul && n.inputs.size() == 2) {
      const auto joins = [&](ValueId s) {
        if (g.value(s).kind != ValueKind::kActivation) return false;
        const NodeId sig = g.value(s).producer;
        return silu_mul(g, g.node(sig)) == &n && group[index(sig)] != kNone &&
               groups[group[index(sig)]].back() == sig &&
               group[index(g.value(g.node(sig).inputs[0]).producer)] == group[index(sig)];
      };
      const ValueId s = joins(n.inputs[0]) ? n.inputs[0] : n.inputs[1];
      if (joins(s)) {
        group[i] = group[index(g.value(s).producer)];
        groups[group[i]].push_back(id);
        continue;
      }
    }
    if (std::optional<ValueId> in =
            options.residual ? residual_input(g, id, group, groups, hinted) : std::nullopt) {
      group[i] = group[index(g.value(*in).producer)];
      groups[group[i]].push_back(id);
      continue;
    }
    group[i] = groups.size();
    groups.push_back({id});
    const bool takes_pad =
        n.kind == OpKind::Conv || n.kind == OpKind::MaxPool || n.kind == OpKind::AveragePool;
    if (!takes_pad) continue;
    ValueId src = n.inputs.front();
    if (g.value(src).kind != ValueKind::kActivation) continue;
    NodeId p = g.value(src).producer;
    size_t pg = group[index(p)];
    if (g.node(p).kind == OpKind::Pad && !hinted[index(p)] && groups[pg].size() == 1 &&
        feeds_only(g, p, id)) {
      groups[pg].clear();
      group[index(p)] = group[i];
      groups[group[i]].insert(groups[group[i]].begin(), p);
    }
  }

  // Drop emptied groups, then build the edges of the provisional groups.
  std::vector<size_t> compact(groups.size(), kNone);
  std::vector<std::vector<NodeId>> live;
  for (size_t k = 0; k < groups.size(); ++k) {
    if (groups[k].empty()) continue;
    compact[k] = live.size();
    std::sort(groups[k].begin(), groups[k].end());
    live.push_back(std::move(groups[k]));
  }
  for (size_t& gi : group) gi = compact[gi];

  const size_t num_units = live.size();
  std::map<std::pair<size_t, size_t>, UnitEdge> edge_map;
  std::map<std::pair<size_t, size_t>, std::set<uint32_t>> edge_values;
  for (size_t i = 0; i < num_nodes; ++i) {
    for (ValueId v : g.node(make_id<NodeId>(i)).inputs) {
      if (g.value(v).kind != ValueKind::kActivation) continue;
      size_t from = group[index(g.value(v).producer)], to = group[i];
      if (from == to) continue;
      auto [it, inserted] = edge_map.try_emplace({from, to});
      UnitEdge& e = it->second;
      e.references = inserted ? 1 : e.references + 1;
      if (edge_values[{from, to}].insert(static_cast<uint32_t>(index(v))).second)
        e.bytes += g.value(v).type.bytes();
    }
  }
  std::vector<std::pair<size_t, size_t>> pairs;
  for (const auto& [key, e] : edge_map) pairs.push_back(key);
  std::vector<size_t> priority(num_units);
  for (size_t k = 0; k < num_units; ++k) priority[k] = index(live[k].front());
  std::optional<size_t> cycle;
  std::vector<size_t> order = topological_sort(num_units, pairs, priority, &cycle);
  BRAID_CHECK(!cycle, ErrorCode::kInvalidModel, "graph '", g.name(),
              "': the unit hints make a cycle through op '",
              cycle ? g.node(live[*cycle].front()).name : "", "'");
  std::vector<size_t> new_id(num_units);
  for (size_t k = 0; k < num_units; ++k) new_id[order[k]] = k;

  UnitGraph ug;
  ug.name_ = g.name();
  ug.graph_ = graph;
  ug.units_.resize(num_units);
  ug.unit_of_node_.resize(num_nodes);
  for (size_t k = 0; k < num_units; ++k) {
    Unit& u = ug.units_[new_id[k]];
    u.ops = std::move(live[k]);
    // Named after its first op that is not an input prologue (Sum/Pad), e.g. the Conv.
    NodeId anchor = u.ops.front();
    for (NodeId op : u.ops)
      if (g.node(op).kind != OpKind::Sum && g.node(op).kind != OpKind::Pad) {
        anchor = op;
        break;
      }
    u.name = g.node(anchor).name;
    for (NodeId op : u.ops) {
      ug.unit_of_node_[index(op)] = make_id<UnitId>(new_id[k]);
      u.flops += op_flops(g, op);
      u.bytes += op_bytes(g, op);
    }
  }
  for (auto& [key, e] : edge_map) {
    e.from = make_id<UnitId>(new_id[key.first]);
    e.to = make_id<UnitId>(new_id[key.second]);
    ug.edges_.push_back(e);
  }
  ug.index_edges();
  return ug;
}

}  // namespace braid::ir
