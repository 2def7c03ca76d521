// The schedule validator: everything an executor relies on, checked before it runs.
//
//   std::vector<Diagnostic> d = check(units, schedule);   // errors first, then warnings
//   validate_or_throw(units, schedule);                   // kInvalidSchedule with the first error
//
// Rules (docs/schedule-format.md has the rationale):
//  1. Structure: exactly one of stages/streams; devices in [0, num_devices); streams >= 0 and
//     each (device, stream) lane listed once; no empty stage, group or lane; a merge stage has
//     groups of one unit; planned times, when present, have one entry per unit; syncs only in
//     stream-based schedules; unit ids in range.
//  2. Coverage: every unit is placed exactly once (missing and duplicate units are named).
//  3. Operator merge (ios.txt §3, §4.2; peers.md §1.4): every unit is a Conv, optionally with
//     its fused activation or a following activation op in the same unit; groups == 1; all
//     read the same input value, with the same stride, dilation, output H/W and activation;
//     the pads center each kernel in the merged one. A weighted DAG has no ops: no merges.
//  4. Transfers name their endpoints' devices and differ in src/dst. In a stage-based
//     schedule the stage of a transfer's `from` is listed before the stage of its `to`, so
//     the stage list is an order one host thread can issue.
//  5. Happens-before = program order (within a group or lane), stage barriers (consecutive
//     stages of one device), syncs and transfers. It must be acyclic: a cycle is a deadlock.
//  6. Every graph edge u -> v is ordered: u happens before v. An edge between devices needs a
//     transfer entry; an unordered edge between streams is a missing wait, i.e. a data race.
//  7. Launch order, when present: a permutation of all units, topological for the graph and a
//     linear extension of happens-before (a host thread must record an event before another
//     stream waits on it; CUDA ignores a wait on an event not yet recorded).
//  8. Planned times: finish >= start >= 0 and no overlap within a lane.
//  9. Allotment (schedule.h): with `cores`, every stage gives one thread count per group and
//     every stream one per unit, each from 1 to cores, on one device; without, none. Units that
//     may run at once by happens-before ask for at most `cores` threads together (the heaviest
//     antichain, concurrency.h): the error names such a set.
// Syncs that are not graph edges are allowed (a scheduler may delay a unit on purpose); only a
// cycle makes them wrong. Warnings (never thrown): a sync within one lane (program order
// already orders it), a transfer that is not a graph edge (a wasted copy), duplicate sync or
// transfer entries, a planned start before a producer's planned finish.
// Rules 3-9 run only when rules 1-2 pass, since they need every unit placed exactly once.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "ir/unit_graph.h"
#include "sched/schedule.h"

namespace braid::sched {

enum class Severity : uint8_t { kError, kWarning };

struct Diagnostic {
  Severity severity = Severity::kError;
  std::string message;  // names units and JSON paths: "stages[2].groups[1]: ..."
};
std::string to_string(const Diagnostic& d);  // "error: ..." / "warning: ..."

// Every violation, deterministic: errors in rule order, then warnings.
std::vector<Diagnostic> check(const ir::UnitGraph& graph, const Schedule& schedule);
bool has_errors(std::span<const Diagnostic> diagnostics);
// Throws braid::Error(kInvalidSchedule) with the first error; warnings are ignored.
void validate_or_throw(const ir::UnitGraph& graph, const Schedule& schedule);

}  // namespace braid::sched
