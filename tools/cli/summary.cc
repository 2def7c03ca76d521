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
    auto tensors = [&](auto ids) {
      nlohmann::json arr = nlohmann::json::array();
      for (ValueId v : ids)
        arr.push_back({{"name", g->value(v).name}, {"shape", g->value(v).type.shape}});
      return arr;
    };
    j["inputs"] = tensors(g->inputs());
    j["outputs"] = tensors(g->outputs());
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
