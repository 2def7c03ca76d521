#include "summary.h"

#include "ir/analysis.h"

namespace braid::cli {

nlohmann::json summarize(const models::LoadedModel& m) {
  const ir::UnitGraph& u = m.units;
  nlohmann::json j;
  j["name"] = u.name();
  j["source"] = std::string(models::to_string(m.source));
  j["units"] = u.num_units();
  j["edges"] = u.num_edge_references();
  j["distinct_edges"] = u.num_distinct_edges();
  auto blocks = ir::block_partition(u);
  j["blocks"] = blocks.size();
  std::vector<size_t> sizes;
  for (const ir::Block& b : blocks) sizes.push_back(b.units.size());
  j["block_sizes"] = sizes;
  j["width"] = ir::width(u);
  int64_t flops = 0;
  for (const ir::Unit& unit : u.units()) flops += unit.flops;
  j["flops"] = flops;
  if (const ir::Graph* g = u.graph()) {
    j["ops"] = g->num_nodes();
    j["params"] = g->num_parameter_elements();
    // dtype: the model's own (float16 for an FP16 model's input that braid reads as float32).
    auto tensors = [&](auto ids, const std::vector<models::ElementType>& declared) {
      nlohmann::json arr = nlohmann::json::array();
      for (size_t i = 0; i < ids.size(); ++i) {
        const ir::Value& v = g->value(ids[i]);
        const models::ElementType type =
            i < declared.size() ? declared[i] : models::element_type_of(v.type.dtype);
        arr.push_back({{"name", v.name},
                       {"shape", v.type.shape},
                       {"dtype", std::string(models::to_string(type))}});
      }
      return arr;
    };
    j["inputs"] = tensors(g->inputs(), m.declared.inputs);
    j["outputs"] = tensors(g->outputs(), m.declared.outputs);
    // The float type of the model's weights and values, and the one braid computes in: float32,
    // an FP16 or BF16 ONNX model upcast (issue 29).
    j["precision"] = {{"model", std::string(models::to_string(m.declared.floats))},
                      {"computed", "float32"}};
  } else {
    j["ops"] = 0;
    j["params"] = 0;
    std::vector<double> cost;
    double total = 0;
    for (const ir::Unit& unit : u.units()) {
      cost.push_back(unit.latency ? unit.latency->count() / 1000.0 : 0.0);
      total += cost.back();
    }
    j["sequential_ms"] = total;
    j["critical_path_ms"] = ir::critical_path(u, cost).length;
  }
  return j;
}

}  // namespace braid::cli
