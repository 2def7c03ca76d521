// cost::WithTransfers — any cost model with its transfer times replaced by a measured link:
// latency + bytes / bandwidth per edge between devices (`--transfers FILE`, written by `mpirun
// -np 2 braid transfers -o FILE`, which times MPI messages between two ranks).
//
//   auto cost = std::make_unique<cost::WithTransfers>(std::move(cpu), {.latency_us = 3, .gbps =
//   8});
#pragma once

#include <filesystem>
#include <memory>

#include "cost/cost_model.h"

namespace braid::cost {

struct LinkCost {
  double latency_us = 0;
  double gbps = 1;  // GB/s (1e9 bytes per second)
};

// Reads {"format": "braid.transfers/1", "latency_us": .., "gbps": ..}; kNotFound for a missing
// file, kInvalidArgument naming the field otherwise.
LinkCost read_link_cost(const std::filesystem::path& path);

class WithTransfers final : public CostModel {
 public:
  WithTransfers(std::unique_ptr<CostModel> base, LinkCost link);
  std::string_view name() const override { return base_->name(); }
  Micros unit_latency(UnitId unit) const override { return base_->unit_latency(unit); }
  Micros stage_latency(std::span<const std::vector<UnitId>> groups) const override {
    return base_->stage_latency(groups);
  }
  double parallelism() const override { return base_->parallelism(); }
  bool measures() const override { return base_->measures(); }
  Micros stage_lower_bound(std::span<const std::vector<UnitId>> groups) const override {
    return base_->stage_lower_bound(groups);
  }
  Micros merge_latency(std::span<const UnitId> units) const override {
    return base_->merge_latency(units);
  }
  Micros merge_lower_bound(std::span<const UnitId> units) const override {
    return base_->merge_lower_bound(units);
  }
  CostStats stats() const override { return base_->stats(); }
  StartRule start_rule() const override { return base_->start_rule(); }
  std::optional<UnitResources> unit_resources(UnitId unit) const override {
    return base_->unit_resources(unit);
  }
  Micros transfer_latency(const ir::UnitEdge& edge) const override {
    return Micros(link_.latency_us + double(edge.bytes) / (link_.gbps * 1e3));
  }

 private:
  std::unique_ptr<CostModel> base_;
  LinkCost link_;
};

}  // namespace braid::cost
