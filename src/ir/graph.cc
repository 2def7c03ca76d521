#include "ir/graph.h"

#include <algorithm>
#include <unordered_set>

#include "base/error.h"
#include "ir/shape_inference.h"

namespace braid::ir {

bool Graph::is_output(ValueId id) const {
  return std::find(outputs_.begin(), outputs_.end(), id) != outputs_.end();
}

std::optional<ValueId> Graph::find_value(std::string_view name) const {
  auto it = value_by_name_.find(std::string(name));
  if (it == value_by_name_.end()) return std::nullopt;
  return it->second;
}

std::optional<NodeId> Graph::find_node(std::string_view name) const {
  auto it = node_by_name_.find(std::string(name));
  if (it == node_by_name_.end()) return std::nullopt;
  return it->second;
}

int64_t Graph::num_parameter_elements() const {
  int64_t n = 0;
  for (ValueId p : parameters_) n += value(p).type.elements();
  return n;
}

GraphBuilder::GraphBuilder(std::string graph_name) { graph_.name_ = std::move(graph_name); }

std::string GraphBuilder::unique_name(std::string base, bool for_node) {
  auto taken = [&](const std::string& n) {
    return for_node ? graph_.node_by_name_.count(n) > 0 : graph_.value_by_name_.count(n) > 0;
  };
  if (base.empty()) base = for_node ? "node" : "value";
  if (!taken(base)) return base;
  std::string candidate;
  do {
    candidate = base + "_" + std::to_string(++counter_);
  } while (taken(candidate));
  return candidate;
}

ValueId GraphBuilder::new_value(std::string name, TensorType type, ValueKind kind) {
  BRAID_CHECK(!name.empty(), ErrorCode::kInvalidModel, "a value needs a name");
  BRAID_CHECK(graph_.value_by_name_.count(name) == 0, ErrorCode::kInvalidModel,
              "value name '", name, "' is defined twice");
  int64_t bytes = size_of(type.dtype);
  for (int64_t d : type.shape) {
    BRAID_CHECK(d > 0, ErrorCode::kInvalidModel, "value '", name, "' has shape ",
                to_string(type.shape), " with a non-positive dim");
    // Every size braid computes from a shape (elements, bytes) then fits in int64.
    BRAID_CHECK(!__builtin_mul_overflow(bytes, d, &bytes), ErrorCode::kUnsupported, "value '",
                name, "' has shape ", to_string(type.shape),
                ", whose size in bytes does not fit in a 64-bit integer");
  }
  ValueId id = make_id<ValueId>(graph_.values_.size());
  Value v;
  v.name = name;
  v.type = std::move(type);
  v.kind = kind;
  graph_.values_.push_back(std::move(v));
  graph_.value_by_name_.emplace(std::move(name), id);
  return id;
}

ValueId GraphBuilder::add_input(std::string name, TensorType type) {
  ValueId id = new_value(std::move(name), std::move(type), ValueKind::kInput);
  graph_.inputs_.push_back(id);
  return id;
}

ValueId GraphBuilder::add_parameter(std::string name, TensorType type, ParamInit init) {
  ValueId id = new_value(std::move(name), std::move(type), ValueKind::kParameter);
  graph_.values_[index(id)].init = std::move(init);
  graph_.parameters_.push_back(id);
  return id;
}

NodeId GraphBuilder::add_node(OpKind kind, OpAttrs attrs, std::vector<ValueId> inputs,
                              std::string name, size_t num_outputs,
                              std::vector<std::string> output_names) {
  name = unique_name(name.empty() ? std::string(to_string(kind)) : std::move(name), true);
  std::vector<TensorType> in_types;
  for (ValueId v : inputs) {
    BRAID_CHECK(index(v) < graph_.values_.size(), ErrorCode::kInvalidModel, "node '", name,
                "' reads an undefined value #", index(v));
    in_types.push_back(type(v));
  }
  std::vector<TensorType> out_types = infer_output_types(kind, attrs, in_types, num_outputs, name);
  NodeId id = make_id<NodeId>(graph_.nodes_.size());
  Node n;
  n.name = name;
  n.kind = kind;
  n.attrs = std::move(attrs);
  n.inputs = std::move(inputs);
  for (size_t i = 0; i < out_types.size(); ++i) {
    std::string out_name = i < output_names.size() && !output_names[i].empty()
                               ? output_names[i]
                               : unique_name(out_types.size() == 1 ? name : name + ":" + std::to_string(i), false);
    ValueId out = new_value(std::move(out_name), out_types[i], ValueKind::kActivation);
    graph_.values_[index(out)].producer = id;
    n.outputs.push_back(out);
  }
  for (ValueId v : n.inputs) graph_.values_[index(v)].consumers.push_back(id);
  graph_.node_by_name_.emplace(name, id);
  graph_.nodes_.push_back(std::move(n));
  return id;
}

ValueId GraphBuilder::add_op(OpKind kind, OpAttrs attrs, std::vector<ValueId> inputs,
                             std::string name) {
  return output(add_node(kind, std::move(attrs), std::move(inputs), std::move(name)));
}

void GraphBuilder::mark_output(ValueId value) {
  BRAID_CHECK(index(value) < graph_.values_.size(), ErrorCode::kInvalidModel,
              "graph output #", index(value), " is undefined");
  BRAID_CHECK(!graph_.is_output(value), ErrorCode::kInvalidModel, "value '",
              this->value(value).name, "' is marked as a graph output twice");
  graph_.outputs_.push_back(value);
}

void GraphBuilder::add_unit_hint(std::vector<NodeId> ops) {
  BRAID_CHECK(!ops.empty(), ErrorCode::kInvalidModel, "empty unit hint");
  for (NodeId n : ops)
    BRAID_CHECK(index(n) < graph_.nodes_.size(), ErrorCode::kInvalidModel, "unit hint names node #",
                index(n), " which does not exist");
  std::sort(ops.begin(), ops.end());
  graph_.unit_hints_.push_back(std::move(ops));
}

Graph GraphBuilder::build() && {
  BRAID_CHECK(!graph_.outputs_.empty(), ErrorCode::kInvalidModel, "graph '", graph_.name_,
              "' has no outputs");
  std::unordered_set<uint32_t> hinted;
  for (const auto& hint : graph_.unit_hints_)
    for (NodeId n : hint)
      BRAID_CHECK(hinted.insert(static_cast<uint32_t>(n)).second, ErrorCode::kInvalidModel,
                  "node '", node(n).name, "' appears in two unit hints");
  return std::move(graph_);
}

}  // namespace braid::ir
