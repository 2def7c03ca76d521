// What the runtime asks a backend to run: a step. A step advances some in-flight instances
// (tasks being inferred, top.txt §IV) by a range of their model's blocks, all at once on the
// device, and ends when the last of them is done. The device runs one step at a time; a step
// is either
//  - combined: one block of each instance, in combined blocks (TOP's, §IV-§VI-A: each the
//    disjoint union of its sub-blocks scheduled as one graph by CombinedScheduler), the combined
//    blocks side by side — the combined computation graph applied to the current progress
//    (Algorithm 1, line 29), or
//  - independent: each instance's blocks with its model's own plan, on its own streams, side
//    by side with no common schedule (how instances of IOS-scheduled models contend, Fig. 2).
//
//   Step s{.kind = StepKind::kCombined, .pieces = {{a, 0, 3, 4}, {b, 1, 0, 1}}, .schedules =
//   {&cs}}; StepResult r = backend.run(s);   // r.device_time, r.utilization
#pragma once

#include <compare>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/ids.h"
#include "base/units.h"

namespace braid::runtime {

struct CombinedSchedule;

// Block `block` of model `model` (indices into a ModelSet and its model's blocks).
struct SubBlock {
  uint32_t model = 0;
  uint32_t block = 0;
  auto operator<=>(const SubBlock&) const = default;
};

// A unit of one model.
struct UnitRef {
  uint32_t model = 0;
  UnitId unit{};
  auto operator<=>(const UnitRef&) const = default;
};

// The runtime's handle on an in-flight instance (its slot; stable while it is in flight).
using InstanceId = uint32_t;

struct Piece {
  InstanceId instance = 0;
  uint32_t model = 0;
  uint32_t first_block = 0, last_block = 0;  // blocks [first_block, last_block) of the model
};

enum class StepKind : uint8_t { kCombined, kIndependent };

struct Step {
  StepKind kind = StepKind::kIndependent;
  std::vector<Piece> pieces;
  // kCombined: the combined blocks that run, in issue order (the highest Ratio_in first), owned
  // by the CombinedScheduler's stage dict. Pieces are grouped by combined block in this order:
  // schedules[i] covers the next schedules[i]->sub_blocks.size() pieces, one block each, its
  // sub-blocks exactly. Different combined blocks of a step run side by side, each on its own
  // streams with its own stage barriers.
  std::vector<const CombinedSchedule*> schedules;
};

struct StepResult {
  Micros device_time{0};  // from the step's dispatch to its last kernel's end
  // Mean busy fraction of the device over the step: achieved occupancy on a simulated GPU
  // (resident warps / capacity, IOS Fig. 8's metric), busy cores / cores on the CPU.
  double utilization = 0;
};

// Whether a combined step's schedules cover its pieces as Step::schedules says: each schedule
// (none null) the next pieces, its sub-blocks exactly, and no piece left over.
bool schedules_cover_pieces(const Step& step);

// "ind 0:3-4 1:0-1" / "comb 0:3 1:0 | 2:5": the step's kind and (model:blocks) in piece order,
// combined blocks separated by '|'.
std::string describe(const Step& step);

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  // Virtual time: run() returns at once with the step's simulated time and the runtime's
  // clock advances by it. Otherwise the wall clock is the runtime's clock.
  virtual bool virtual_time() const = 0;
  // An instance of `model` starts (task `task`, with its inputs; empty in virtual time)...
  virtual void begin_instance(InstanceId instance, uint32_t model,
                              std::span<const std::vector<float>> inputs) = 0;
  // ...runs steps...
  virtual StepResult run(const Step& step) = 0;
  // ...and ends: its outputs (graph outputs in order; empty in virtual time). The slot may be
  // reused by a later begin_instance.
  virtual std::vector<std::vector<float>> end_instance(InstanceId instance) = 0;
};

}  // namespace braid::runtime
