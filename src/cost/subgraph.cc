#include "cost/subgraph.h"

#include <algorithm>
#include <optional>

#include "base/error.h"

namespace braid::cost {

ExtractedStage extract(const ir::Graph& g, const ir::UnitGraph& units,
                       std::span<const UnitId> stage, const ir::Weights* weights) {
  BRAID_CHECK(units.graph() == &g, ErrorCode::kInvalidArgument,
              "extract: the unit graph is not the fusion of graph '", g.name(), "'");
  BRAID_CHECK(!stage.empty(), ErrorCode::kInvalidArgument, "extract: the stage has no units");
  std::vector<bool> unit_taken(units.num_units(), false);
  std::vector<bool> in_stage(g.num_nodes(), false);
  std::vector<NodeId> ops;
  for (UnitId u : stage) {
    BRAID_CHECK(index(u) < units.num_units(), ErrorCode::kInvalidArgument, "extract: unit #",
                index(u), " out of range (", units.num_units(), " units)");
    BRAID_CHECK(!unit_taken[index(u)], ErrorCode::kInvalidArgument, "extract: unit '",
                units.unit(u).name, "' listed twice");
    unit_taken[index(u)] = true;
    for (NodeId n : units.unit(u).ops) {
      in_stage[index(n)] = true;
      ops.push_back(n);
    }
  }
  // Node ids are a topological order of the original graph, hence of any subset.
  std::sort(ops.begin(), ops.end());

  ExtractedStage out;
  ir::GraphBuilder b(g.name() + ".stage");
  std::vector<std::optional<ValueId>> sub_value(g.num_values());
  std::vector<NodeId> sub_node(g.num_nodes());
  for (NodeId n : ops) {
    const ir::Node& node = g.node(n);
    std::vector<ValueId> inputs;
    for (ValueId v : node.inputs) {
      if (!sub_value[index(v)]) {
        const ir::Value& value = g.value(v);
        if (value.kind == ir::ValueKind::kParameter) {
          sub_value[index(v)] = b.add_parameter(value.name, value.type, value.init);
        } else {
          BRAID_ASSERT(value.kind == ir::ValueKind::kInput || !in_stage[index(value.producer)],
                       "value '", value.name, "' read before the stage produced it");
          sub_value[index(v)] = b.add_input(value.name, value.type);
          out.inputs.push_back(v);
        }
      }
      inputs.push_back(*sub_value[index(v)]);
    }
    std::vector<std::string> names;
    for (ValueId v : node.outputs) names.push_back(g.value(v).name);
    sub_node[index(n)] = b.add_node(node.kind, node.attrs, std::move(inputs), node.name,
                                    node.outputs.size(), std::move(names));
    const ir::Node& copy = b.node(sub_node[index(n)]);
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      BRAID_ASSERT(b.type(copy.outputs[i]) == g.value(node.outputs[i]).type,
                   "shape inference disagrees on '", g.value(node.outputs[i]).name, "'");
      sub_value[index(node.outputs[i])] = copy.outputs[i];
    }
  }
  for (NodeId n : ops)
    for (ValueId v : g.node(n).outputs) {
      const auto& consumers = g.value(v).consumers;
      bool read_outside = std::any_of(consumers.begin(), consumers.end(),
                                      [&](NodeId c) { return !in_stage[index(c)]; });
      if (g.is_output(v) || read_outside) {
        b.mark_output(*sub_value[index(v)]);
        out.outputs.push_back(v);
      }
    }
  // Every unit becomes an explicit hint, so fusion cannot regroup the ops differently even
  // where the cut changes what the fusion rules see (a producer whose reader left the graph).
  for (UnitId u : stage) {
    std::vector<NodeId> hint;
    for (NodeId n : units.unit(u).ops) hint.push_back(sub_node[index(n)]);
    b.add_unit_hint(std::move(hint));
  }
  auto graph = std::make_shared<const ir::Graph>(std::move(b).build());

  if (weights) {
    auto sub_weights = std::make_shared<ir::Weights>(graph->num_values());
    for (ValueId v : graph->parameters()) {
      ValueId original = *g.find_value(graph->value(v).name);
      if (weights->has(original)) {
        auto data = weights->data(original);
        sub_weights->set(v, std::vector<float>(data.begin(), data.end()));
      }
    }
    out.weights = std::move(sub_weights);
  }
  out.units = ir::fuse(graph);
  for (UnitId u : stage)
    out.unit_of.push_back(out.units.unit_of(sub_node[index(units.unit(u).ops.front())]));
  BRAID_ASSERT(out.units.num_units() == stage.size(), "extract: fusion of the stage gave ",
               out.units.num_units(), " units for ", stage.size());
  out.graph = std::move(graph);
  return out;
}

}  // namespace braid::cost
