#include "cost/roofline.h"

#include <algorithm>

#include "base/error.h"
#include "cost/dag_cost.h"
#include "ir/op_cost.h"

namespace braid::cost {

RooflineCostModel::RooflineCostModel(const ir::UnitGraph& units, RooflineOptions options)
    : CostModel(units), options_(options) {
  BRAID_CHECK(options.peak_gflops > 0 && options.bandwidth_gbps > 0, ErrorCode::kInvalidArgument,
              "roofline peak and bandwidth must be positive");
  BRAID_CHECK(options.cores >= 0, ErrorCode::kInvalidArgument, "roofline cores must be >= 0, got ",
              options.cores);
  const ir::Graph* graph = units.graph();
  for (const ir::Unit& u : units.units()) {
    if (graph == nullptr || u.ops.empty()) {
      unit_latency_.push_back(u.latency.value_or(options.launch_overhead));
      unit_overhead_.push_back(unit_latency_.back());
      continue;
    }
    Micros total{0};
    for (NodeId op : u.ops) {
      // GFLOP/s = 1e3 FLOP/us; GB/s = 1e3 bytes/us.
      const double compute_us = ir::op_flops(*graph, op) / (options.peak_gflops * 1e3);
      const double memory_us = ir::op_bytes(*graph, op) / (options.bandwidth_gbps * 1e3);
      total += Micros{std::max(compute_us, memory_us)} + options.launch_overhead;
    }
    unit_latency_.push_back(total);
    unit_overhead_.push_back(options.launch_overhead * static_cast<double>(u.ops.size()));
  }
}

Micros RooflineCostModel::unit_latency_at(UnitId unit, int threads) const {
  const Micros whole = unit_latency(unit);
  BRAID_CHECK(threads >= 1 && (options_.cores == 0 || threads <= options_.cores),
              ErrorCode::kInvalidArgument, "unit #", index(unit), ": ", threads,
              " threads, the roofline has ", options_.cores, " cores");
  const Micros overhead = unit_overhead_[index(unit)];
  return overhead + (whole - overhead) / static_cast<double>(threads);
}

Micros RooflineCostModel::unit_latency(UnitId unit) const {
  count_unit_query();
  BRAID_CHECK(index(unit) < unit_latency_.size(), ErrorCode::kInvalidArgument, "unit #",
              index(unit), " out of range");
  return unit_latency_[index(unit)];
}

Micros RooflineCostModel::stage_latency(std::span<const std::vector<UnitId>> groups) const {
  BRAID_CHECK(!groups.empty(), ErrorCode::kInvalidArgument, "a stage needs at least one group");
  count_stage_query();
  Micros slowest{0};
  for (const auto& group : groups) {
    Micros sum{0};
    for (UnitId u : group) {
      BRAID_CHECK(index(u) < unit_latency_.size(), ErrorCode::kInvalidArgument, "unit #", index(u),
                  " out of range");
      sum += unit_latency_[index(u)];
    }
    slowest = std::max(slowest, sum);
  }
  return slowest + options_.stage_overhead;
}

std::unique_ptr<CostModel> default_cost_model(const ir::UnitGraph& units) {
  const bool weighted = std::all_of(units.units().begin(), units.units().end(),
                                    [](const ir::Unit& u) { return u.latency.has_value(); });
  if (weighted && units.num_units() > 0) return std::make_unique<DagCostModel>(units);
  return std::make_unique<RooflineCostModel>(units);
}

}  // namespace braid::cost
