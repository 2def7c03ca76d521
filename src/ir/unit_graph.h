// ir::UnitGraph — the DAG that schedulers see. A unit is a group of fused operators launched
// as one (IOS: "Conv-Relu", "Relu-SepConv"; Concat on its own); an edge joins two units when
// one reads a tensor the other produces. A UnitGraph is also what an abstract weighted DAG
// (.dag.json: the papers' examples, HIOS's simulations) becomes, with no operators behind it.
//
//   auto graph = std::make_shared<const Graph>(zoo::build("inception_v3", {}));
//   UnitGraph units = fuse(graph);           // 119 units, 153 edge references
//   for (UnitId u : units.topo_order()) ... units.successors(u) ...
//
// Unit ids are a topological order: every edge goes from a lower to a higher id.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/ids.h"
#include "base/units.h"
#include "ir/graph.h"

namespace braid::ir {

// Opara's operator classes (opara.txt §3.3): memory-bound units interleave with compute-bound ones.
enum class UnitClass : uint8_t { kUnknown, kCompute, kMemory };
std::string_view to_string(UnitClass);

// Per-launch GPU resource demand (Opara): threads, registers and shared memory per block.
struct UnitResources {
  int64_t threads = 0;
  int64_t registers = 0;
  int64_t shared_memory = 0;
  bool operator==(const UnitResources&) const = default;
};

struct Unit {
  std::string name;
  std::vector<NodeId> ops;        // topological order; empty for a weighted-DAG unit
  std::optional<Micros> latency;  // given by a weighted DAG
  // The fraction of a device the unit keeps busy alone (HIOS's simulator draws it from
  // [0.6, 1]); what its stage model charges when units share a device. Weighted DAGs only.
  std::optional<double> utilization;
  UnitClass unit_class = UnitClass::kUnknown;
  std::optional<UnitResources> resources;
  int64_t flops = 0;
  int64_t bytes = 0;
};

struct UnitEdge {
  UnitId from{};
  UnitId to{};
  uint32_t references = 1;         // input references behind this (from, to) pair
  Bytes bytes = 0;                 // distinct tensors carried
  std::optional<Micros> transfer;  // given by a weighted DAG (HIOS transfer time)
};

// How fuse() groups ops into units (see there).
struct FuseOptions {
  // False: a residual Add is a unit of its own, as before 2026-11-28 (schedules written then,
  // devices/measured/h100/schedules, list ResNet-50 in 72 units where it now has 56).
  bool residual = true;
  // False: a SiLU's Sigmoid and Mul are units of their own, as before 2026-11-28.
  bool silu = true;
};

class UnitGraph {
 public:
  // A weighted DAG: units and edges in any order (edges name unit indices of `units`).
  // Renumbers units topologically (ties by input order); throws on a cycle or bad edge.
  static UnitGraph from_dag(std::string name, std::vector<Unit> units, std::vector<UnitEdge> edges);

  const std::string& name() const { return name_; }
  // The model's name as users know it (loader: the file name, --name), which exporters rarely
  // put in the graph.
  void set_name(std::string name) { name_ = std::move(name); }
  size_t num_units() const { return units_.size(); }
  const Unit& unit(UnitId u) const { return units_[index(u)]; }
  std::span<const Unit> units() const { return units_; }
  // Distinct (from, to) pairs, sorted by (from, to).
  std::span<const UnitEdge> edges() const { return edges_; }
  std::span<const UnitId> predecessors(UnitId u) const { return preds_[index(u)]; }
  std::span<const UnitId> successors(UnitId u) const { return succs_[index(u)]; }
  // Edges into / out of u, as indices into edges().
  std::span<const uint32_t> in_edges(UnitId u) const { return in_edges_[index(u)]; }
  std::span<const uint32_t> out_edges(UnitId u) const { return out_edges_[index(u)]; }
  std::optional<uint32_t> find_edge(UnitId from, UnitId to) const;

  size_t num_edge_references() const;  // IOS/LIOS "edges": input references between units
  size_t num_distinct_edges() const { return edges_.size(); }

  // The operator graph behind the units; null for a weighted DAG.
  const Graph* graph() const { return graph_.get(); }
  std::shared_ptr<const Graph> graph_ptr() const { return graph_; }
  UnitId unit_of(NodeId n) const { return unit_of_node_.at(index(n)); }
  std::optional<UnitId> find_unit(std::string_view name) const;

  // "Conv", "Relu-Conv-Conv", ...: the op kinds of a unit joined by '-'.
  std::string signature(UnitId u) const;

 private:
  friend UnitGraph fuse(std::shared_ptr<const Graph> graph, const FuseOptions& options);
  void index_edges();

  std::string name_;
  std::shared_ptr<const Graph> graph_;
  std::vector<Unit> units_;
  std::vector<UnitEdge> edges_;
  std::vector<std::vector<UnitId>> preds_, succs_;
  std::vector<std::vector<uint32_t>> in_edges_, out_edges_;
  std::vector<UnitId> unit_of_node_;
};

// The fusion pass: groups the ops of `graph` into schedule units. Explicit unit hints of the
// graph (IOS compounds) come first; every other op follows these rules, in graph order:
//  - an activation, BatchNormalization, view op (Reshape/Flatten/Transpose/Identity) or a
//    bias/scale Add/Mul (one activation input, the rest parameters) joins the unit of its
//    producer when that producer's outputs feed nothing else and are not graph outputs
//    (Conv-BN-Relu, MatMul-Add, GlobalAveragePool-Flatten);
//  - a residual Add (two activations of its output's shape) joins the unit of a convolution
//    whose last op produces one of them for it alone, the first input preferred
//    (Conv-BatchNormalization-Add-Relu: ResNet's bottleneck; one residual per unit);
//  - a SiLU, Sigmoid(x) and the Mul of x by it, joins the unit whose last op makes x when
//    nothing else reads x (Conv-Sigmoid-Mul: EfficientNet, YOLO);
//  - a Pad whose only consumer is a Conv or pooling op joins that consumer (Pad-AveragePool);
//  - anything else starts a unit of its own.
// Throws Error(kUnsupported) when the graph's FLOP or byte counts overflow int64.
UnitGraph fuse(std::shared_ptr<const Graph> graph, const FuseOptions& options = {});

// The Mul of a SiLU, x * Sigmoid(x) (EfficientNet, YOLO), or null: `sigmoid` reads x, and x is
// read by it and by that Mul alone, as the Sigmoid's output is by the Mul; neither is a graph
// output. fuse() groups by it; a backend that computes the pair as one swish asks it too.
const Node* silu_mul(const Graph& g, const Node& sigmoid);

}  // namespace braid::ir
