// LIOS: latency-based inter-operator scheduling (lios.txt §IV), a list scheduler for streams.
//
//   LiosScheduler lios({.max_streams = 3});
//   Schedule s = lios.schedule(units, cost);   // lanes with planned start/finish, plus syncs
//   s.lanes[0].start[0], s.lanes[0].finish[0]   // Table III's ST and FT
//
// The algorithm (lios.txt Algorithm 1): wait_list starts with the units that have no
// predecessor. Repeatedly
//  1. operator prioritizing (§IV-B): take the unit of wait_list with the highest Rank, its
//     latency (Eq. 5); ties go to the lowest unit id;
//  2. stream selection (§IV-C): put it on the stream with the smallest
//     EFT = max(free(p), max FT(pred)) + latency (Eqs. 1, 2, 6); ties go to the first stream;
//  3. append the units all of whose predecessors are now scheduled to wait_list.
// Streams are P = {p_1 .. p_x} with x = max_streams; max_streams = 0 lets every unit open a
// stream of its own (the candidates are then the streams in use plus one fresh stream, since
// all fresh streams are alike). A stream never runs two units at once and never starts a unit
// before its predecessors finish, so the planned times are exactly what sched/predict.h
// simulates. All lanes are on device 0; the graph's edges between lanes become syncs.
//
// The ablations of lios.txt §V (RQ3), seeded by ScheduleOptions::seed:
//  - lios-rand1: step 1 picks a uniformly random unit of wait_list;
//  - lios-rand2: step 2 picks a uniformly random stream of P (with max_streams = 0: of the
//    streams in use plus one fresh stream);
//  - lios-rand: both.
// The start time stays the EST on the chosen stream in every variant.
#pragma once

#include <memory>

#include "sched/registry.h"

namespace braid::sched {

enum class LiosVariant : uint8_t { kLios, kRand1, kRand2, kRand };

class LiosScheduler final : public Scheduler {
 public:
  explicit LiosScheduler(const ScheduleOptions& options = {},
                         LiosVariant variant = LiosVariant::kLios);
  std::string_view name() const override;
  using Scheduler::schedule;
  Schedule schedule(const ir::UnitGraph& graph, const cost::CostModel& cost,
                    SearchStats* stats = nullptr) const override;

 private:
  ScheduleOptions options_;
  LiosVariant variant_;
};

// For the registry's list (registry.cc).
template <LiosVariant V>
std::unique_ptr<Scheduler> make_lios_scheduler(const ScheduleOptions& options) {
  return std::make_unique<LiosScheduler>(options, V);
}

}  // namespace braid::sched
