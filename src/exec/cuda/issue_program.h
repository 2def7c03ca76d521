// The sequence of commands one run of the CUDA executor issues, apart from the CUDA calls that
// issue them: the executor (cuda_executor.cc) walks this list and makes one CUDA call (or a few)
// per command, so the order — and the rules below — can be tested where there is no GPU.
//
//   IssueProgram p = issue_program(plan, {.num_inputs = 1, .num_outputs = 1,
//                                         .first_block = 0, .last_block = plan.num_blocks,
//                                         .graph = true, .captured = cache.contains(range)});
//   for (const Command& c : p.commands) ...  // cudaMemcpyAsync, cudaStreamBeginCapture, ...
//
// Graph replay (the default): the first run of a block range captures the range's fork, lane
// steps and join into a CUDA Graph, cached by the request under the range; every run launches it.
// The rules (issue 14; the CUDA Runtime API's notes on stream capture):
//   - timing events (the run's start and finish, per-unit events) are never recorded inside a
//     capture: recorded there they become graph nodes and cudaEventElapsedTime fails on them
//     (cudaErrorCapturedEvent / "invalid argument"). They bracket the graph launch instead;
//   - inside a capture every wait is on an event recorded earlier in the same capture (a wait on an
//     event from outside would cross the capture boundary, cudaErrorStreamCaptureIsolation). Waits
//     on events recorded by earlier block ranges are dropped: those ranges ran to their join on the
//     main stream before this graph starts, which orders them already;
//   - per-unit timing (a RunObserver) needs events around every unit, so observed runs go eagerly.
// Copies in and out stay outside the graph, on the main stream, outside the timed interval.
#pragma once

#include <compare>
#include <cstdint>
#include <string>
#include <vector>

#include "sched/lower.h"

namespace braid::exec::cuda {

// A request's graph cache key: blocks [first, last), last clamped to the plan's blocks.
struct BlockRange {
  size_t first = 0, last = 0;
  auto operator<=>(const BlockRange&) const = default;
};

struct Command {
  enum class Kind : uint8_t {
    kCopyIn,        // graph input `index`: pinned host buffer -> arena, on the main stream
    kBeginCapture,  // the main stream starts capturing (thread-local mode)
    kFork,          // record the fork event on main; every lane waits on it
    kStep,          // plan.lanes[lane].steps[index] on the lane's stream (wait, record, launch)
    kUnitBegin,     // timing event before the launch at plan.lanes[lane].steps[index]
    kUnitEnd,       // timing event after it
    kJoin,          // every lane records its join event; main waits on each
    kEndCapture,    // the capture ends: instantiate the graph, cache it under the range
    kRecordStart,   // timing event `started` on main
    kGraphLaunch,   // launch the range's cached graph on main
    kRecordFinish,  // timing event `finished` on main
    kCopyOut,       // graph output `index`: arena -> pinned host buffer, on the main stream
  };
  Kind kind;
  uint32_t lane = 0;
  uint32_t index = 0;

  bool operator==(const Command&) const = default;
};

struct IssueOptions {
  size_t num_inputs = 0, num_outputs = 0;  // of the graph
  size_t first_block = 0, last_block = SIZE_MAX;
  bool graph = true;        // replay a captured graph (false: eager, the slow path)
  bool time_units = false;  // events around every unit (an observer): forces eager
  bool captured = false;    // the request already holds a graph for this range
};

struct IssueProgram {
  BlockRange range;
  bool graph = false;  // replayed (the options asked for it and no unit is timed)
  std::vector<Command> commands;
};

BlockRange block_range(const sched::ExecutionPlan& plan, size_t first, size_t last);

IssueProgram issue_program(const sched::ExecutionPlan& plan, const IssueOptions& options);

// "step lane 2 #5", "copy-in 0", "begin-capture": for test messages and dumps.
std::string to_string(const Command& command);

}  // namespace braid::exec::cuda
