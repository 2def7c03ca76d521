// cost::DagCostModel — the latencies written in a weighted DAG (.dag.json: the papers' worked
// examples, HIOS's random graphs), with no device behind them.
//
//   models::LoadedModel m = models::load_model("tests/golden/diamond.dag.json");
//   cost::DagCostModel costs(m.units, {.stage_overhead = Micros{5}});
//   costs.stage_latency(groups);   // max over groups of the sum of their units, plus 5 us
//
// A stage's latency is the slowest group: the groups run concurrently and do not slow each
// other down, which is the ideal that measured cost models (cpu_profiler.h) correct.
#pragma once

#include "cost/cost_model.h"

namespace braid::cost {

struct DagCostOptions {
  // Added once per stage: the barrier between consecutive stages (IOS's stage synchronization).
  Micros stage_overhead{0};
};

class DagCostModel final : public CostModel {
 public:
  // Throws braid::Error(kInvalidArgument) naming the first unit without a latency.
  explicit DagCostModel(const ir::UnitGraph& units, DagCostOptions options = {});

  std::string_view name() const override { return "dag"; }
  Micros unit_latency(UnitId unit) const override;
  Micros stage_latency(std::span<const std::vector<UnitId>> groups) const override;
  // The edge's transfer time when the DAG gives one, else 0.
  Micros transfer_latency(const ir::UnitEdge& edge) const override;

 private:
  DagCostOptions options_;
};

}  // namespace braid::cost
