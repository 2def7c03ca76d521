// sim::SimCostModel — the cost model `--cost sim:DEVICE`: every latency a scheduler asks for is
// simulated on the device (engine.h), the way IOS measures stages on the GPU, at microseconds
// of CPU time per stage instead of a profiling run.
//
//   sim::SimCostModel v100(units, sim::load_device("v100"));
//   Micros t = v100.stage_latency(groups);   // groups on streams 0..n-1, inside a CUDA Graph
//
// A stage's latency runs from its first launch on an idle device to its last kernel's end:
// launch costs, occupancy, SM and bandwidth sharing and L2 contention included. A stage is
// priced the way the plan will run (SimCostOptions): inside the plan's CUDA Graph by default,
// as braid runs GPU plans, where the host's one graph launch belongs to the whole plan and
// not to any stage; or eagerly, every kernel a host launch (`--eager`). Answers are cached
// per stage (in memory). Transfers between devices take the device's first link.
#pragma once

#include <mutex>
#include <string>
#include <unordered_map>

#include "cost/cost_model.h"
#include "sim/program.h"

namespace braid::sim {

struct SimCostOptions {
  // The plan is captured once and replayed (braid's default on GPUs); false: the host launches
  // every kernel (`--eager`), and a stage pays each launch's host cost.
  bool graph_replay = true;
};

class SimCostModel final : public cost::CostModel {
 public:
  // Named "sim:NAME", or "sim:NAME eager" when pricing eager launches.
  SimCostModel(const ir::UnitGraph& units, DeviceSpec spec, SimCostOptions options = {});

  std::string_view name() const override { return name_; }
  Micros unit_latency(UnitId unit) const override;
  Micros stage_latency(std::span<const std::vector<UnitId>> groups) const override;
  Micros stage_lower_bound(std::span<const std::vector<UnitId>> groups) const override;
  Micros merge_latency(std::span<const UnitId> units) const override;
  Micros transfer_latency(const ir::UnitEdge& edge) const override;
  // From the unit's kernels on the device (kernels.h): the first kernel's block resources and
  // grid, the largest occupancy of any of its kernels alone, and the bound from the kernels'
  // FLOPs over their compulsory DRAM bytes against the device's sustained FP32 FLOP/s over its
  // bandwidth. nullopt for a unit that launches nothing (a view).
  std::optional<cost::UnitResources> unit_resources(UnitId unit) const override;

  const DeviceSpec& spec() const { return spec_; }

 private:
  Micros simulate_stage(std::span<const std::vector<UnitId>> groups) const;
  // The program's makespan, less the graph launch the whole plan pays once.
  Micros run_time(const Program& p) const;

  DeviceSpec spec_;
  std::string name_;
  bool graph_replay_;
  UnitKernels kernels_;
  std::vector<Micros> unit_latency_;
  mutable std::mutex mutex_;
  mutable std::unordered_map<std::string, Micros> stages_;
};

}  // namespace braid::sim
