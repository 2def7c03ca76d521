#include "cost/dag_cost.h"

#include <algorithm>

#include "base/error.h"

namespace braid::cost {

DagCostModel::DagCostModel(const ir::UnitGraph& graph, DagCostOptions options)
    : CostModel(graph), options_(options) {
  for (const ir::Unit& u : graph.units())
    BRAID_CHECK(u.latency.has_value(), ErrorCode::kInvalidArgument, "unit '", u.name, "' of '",
                graph.name(), "' has no latency: the dag cost model needs a weighted DAG");
}

Micros DagCostModel::unit_latency(UnitId unit) const {
  count_unit_query();
  BRAID_CHECK(index(unit) < units().num_units(), ErrorCode::kInvalidArgument, "unit #", index(unit),
              " out of range");
  return *units().unit(unit).latency;
}

Micros DagCostModel::stage_latency(std::span<const std::vector<UnitId>> groups) const {
  BRAID_CHECK(!groups.empty(), ErrorCode::kInvalidArgument, "a stage needs at least one group");
  count_stage_query();
  Micros slowest{0};
  for (const auto& group : groups) {
    BRAID_CHECK(!group.empty(), ErrorCode::kInvalidArgument, "a stage's group is empty");
    Micros sum{0};
    for (UnitId u : group) {
      BRAID_CHECK(index(u) < units().num_units(), ErrorCode::kInvalidArgument, "unit #", index(u),
                  " out of range");
      sum += *units().unit(u).latency;
    }
    slowest = std::max(slowest, sum);
  }
  return slowest + options_.stage_overhead;
}

Micros DagCostModel::transfer_latency(const ir::UnitEdge& edge) const {
  return edge.transfer.value_or(Micros{0});
}

}  // namespace braid::cost
