// The latency a cost model predicts for a schedule: what `braid schedule` reports as
// predicted_ms and what the schedulers compare.
//
//   Micros t = predicted_latency(units, schedule, cost);
//
// Stage form: the stages of one device run one after another, each taking stage_latency
// (concurrent) or merge_latency (merge); a stage also waits for the stages on other devices
// that produce its inputs, plus their transfer latency (under cost::StartRule::kProducerDevice,
// HIOS's simulator code: for those devices' timelines as they stand when the stage comes up in
// the schedule's order). Stream form (LIOS, Nimble, Opara):
// every lane runs its units in order; a unit starts when its lane is free and every
// predecessor and every sync's `from` has finished (plus the transfer from another device): the
// list-scheduling model of lios.txt §IV. Lanes contend only where the cost model runs fewer
// units at once than there are lanes (cost::CostModel::parallelism(), finite for the CPU
// profiler: its CPUs over threads per stream): the i-th lane then shares slot i mod P, one
// unit at a time, as the CPU executor pins its lanes; the unit that can start earliest takes a
// slot first. Without this, 10 streams on 2 CPUs predicted RandWire 2.4x faster than
// sequential and ran slower (2026-11-27). Units that do run at once on two slots of a device
// share more than CPUs (caches, memory bandwidth, and on a shared machine the other CPU's
// load): while both run, each progresses at 1/f of its speed alone, f = the cost model's
// stage_latency of the pair over the slower unit alone (>= 1; the CPU profiler measures the
// pair as a stage, or past its budget prices it at its measured stages' median ratio). The
// unit already running ends later too (no unit waiting for it has been placed yet). With
// more than two slots the pairs are applied one after another, an approximation. Under an
// allotment
// (schedule.h) a unit takes unit_latency_at its threads, a stage stage_latency_at its groups'.
#pragma once

#include "base/units.h"
#include "cost/cost_model.h"
#include "ir/unit_graph.h"
#include "sched/schedule.h"

namespace braid::sched {

// Requires a schedule that passes validate.h (asserts otherwise).
Micros predicted_latency(const ir::UnitGraph& units, const Schedule& schedule,
                         const cost::CostModel& cost);

}  // namespace braid::sched
