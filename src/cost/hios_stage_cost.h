// cost::HiosStageCostModel — `--cost hios`: the stage model of HIOS's simulation study
// (peers.md §3.1, HIOS's simulator), for weighted DAGs whose units carry a latency and a
// utilization (models/random_dag.h draws both). A group's latency is the sum of its units';
// groups sharing a device contend:
//
//   t(S) = a * sum_g lat_g + (1 - a) * max(sum_g lat_g * util_g, max_g lat_g),   a = 0.5
//
// where util_g is the group's latency-weighted mean utilization: between fully serialized (a
// group alone is never faster) and ideally overlapped. Transfers are the edges' transfer_ms.
// This is what makes one device's concurrency worth little (IOS gains ~1.1x in the paper's
// simulations) while several devices gain much.
//
// `start` picks where a unit waits for an input from another device (cost_model.h StartRule):
// `--cost hios` and `hios:start=paper` wait for the producer's finish (hios.txt's text),
// `hios:start=code` for the producer device's current timeline (HIOS's simulator code).
#pragma once

#include <string_view>

#include "cost/cost_model.h"

namespace braid::cost {

class HiosStageCostModel final : public CostModel {
 public:
  // Throws braid::Error(kInvalidArgument) unless every unit has a latency; units without a
  // utilization count as 1 (they occupy the whole device).
  explicit HiosStageCostModel(const ir::UnitGraph& units, double alpha = 0.5,
                              StartRule start = StartRule::kProducerFinish);

  std::string_view name() const override { return "hios"; }
  Micros unit_latency(UnitId unit) const override;
  Micros stage_latency(std::span<const std::vector<UnitId>> groups) const override;
  Micros transfer_latency(const ir::UnitEdge& edge) const override;
  StartRule start_rule() const override { return start_; }

 private:
  double alpha_;
  StartRule start_;
};

// "paper" (kProducerFinish) or "code" (kProducerDevice); throws braid::Error(kInvalidArgument)
// naming the known values otherwise.
StartRule parse_hios_start(std::string_view value);
std::string_view hios_start_name(StartRule rule);

}  // namespace braid::cost
