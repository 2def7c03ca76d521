// cost::RooflineCostModel — latencies from arithmetic and memory traffic alone (ir/op_cost.h):
// each op takes max(FLOPs / peak, bytes / bandwidth) plus a launch overhead. No device, no
// measurement: the cost model for scheduling a real model when no profile is wanted (tests,
// quick looks), and the default of Scheduler::schedule(units) for graphs without latencies.
//
//   cost::RooflineCostModel roofline(units, {.peak_gflops = 100, .bandwidth_gbps = 20});
//
// Like DagCostModel, a stage is the ideal one: the slowest group, the groups not slowing each
// other down. Units without ops (weighted DAGs) take their given latency, or only the overhead.
#pragma once

#include <algorithm>
#include <memory>

#include "cost/cost_model.h"

namespace braid::cost {

struct RooflineOptions {
  double peak_gflops = 100;    // one core of an AVX-512 Xeon runs ~150 GFLOP/s on big convs
  double bandwidth_gbps = 20;  // one core's share of DRAM bandwidth
  Micros launch_overhead{2};   // per op (kernel launch, dispatch)
  Micros stage_overhead{0};    // per stage (the barrier between stages)
  // Moldable units: the cores a unit may take (0: any number, max_threads() 1); k cores divide
  // its FLOPs and its bandwidth-bound time by k (each core brings its share of bandwidth), not
  // its overhead.
  int cores = 0;
};

class RooflineCostModel final : public CostModel {
 public:
  explicit RooflineCostModel(const ir::UnitGraph& units, RooflineOptions options = {});

  std::string_view name() const override { return "roofline"; }
  Micros unit_latency(UnitId unit) const override;
  Micros stage_latency(std::span<const std::vector<UnitId>> groups) const override;
  int max_threads() const override { return std::max(1, options_.cores); }
  Micros unit_latency_at(UnitId unit, int threads) const override;

 private:
  RooflineOptions options_;
  std::vector<Micros> unit_latency_;   // computed once
  std::vector<Micros> unit_overhead_;  // the part more cores do not shorten
};

// The cost model a graph carries with it: its own latencies (DagCostModel) when every unit has
// one, else the roofline. What Scheduler::schedule(units) uses.
std::unique_ptr<CostModel> default_cost_model(const ir::UnitGraph& units);

}  // namespace braid::cost
