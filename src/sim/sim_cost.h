// sim::SimCostModel — the cost model `--cost sim:DEVICE`: every latency a scheduler asks for is
// simulated on the device (engine.h), the way IOS measures stages on the GPU, at microseconds
// of CPU time per stage instead of a profiling run.
//
//   sim::SimCostModel v100(units, sim::load_device("v100"));
//   Micros t = v100.stage_latency(groups);   // groups launched on streams 0..n-1, eager
//
// A stage's latency runs from the first launch on an idle device to the last kernel's end:
// host launch costs, occupancy, SM and bandwidth sharing and L2 contention included. Answers
// are cached per stage (in memory). Transfers between devices take the device's first link.
#pragma once

#include <mutex>
#include <string>
#include <unordered_map>

#include "cost/cost_model.h"
#include "sim/program.h"

namespace braid::sim {

class SimCostModel final : public cost::CostModel {
 public:
  SimCostModel(const ir::UnitGraph& units, DeviceSpec spec, bool graph_replay = false);

  std::string_view name() const override { return name_; }
  Micros unit_latency(UnitId unit) const override;
  Micros stage_latency(std::span<const std::vector<UnitId>> groups) const override;
  Micros stage_lower_bound(std::span<const std::vector<UnitId>> groups) const override;
  Micros merge_latency(std::span<const UnitId> units) const override;
  Micros transfer_latency(const ir::UnitEdge& edge) const override;

  const DeviceSpec& spec() const { return spec_; }

 private:
  Micros simulate_stage(std::span<const std::vector<UnitId>> groups) const;

  DeviceSpec spec_;
  std::string name_;
  bool graph_replay_;
  UnitKernels kernels_;
  std::vector<Micros> unit_latency_;
  mutable std::mutex mutex_;
  mutable std::unordered_map<std::string, Micros> stages_;
};

}  // namespace braid::sim
