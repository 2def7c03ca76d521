// Lowering: a validated Schedule -> per-lane step lists (ONNX Runtime's logic streams; the
// analogue of what a CUDA executor captures into a graph). Names at planning time, integers at
// run time: an ExecutionPlan holds only ids, so executors replay it with no lookups.
//
//   ExecutionPlan plan = lower(units, schedule);   // validates first (validate.h)
//   for (const PlanLane& lane : plan.lanes) for (const Step& s : lane.steps) ...
//
// Each lane is one in-order stream: Launch runs a unit, Record marks an event done, Wait blocks
// the lane until an event is done. Every event is recorded exactly once per run.
// Blocks (ir::block_partition) segment every lane, so an executor can run one block at a time
// (TOP's block pipelining): lane.block_begin[b] is the first step of block b.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "base/ids.h"
#include "ir/unit_graph.h"
#include "sched/schedule.h"

namespace braid::sched {

struct LaunchStep {
  UnitId unit{};
  int32_t merge =
      -1;  // index into ExecutionPlan::merges when the unit is part of an operator merge
};
struct RecordStep {
  uint32_t event = 0;
};
struct WaitStep {
  uint32_t event = 0;
};
using Step = std::variant<LaunchStep, RecordStep, WaitStep>;

struct PlanLane {
  int device = 0;
  int stream = 0;
  std::vector<Step> steps;
  std::vector<uint32_t> block_begin;  // num_blocks + 1 entries; block b = [begin[b], begin[b+1])
};

struct ExecutionPlan {
  std::vector<PlanLane> lanes;
  uint32_t num_events = 0;
  size_t num_blocks = 0;
  std::vector<uint32_t> block_of_unit;
  // Operator merges (ios.txt §4.2): the units of each merge stage, launched back to back on one
  // lane; an executor may run them as one wider Conv or one after another.
  std::vector<std::vector<UnitId>> merges;
  // The order one host thread issues the launches in (opara.txt §3.3): the schedule's
  // launch_order, else its units in schedule order (stage form) or by id, a topological order
  // (stream form). Executors that launch from one thread
  // (CUDA, the simulator) interleave the lanes by it.
  std::vector<UnitId> launch_order;
  // The allotment (schedule.h): per unit, the threads its kernels use, within `cores`. Empty
  // (and cores 0) without one: every unit at the executor's threads per stream.
  std::vector<int> unit_threads;
  int cores = 0;
  // happens_before[u][v]: u completes before v starts, by program order and events.
  std::vector<std::vector<bool>> happens_before;
};

// A run of one lane's steps that one host thread issues together: the waits before a launch,
// the launch, the records after it.
struct IssueSegment {
  uint32_t lane = 0;
  uint32_t begin = 0, end = 0;  // steps [begin, end) of plans.lanes[lane]
};

// The order in which one host thread (CUDA, the simulator) issues the steps of blocks
// [first_block, last_block): segments of all lanes interleaved so that the segment whose launch
// comes first in plan.launch_order goes next (each lane's own order kept).
std::vector<IssueSegment> issue_order(const ExecutionPlan& plan, size_t first_block = 0,
                                      size_t last_block = SIZE_MAX);

// Validates first: throws braid::Error(kInvalidSchedule) with the validator's first error for a
// schedule that fails validate.h (a duplicate unit, a backwards edge, a sync cycle). Stage barriers
// become events (each lane of stage k records, each lane of stage k+1 waits), skipped between two
// stages that use the same single stream; syncs become one event per producer unit.
ExecutionPlan lower(const ir::UnitGraph& graph, const Schedule& schedule);

// One line per lane: "lane 0 (dev 0, stream 0): wait e2, conv1, record e3, ..."
std::string to_string(const ExecutionPlan& plan, const ir::UnitGraph& graph);

}  // namespace braid::sched
