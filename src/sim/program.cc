#include "sim/program.h"

#include <algorithm>
#include <limits>
#include <optional>

#include "base/error.h"

namespace braid::sim {

UnitKernels::UnitKernels(const ir::UnitGraph& units, const DeviceSpec& spec)
    : units_(&units), spec_(&spec) {
  kernels_.reserve(units.num_units());
  for (size_t u = 0; u < units.num_units(); ++u)
    kernels_.push_back(unit_kernels(units, UnitId(u), spec));
}

namespace {

// The steps of one lane cut into segments: the waits before a launch, the launch, the records
// after it. The host issues a segment at once.
struct Segment {
  size_t begin = 0, end = 0;  // step range
  size_t priority = 0;        // position of the launched unit in the host order
};

}  // namespace

PlanProgram plan_program(const ir::UnitGraph& units, const sched::ExecutionPlan& plan,
                         std::span<const UnitId> order, std::span<const UnitKernels* const> devices,
                         size_t first_block, size_t last_block) {
  last_block = std::min(last_block, plan.num_blocks);
  PlanProgram out;
  Program& p = out.program;
  p.num_events = plan.num_events;
  out.unit_kernels.resize(units.num_units());
  std::vector<size_t> position(units.num_units(), std::numeric_limits<size_t>::max());
  for (size_t i = 0; i < order.size(); ++i) position[index(order[i])] = i;

  // Which lane and unit record each event: a cross-device wait copies that unit's tensors.
  std::vector<std::pair<size_t, UnitId>> recorder(plan.num_events, {SIZE_MAX, UnitId{}});
  std::vector<std::vector<Segment>> segments(plan.lanes.size());
  for (size_t li = 0; li < plan.lanes.size(); ++li) {
    const sched::PlanLane& lane = plan.lanes[li];
    BRAID_CHECK(lane.device >= 0 && size_t(lane.device) < devices.size(),
                ErrorCode::kInvalidArgument, "sim: the plan uses device ", lane.device, " but ",
                devices.size(), " simulated devices are given");
    p.streams.push_back({.device = lane.device, .id = lane.stream});
    out.stream_lane.push_back(li);
    std::optional<UnitId> last;
    size_t step_begin = 0, step_end = lane.steps.size();
    if (!lane.block_begin.empty() && first_block < last_block) {
      step_begin = lane.block_begin[first_block];
      step_end = lane.block_begin[last_block];
    } else if (first_block >= last_block) {
      step_end = 0;
    }
    Segment seg{.begin = step_begin};
    for (size_t s = step_begin; s < step_end; ++s) {
      const sched::Step& step = lane.steps[s];
      if (const auto* launch = std::get_if<sched::LaunchStep>(&step)) {
        if (last) {  // a launch ends the previous segment (its records included)
          seg.end = s;
          // Waits before this launch belong to it: move them out of the previous segment.
          while (seg.end > seg.begin &&
                 std::holds_alternative<sched::WaitStep>(lane.steps[seg.end - 1]))
            --seg.end;
          segments[li].push_back(seg);
          seg = {.begin = seg.end};
        }
        seg.priority = position[index(launch->unit)];
        last = launch->unit;
      } else if (const auto* record = std::get_if<sched::RecordStep>(&step)) {
        BRAID_CHECK(last.has_value(), ErrorCode::kInvalidArgument, "sim: lane ", li,
                    " records event ", record->event, " before any launch");
        recorder[record->event] = {li, *last};
      }
    }
    seg.end = step_end;
    if (seg.end > seg.begin) segments[li].push_back(seg);
  }

  std::vector<bool> merge_emitted(plan.merges.size(), false);
  auto emit = [&](size_t li, const Segment& seg) {
    const sched::PlanLane& lane = plan.lanes[li];
    const uint32_t stream = uint32_t(li);
    const UnitKernels& kernels = *devices[lane.device];
    std::optional<UnitId> waiting_unit;
    for (size_t s = seg.begin; s < seg.end; ++s)
      if (const auto* launch = std::get_if<sched::LaunchStep>(&lane.steps[s]))
        waiting_unit = launch->unit;
    for (size_t s = seg.begin; s < seg.end; ++s) {
      const sched::Step& step = lane.steps[s];
      if (const auto* wait = std::get_if<sched::WaitStep>(&step)) {
        const auto [src_lane, from] = recorder[wait->event];
        if (src_lane == SIZE_MAX) continue;  // recorded by an earlier block: already done
        p.ops.push_back(Op::wait(stream, wait->event));
        const int src_device = plan.lanes[src_lane].device;
        if (src_device != lane.device) {
          double bytes = 0;
          if (waiting_unit)
            if (auto e = units.find_edge(from, *waiting_unit))
              bytes = double(units.edges()[*e].bytes);
          if (bytes == 0)
            for (uint32_t e : units.out_edges(from))
              bytes = std::max(bytes, double(units.edges()[e].bytes));
          p.ops.push_back(Op::copy(stream, bytes, src_device));
        }
      } else if (const auto* record = std::get_if<sched::RecordStep>(&step)) {
        p.ops.push_back(Op::record(stream, record->event));
      } else {
        const auto& launch = std::get<sched::LaunchStep>(step);
        std::vector<Kernel> merged;
        std::span<const Kernel> ks;
        if (launch.merge >= 0) {
          if (merge_emitted[launch.merge]) continue;  // one kernel for the whole merge
          merge_emitted[launch.merge] = true;
          merged = merged_kernels(units, plan.merges[launch.merge], kernels.spec());
          ks = merged;
          for (UnitId u : plan.merges[launch.merge])
            for (size_t i = 0; i < ks.size(); ++i)
              out.unit_kernels[index(u)].push_back(uint32_t(p.kernels.size() + i));
        } else {
          ks = kernels.of(launch.unit);
          for (size_t i = 0; i < ks.size(); ++i)
            out.unit_kernels[index(launch.unit)].push_back(uint32_t(p.kernels.size() + i));
        }
        for (const Kernel& k : ks) {
          p.ops.push_back(Op::kernel(stream, uint32_t(p.kernels.size())));
          p.kernels.push_back(k);
        }
      }
    }
  };

  // Merge the lanes' segments by priority (the host's launch order).
  std::vector<size_t> next(plan.lanes.size(), 0);
  while (true) {
    size_t best = SIZE_MAX;
    for (size_t li = 0; li < plan.lanes.size(); ++li)
      if (next[li] < segments[li].size() &&
          (best == SIZE_MAX ||
           segments[li][next[li]].priority < segments[best][next[best]].priority))
        best = li;
    if (best == SIZE_MAX) break;
    emit(best, segments[best][next[best]++]);
  }
  return out;
}

Program stage_program(const UnitKernels& kernels, std::span<const std::vector<UnitId>> groups) {
  Program p;
  for (size_t g = 0; g < groups.size(); ++g) {
    p.streams.push_back({.device = 0, .id = int(g)});
    for (UnitId u : groups[g])
      for (const Kernel& k : kernels.of(u)) {
        p.ops.push_back(Op::kernel(uint32_t(g), uint32_t(p.kernels.size())));
        p.kernels.push_back(k);
      }
  }
  return p;
}

Program merge_program(const UnitKernels& kernels, std::span<const UnitId> merge) {
  Program p;
  p.streams.push_back({.device = 0, .id = 0});
  for (Kernel& k : merged_kernels(kernels.units(), merge, kernels.spec())) {
    p.ops.push_back(Op::kernel(0, uint32_t(p.kernels.size())));
    p.kernels.push_back(std::move(k));
  }
  return p;
}

}  // namespace braid::sim
