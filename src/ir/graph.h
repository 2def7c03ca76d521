// ir::Graph — braid's operator graph: typed ops, tensors with static shapes, producer/consumer
// links, graph inputs/outputs. Parameters (weights) are values whose data lives apart from the
// structure, in ir::Weights, so one Graph serves many in-flight requests.
//
//   GraphBuilder b("tiny");
//   ValueId x = b.add_input("x", {DType::kFloat32, {1, 3, 32, 32}});
//   ValueId w = b.add_parameter("w", {DType::kFloat32, {8, 3, 3, 3}}, ParamInit::normal(0.1f));
//   ValueId y = b.add_op(OpKind::Conv, ConvAttrs{.kernel = {3, 3}}, {x, w}, "conv");
//   b.mark_output(y);
//   Graph g = std::move(b).build();   // throws braid::Error on a bad graph
//
// A Graph is immutable once built; nodes are stored in a topological order (every input is
// defined before its consumer), so index order is a valid execution order.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/ids.h"
#include "ir/op.h"
#include "ir/tensor_type.h"

namespace braid::ir {

enum class ValueKind : uint8_t { kInput, kParameter, kActivation };

// How a parameter's data is made when no file supplies it (zoo models): data lives in Weights.
struct ParamInit {
  enum class Kind : uint8_t { kExternal, kNormal, kUniform, kConstant };
  Kind kind = Kind::kExternal;
  float a = 0.0f;             // normal: stddev; uniform: low
  float b = 0.0f;             // uniform: high
  std::vector<float> values;  // constant: the values, or one value broadcast

  static ParamInit external() { return {}; }
  static ParamInit normal(float stddev) { return {Kind::kNormal, stddev, 0.0f, {}}; }
  static ParamInit uniform(float low, float high) { return {Kind::kUniform, low, high, {}}; }
  static ParamInit constant(std::vector<float> v) { return {Kind::kConstant, 0, 0, std::move(v)}; }
};

struct Value {
  std::string name;
  TensorType type;
  ValueKind kind = ValueKind::kActivation;
  NodeId producer{};              // valid for activations only
  std::vector<NodeId> consumers;  // one entry per input reference, in node order
  ParamInit init;                 // parameters only
};

struct Node {
  std::string name;
  OpKind kind{};
  OpAttrs attrs;
  std::vector<ValueId> inputs;
  std::vector<ValueId> outputs;
};

// The input of a two-input node that is not `one` (the other operand of an Add a fusion folds
// into the op producing `one`); nullopt unless the node has two distinct inputs and `one` is one.
inline std::optional<ValueId> other_input(const Node& n, ValueId one) {
  if (n.inputs.size() != 2 || n.inputs[0] == n.inputs[1]) return std::nullopt;
  if (n.inputs[0] == one) return n.inputs[1];
  if (n.inputs[1] == one) return n.inputs[0];
  return std::nullopt;
}

class Graph {
 public:
  const std::string& name() const { return name_; }
  size_t num_nodes() const { return nodes_.size(); }
  size_t num_values() const { return values_.size(); }
  std::span<const Node> nodes() const { return nodes_; }
  const Node& node(NodeId id) const { return nodes_[index(id)]; }
  const Value& value(ValueId id) const { return values_[index(id)]; }
  std::span<const Value> values() const { return values_; }
  std::span<const ValueId> inputs() const { return inputs_; }
  std::span<const ValueId> outputs() const { return outputs_; }
  std::span<const ValueId> parameters() const { return parameters_; }

  // Explicit schedule units written by a model author (IOS's "Sequential" compounds such as
  // Relu-SepConv); the fusion pass honours them before applying its own rules.
  const std::vector<std::vector<NodeId>>& unit_hints() const { return unit_hints_; }

  bool is_output(ValueId id) const;
  std::optional<ValueId> find_value(std::string_view name) const;
  std::optional<NodeId> find_node(std::string_view name) const;

  // Total number of parameter elements.
  int64_t num_parameter_elements() const;

 private:
  friend class GraphBuilder;
  std::string name_;
  std::vector<Node> nodes_;
  std::vector<Value> values_;
  std::vector<ValueId> inputs_;
  std::vector<ValueId> outputs_;
  std::vector<ValueId> parameters_;
  std::vector<std::vector<NodeId>> unit_hints_;
  std::unordered_map<std::string, ValueId> value_by_name_;
  std::unordered_map<std::string, NodeId> node_by_name_;
};

// Builds a Graph op by op, validating each op as it is added (arity, attribute ranges, shapes),
// in the manner of XNNPACK's xnn_define_*. Errors throw braid::Error naming the node.
class GraphBuilder {
 public:
  explicit GraphBuilder(std::string graph_name);

  ValueId add_input(std::string name, TensorType type);
  ValueId add_parameter(std::string name, TensorType type, ParamInit init = {});
  // Adds a node; its outputs' types come from shape inference. Returns the node id.
  NodeId add_node(OpKind kind, OpAttrs attrs, std::vector<ValueId> inputs, std::string name = {},
                  size_t num_outputs = 1, std::vector<std::string> output_names = {});
  // add_node for single-output ops; returns the output value.
  ValueId add_op(OpKind kind, OpAttrs attrs, std::vector<ValueId> inputs, std::string name = {});
  void mark_output(ValueId value);
  void add_unit_hint(std::vector<NodeId> ops);

  const Value& value(ValueId id) const { return graph_.values_[index(id)]; }
  const Node& node(NodeId id) const { return graph_.nodes_[index(id)]; }
  const TensorType& type(ValueId id) const { return value(id).type; }
  ValueId output(NodeId id, size_t i = 0) const { return node(id).outputs.at(i); }
  size_t num_nodes() const { return graph_.nodes_.size(); }

  Graph build() &&;

 private:
  ValueId new_value(std::string name, TensorType type, ValueKind kind);
  std::string unique_name(std::string base, bool for_node);
  Graph graph_;
  size_t counter_ = 0;
};

}  // namespace braid::ir
