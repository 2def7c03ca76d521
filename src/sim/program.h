// Building simulator programs (engine.h) from what braid schedules: a lowered ExecutionPlan
// (the sim executor) or one IOS stage (the sim cost model).
//
//   sim::UnitKernels kernels(units, v100);                 // every unit's kernels, once
//   sim::PlanProgram p = sim::plan_program(units, plan, kernels_by_device);
//   sim::Result r = sim::simulate(p.program, devices);
//   sim::Program s = sim::stage_program(kernels, {{a}, {b, c}});
#pragma once

#include <span>
#include <vector>

#include "ir/unit_graph.h"
#include "sched/lower.h"
#include "sim/engine.h"

namespace braid::sim {

// The kernels of every unit of a graph on one device, computed once.
class UnitKernels {
 public:
  UnitKernels(const ir::UnitGraph& units, const DeviceSpec& spec);
  const ir::UnitGraph& units() const { return *units_; }
  const DeviceSpec& spec() const { return *spec_; }
  std::span<const Kernel> of(UnitId u) const { return kernels_[index(u)]; }

 private:
  const ir::UnitGraph* units_;
  const DeviceSpec* spec_;
  std::vector<std::vector<Kernel>> kernels_;
};

struct PlanProgram {
  Program program;
  std::vector<std::vector<uint32_t>> unit_kernels;  // per unit: its kernels in the program
  std::vector<size_t> stream_lane;                  // per program stream: the plan lane
};

// One host thread per device issues the plan's steps in sched::issue_order (lanes interleaved
// by the plan's launch order). A wait on an event recorded on another device becomes that wait
// plus a copy of the edge's tensors.
// `devices[d]` holds the kernels for the plan's device d. Only the steps of blocks
// [first_block, last_block) are issued (TOP's block pipelining); waits for events recorded in
// earlier blocks are already satisfied and dropped.
PlanProgram plan_program(const ir::UnitGraph& units, const sched::ExecutionPlan& plan,
                         std::span<const UnitKernels* const> devices, size_t first_block = 0,
                         size_t last_block = SIZE_MAX);

// A whole inference of `plan` on one `device`: its kernels, plan_program and the engine in one
// call (what the validation and calibration studies ask for each row).
Result simulate_plan(const ir::UnitGraph& units, const sched::ExecutionPlan& plan,
                     const DeviceSpec& device, EngineOptions options = {});

// One IOS stage on one device: group i on stream i, issued group by group. Merge stages run
// merged_kernels on stream 0.
Program stage_program(const UnitKernels& kernels, std::span<const std::vector<UnitId>> groups);
Program merge_program(const UnitKernels& kernels, std::span<const UnitId> merge);

}  // namespace braid::sim
