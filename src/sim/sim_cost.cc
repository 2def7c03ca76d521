#include "sim/sim_cost.h"

#include <algorithm>

namespace braid::sim {
namespace {

std::string stage_key(std::span<const std::vector<UnitId>> groups, char kind) {
  std::string key(1, kind);
  for (const auto& group : groups) {
    for (UnitId u : group) {
      const uint32_t v = uint32_t(index(u));
      key.append(reinterpret_cast<const char*>(&v), sizeof v);
    }
    key.push_back('|');
  }
  return key;
}

}  // namespace

SimCostModel::SimCostModel(const ir::UnitGraph& units, DeviceSpec spec, SimCostOptions options)
    : CostModel(units),
      spec_(std::move(spec)),
      name_("sim:" + spec_.name + (options.graph_replay ? "" : " eager")),
      graph_replay_(options.graph_replay),
      kernels_(units, spec_) {
  unit_latency_.reserve(units.num_units());
  for (size_t u = 0; u < units.num_units(); ++u) {
    const std::vector<UnitId> group{UnitId(u)};
    unit_latency_.push_back(simulate_stage(std::span(&group, 1)));
  }
}

Micros SimCostModel::run_time(const Program& p) const {
  const double t = simulate(p, std::span(&spec_, 1), {.graph_replay = graph_replay_}).makespan_us;
  return Micros(graph_replay_ ? std::max(0.0, t - spec_.host.launch_us) : t);
}

Micros SimCostModel::simulate_stage(std::span<const std::vector<UnitId>> groups) const {
  return run_time(stage_program(kernels_, groups));
}

std::optional<cost::UnitResources> SimCostModel::unit_resources(UnitId unit) const {
  const std::span<const Kernel> ks = kernels_.of(unit);
  if (ks.empty()) return std::nullopt;
  cost::UnitResources r;
  r.per_block = {.threads = ks.front().threads,
                 .registers = ks.front().registers,
                 .shared_memory = ks.front().shared_memory};
  r.blocks = ks.front().blocks;
  double flops = 0, bytes = 0;
  for (const Kernel& k : ks) {
    flops += k.flops * double(k.blocks);
    bytes += k.dram_bytes * double(k.blocks);
    r.occupancy =
        std::max(r.occupancy, cost::kernel_occupancy(k.blocks, k.blocks_per_sm(spec_), k.warps(),
                                                     spec_.sms, spec_.per_sm.max_warps));
  }
  r.bound =
      cost::roofline_class(flops, bytes, spec_.sustained_fp32_flops() / spec_.dram_bytes_per_s());
  return r;
}

Micros SimCostModel::unit_latency(UnitId unit) const {
  count_unit_query();
  return unit_latency_[index(unit)];
}

Micros SimCostModel::stage_latency(std::span<const std::vector<UnitId>> groups) const {
  count_stage_query();
  const std::string key = stage_key(groups, 'c');
  {
    std::lock_guard lock(mutex_);
    if (auto it = stages_.find(key); it != stages_.end()) return it->second;
  }
  // Never below the bound the searches prune with (a group is not faster beside others).
  const Micros t = std::max(simulate_stage(groups), stage_lower_bound(groups));
  count_measurement();
  std::lock_guard lock(mutex_);
  stages_.emplace(key, t);
  return t;
}

Micros SimCostModel::stage_lower_bound(std::span<const std::vector<UnitId>> groups) const {
  Micros slowest{0};
  for (const auto& group : groups) {
    Micros sum{0};
    for (UnitId u : group) sum += unit_latency_[index(u)];
    slowest = std::max(slowest, sum);
  }
  // Launches are serialized, on the host or (replayed) on the device's front end: the stage
  // cannot end before its last launch.
  size_t launches = 0;
  for (const auto& group : groups)
    for (UnitId u : group) launches += kernels_.of(u).size();
  const double each = graph_replay_ ? spec_.host.graph_launch_us : spec_.host.launch_us;
  return std::max(slowest, Micros(launches * each));
}

Micros SimCostModel::merge_latency(std::span<const UnitId> units) const {
  count_stage_query();
  const std::vector<UnitId> as_group(units.begin(), units.end());
  const std::string key = stage_key(std::span(&as_group, 1), 'm');
  {
    std::lock_guard lock(mutex_);
    if (auto it = stages_.find(key); it != stages_.end()) return it->second;
  }
  const Micros t = run_time(merge_program(kernels_, units));
  count_measurement();
  std::lock_guard lock(mutex_);
  stages_.emplace(key, t);
  return t;
}

Micros SimCostModel::transfer_latency(const ir::UnitEdge& edge) const {
  if (edge.transfer) return *edge.transfer;
  if (spec_.links.empty()) return Micros{0};
  const Link& link = spec_.links.front();
  return Micros(link.latency_us + double(edge.bytes) / (link.gbps_per_direction * 1e3));
}

}  // namespace braid::sim
