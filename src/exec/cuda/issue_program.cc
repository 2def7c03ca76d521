#include "exec/cuda/issue_program.h"

#include <algorithm>
#include <set>
#include <variant>

namespace braid::exec::cuda {

BlockRange block_range(const sched::ExecutionPlan& plan, size_t first, size_t last) {
  return {first, std::min(last, plan.num_blocks)};
}

IssueProgram issue_program(const sched::ExecutionPlan& plan, const IssueOptions& options) {
  using Kind = Command::Kind;
  IssueProgram p;
  p.range = block_range(plan, options.first_block, options.last_block);
  p.graph = options.graph && !options.time_units;
  std::vector<Command>& out = p.commands;
  if (p.range.first == 0)
    for (uint32_t i = 0; i < options.num_inputs; ++i) out.push_back({Kind::kCopyIn, 0, i});

  const bool capture = p.graph && !options.captured;
  if (p.graph && !capture) {
    out.push_back({Kind::kRecordStart});
    out.push_back({Kind::kGraphLaunch});
    out.push_back({Kind::kRecordFinish});
  } else {
    out.push_back({capture ? Kind::kBeginCapture : Kind::kRecordStart});
    out.push_back({Kind::kFork});
    const std::vector<sched::IssueSegment> segments =
        sched::issue_order(plan, p.range.first, p.range.last);
    // Events this range records: a captured wait on any other would cross the capture boundary.
    std::set<uint32_t> recorded;
    for (const sched::IssueSegment& seg : segments)
      for (uint32_t s = seg.begin; s < seg.end; ++s)
        if (const auto* r = std::get_if<sched::RecordStep>(&plan.lanes[seg.lane].steps[s]))
          recorded.insert(r->event);
    for (const sched::IssueSegment& seg : segments)
      for (uint32_t s = seg.begin; s < seg.end; ++s) {
        const sched::Step& step = plan.lanes[seg.lane].steps[s];
        if (const auto* w = std::get_if<sched::WaitStep>(&step);
            w != nullptr && capture && !recorded.contains(w->event))
          continue;  // recorded by an earlier range, which joined main before this graph starts
        const bool timed = options.time_units && std::holds_alternative<sched::LaunchStep>(step);
        if (timed) out.push_back({Kind::kUnitBegin, seg.lane, s});
        out.push_back({Kind::kStep, seg.lane, s});
        if (timed) out.push_back({Kind::kUnitEnd, seg.lane, s});
      }
    out.push_back({Kind::kJoin});
    if (capture) {
      out.push_back({Kind::kEndCapture});
      out.push_back({Kind::kRecordStart});
      out.push_back({Kind::kGraphLaunch});
    }
    out.push_back({Kind::kRecordFinish});
  }
  if (p.range.last >= plan.num_blocks)
    for (uint32_t i = 0; i < options.num_outputs; ++i) out.push_back({Kind::kCopyOut, 0, i});
  return p;
}

std::string to_string(const Command& c) {
  using Kind = Command::Kind;
  switch (c.kind) {
    case Kind::kCopyIn:
      return "copy-in " + std::to_string(c.index);
    case Kind::kBeginCapture:
      return "begin-capture";
    case Kind::kFork:
      return "fork";
    case Kind::kStep:
      return "step lane " + std::to_string(c.lane) + " #" + std::to_string(c.index);
    case Kind::kUnitBegin:
      return "unit-begin lane " + std::to_string(c.lane) + " #" + std::to_string(c.index);
    case Kind::kUnitEnd:
      return "unit-end lane " + std::to_string(c.lane) + " #" + std::to_string(c.index);
    case Kind::kJoin:
      return "join";
    case Kind::kEndCapture:
      return "end-capture";
    case Kind::kRecordStart:
      return "record-start";
    case Kind::kGraphLaunch:
      return "graph-launch";
    case Kind::kRecordFinish:
      return "record-finish";
    case Kind::kCopyOut:
      return "copy-out " + std::to_string(c.index);
  }
  return "?";
}

}  // namespace braid::exec::cuda
