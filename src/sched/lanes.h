// The stream form of a schedule, built from a per-unit stream assignment: what the
// stream-based schedulers (lios.h, heft.h, nimble.h, opara.h) share.
//
//   std::vector<int> stream_of = ...;                    // unit -> stream index (any ints >= 0)
//   std::vector<UnitId> order = ...;                     // every unit once, in launch order
//   s.lanes = make_lanes(stream_of, order);              // one lane per stream that has units
//   s.syncs = cross_lane_syncs(units, stream_of);        // one per edge between streams
//
// Lanes are listed by stream index and renumbered 0, 1, ... (a stream that got no unit leaves
// no gap); a lane's units keep their relative order in `order`.
#pragma once

#include <span>
#include <vector>

#include "base/ids.h"
#include "base/units.h"
#include "ir/unit_graph.h"
#include "sched/schedule.h"

namespace braid::sched {

// `start` and `finish`, when given, hold the planned times of every unit (indexed by unit id)
// and fill Lane::start and Lane::finish.
std::vector<Lane> make_lanes(std::span<const int> stream_of, std::span<const UnitId> order,
                             std::span<const Micros> start = {},
                             std::span<const Micros> finish = {});

// A sync for every graph edge whose ends lie on different streams, in edge order: the waits
// LIOS and Opara issue (one event per producer, waited by each consumer on another stream).
std::vector<SyncEdge> cross_lane_syncs(const ir::UnitGraph& graph, std::span<const int> stream_of);

}  // namespace braid::sched
