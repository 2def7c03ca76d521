#include "cost/hios_stage_cost.h"

#include <algorithm>

#include "base/error.h"

namespace braid::cost {

HiosStageCostModel::HiosStageCostModel(const ir::UnitGraph& units, double alpha, StartRule start)
    : CostModel(units), alpha_(alpha), start_(start) {
  BRAID_CHECK(alpha >= 0 && alpha <= 1, ErrorCode::kInvalidArgument,
              "hios cost: alpha must be in [0, 1], got ", alpha);
  for (const ir::Unit& u : units.units())
    BRAID_CHECK(u.latency.has_value(), ErrorCode::kInvalidArgument, "--cost hios: unit '", u.name,
                "' of '", units.name(), "' has no latency (a weighted DAG is needed)");
}

Micros HiosStageCostModel::unit_latency(UnitId unit) const {
  count_unit_query();
  return *units().unit(unit).latency;
}

Micros HiosStageCostModel::stage_latency(std::span<const std::vector<UnitId>> groups) const {
  count_stage_query();
  double serialized = 0, busy = 0, slowest = 0;
  for (const auto& group : groups) {
    double latency = 0, weighted = 0;
    for (UnitId u : group) {
      const ir::Unit& unit = units().unit(u);
      latency += unit.latency->count();
      weighted += unit.latency->count() * unit.utilization.value_or(1.0);
    }
    serialized += latency;
    busy += weighted;  // lat_g * util_g, util_g = weighted / lat_g
    slowest = std::max(slowest, latency);
  }
  return Micros(alpha_ * serialized + (1 - alpha_) * std::max(busy, slowest));
}

Micros HiosStageCostModel::transfer_latency(const ir::UnitEdge& edge) const {
  return edge.transfer.value_or(Micros{0});
}

StartRule parse_hios_start(std::string_view value) {
  if (value == "paper") return StartRule::kProducerFinish;
  if (value == "code") return StartRule::kProducerDevice;
  BRAID_THROW(ErrorCode::kInvalidArgument, "hios: unknown start rule '", value,
              "' (known: paper, code)");
}

std::string_view hios_start_name(StartRule rule) {
  return rule == StartRule::kProducerDevice ? "code" : "paper";
}

}  // namespace braid::cost
