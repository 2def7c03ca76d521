#include "exec/ref/ref_executor.h"

#include "base/error.h"
#include "exec/ref/ref_kernels.h"

namespace braid::exec::ref {

std::vector<std::vector<float>> run_reference(const ir::Graph& graph, const ir::Weights& weights,
                                              std::span<const std::vector<float>> inputs) {
  BRAID_CHECK(inputs.size() == graph.inputs().size(), ErrorCode::kInvalidArgument, "graph '",
              graph.name(), "' has ", graph.inputs().size(), " inputs, got ", inputs.size());
  weights.check_complete(graph);

  // One buffer per value, in floats but sized for its dtype's bytes; parameters are read
  // straight from `weights`. int64 and bool inputs convert from the float values given.
  auto buffer_of = [](const ir::TensorType& t) {
    return std::vector<float>((t.bytes() + sizeof(float) - 1) / sizeof(float));
  };
  std::vector<std::vector<float>> values(graph.num_values());
  std::vector<const float*> pointers(graph.num_values(), nullptr);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ValueId id = graph.inputs()[i];
    const ir::Value& v = graph.value(id);
    BRAID_CHECK(static_cast<int64_t>(inputs[i].size()) == v.type.elements(),
                ErrorCode::kInvalidArgument, "input '", v.name, "' needs ", v.type.elements(),
                " values, got ", inputs[i].size());
    values[index(id)] = buffer_of(v.type);
    ir::store_floats(v.type.dtype, inputs[i],
                     reinterpret_cast<std::byte*>(values[index(id)].data()));
    pointers[index(id)] = values[index(id)].data();
  }
  for (ValueId p : graph.parameters()) pointers[index(p)] = weights.data(p).data();

  std::vector<const float*> in;
  std::vector<float*> out;
  for (size_t n = 0; n < graph.num_nodes(); ++n) {  // index order is a topological order
    const ir::Node& node = graph.nodes()[n];
    in.clear();
    out.clear();
    for (ValueId v : node.inputs) {
      BRAID_ASSERT(pointers[index(v)] != nullptr, "value '", graph.value(v).name, "' not ready");
      in.push_back(pointers[index(v)]);
    }
    for (ValueId v : node.outputs) {
      values[index(v)] = buffer_of(graph.value(v).type);
      out.push_back(values[index(v)].data());
      pointers[index(v)] = values[index(v)].data();
    }
    ref::run_op(graph, make_id<NodeId>(n), in, out);
  }

  std::vector<std::vector<float>> result;
  for (ValueId v : graph.outputs()) {
    const ir::TensorType& t = graph.value(v).type;
    std::vector<float>& r = result.emplace_back(t.elements());
    ir::load_floats(t.dtype, reinterpret_cast<const std::byte*>(pointers[index(v)]), r);
  }
  return result;
}

}  // namespace braid::exec::ref
