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

PlanProgram plan_program(const ir::UnitGraph& units, const sched::ExecutionPlan& plan,
                         std::span<const UnitKernels* const> devices, size_t first_block,
                         size_t last_block) {
  PlanProgram out;
  Program& p = out.program;
  p.num_events = plan.num_events;
  out.unit_kernels.resize(units.num_units());
  for (size_t li = 0; li < plan.lanes.size(); ++li) {
    const sched::PlanLane& lane = plan.lanes[li];
    BRAID_CHECK(lane.device >= 0 && size_t(lane.device) < devices.size(),
                ErrorCode::kInvalidArgument, "sim: the plan uses device ", lane.device, " but ",
                devices.size(), " simulated devices are given");
    p.streams.push_back({.device = lane.device, .id = lane.stream});
    out.stream_lane.push_back(li);
  }
  const std::vector<sched::IssueSegment> order = sched::issue_order(plan, first_block, last_block);
  // Which lane and unit record each event in these blocks: a cross-device wait copies that
  // unit's tensors; a wait for an event of an earlier block is already satisfied.
  std::vector<std::pair<size_t, UnitId>> recorder(plan.num_events, {SIZE_MAX, UnitId{}});
  for (const sched::IssueSegment& seg : order) {
    std::optional<UnitId> last;
    for (uint32_t s = seg.begin; s < seg.end; ++s) {
      const sched::Step& step = plan.lanes[seg.lane].steps[s];
      if (const auto* launch = std::get_if<sched::LaunchStep>(&step)) last = launch->unit;
      if (const auto* record = std::get_if<sched::RecordStep>(&step)) {
        BRAID_CHECK(last.has_value(), ErrorCode::kInvalidArgument, "sim: lane ", seg.lane,
                    " records event ", record->event, " before any launch");
        recorder[record->event] = {seg.lane, *last};
      }
    }
  }

  // braid's CUDA executor around the plan (KernelModel::fork_join): the inputs copied in on a
  // main stream, a fork event every lane waits for, ..., a join of every lane, outputs out.
  const ir::Graph* graph = units.graph();
  const bool fork_join = devices.size() == 1 && devices[0]->spec().kernel_model.fork_join;
  const uint32_t main_stream = uint32_t(p.streams.size());
  if (fork_join) {
    p.streams.push_back({.device = 0, .id = int(plan.lanes.size())});
    if (first_block == 0 && graph != nullptr)
      for (ValueId v : graph->inputs())
        p.ops.push_back(Op::host_copy(main_stream, double(graph->value(v).type.bytes())));
    const uint32_t fork = p.num_events++;
    p.ops.push_back(Op::record(main_stream, fork));
    for (uint32_t lane = 0; lane < plan.lanes.size(); ++lane) p.ops.push_back(Op::wait(lane, fork));
  }

  std::vector<bool> merge_emitted(plan.merges.size(), false);
  for (const sched::IssueSegment& seg : order) {
    const sched::PlanLane& lane = plan.lanes[seg.lane];
    const uint32_t stream = seg.lane;
    const UnitKernels& kernels = *devices[lane.device];
    std::optional<UnitId> waiting_unit;
    for (uint32_t s = seg.begin; s < seg.end; ++s)
      if (const auto* launch = std::get_if<sched::LaunchStep>(&lane.steps[s]))
        waiting_unit = launch->unit;
    for (uint32_t s = seg.begin; s < seg.end; ++s) {
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
        std::span<const UnitId> owners(&launch.unit, 1);
        if (launch.merge >= 0 && kernels.spec().kernel_model.merged_convolution) {
          if (merge_emitted[launch.merge]) continue;  // one kernel for the whole merge
          merge_emitted[launch.merge] = true;
          merged = merged_kernels(units, plan.merges[launch.merge], kernels.spec());
          ks = merged;
          owners = plan.merges[launch.merge];
        } else {
          ks = kernels.of(launch.unit);
        }
        for (UnitId u : owners)
          for (size_t i = 0; i < ks.size(); ++i)
            out.unit_kernels[index(u)].push_back(uint32_t(p.kernels.size() + i));
        for (const Kernel& k : ks) {
          p.ops.push_back(Op::kernel(stream, uint32_t(p.kernels.size())));
          p.kernels.push_back(k);
        }
      }
    }
  }
  if (fork_join) {
    for (uint32_t lane = 0; lane < plan.lanes.size(); ++lane) {
      const uint32_t join = p.num_events++;
      p.ops.push_back(Op::record(lane, join));
      p.ops.push_back(Op::wait(main_stream, join));
    }
    if (last_block >= plan.num_blocks && graph != nullptr)
      for (ValueId v : graph->outputs())
        p.ops.push_back(Op::host_copy(main_stream, double(graph->value(v).type.bytes())));
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
  if (!kernels.spec().kernel_model.merged_convolution) {
    for (UnitId u : merge)
      for (const Kernel& k : kernels.of(u)) {
        p.ops.push_back(Op::kernel(0, uint32_t(p.kernels.size())));
        p.kernels.push_back(k);
      }
    return p;
  }
  for (Kernel& k : merged_kernels(kernels.units(), merge, kernels.spec())) {
    p.ops.push_back(Op::kernel(0, uint32_t(p.kernels.size())));
    p.kernels.push_back(std::move(k));
  }
  return p;
}

Result simulate_plan(const ir::UnitGraph& units, const sched::ExecutionPlan& plan,
                     const DeviceSpec& device, EngineOptions options) {
  const UnitKernels kernels(units, device);
  const UnitKernels* devices[] = {&kernels};
  return simulate(plan_program(units, plan, devices).program, std::span(&device, 1), options);
}

}  // namespace braid::sim
