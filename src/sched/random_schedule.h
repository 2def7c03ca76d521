// Random valid schedules, for property tests: a seeded random topological order dealt onto
// random streams, with a sync on every edge that crosses streams. Every one is valid, and any
// correct executor must give the same outputs for all of them.
#pragma once

#include <cstdint>

#include "ir/unit_graph.h"
#include "sched/schedule.h"

namespace braid::sched {

Schedule random_stream_schedule(const ir::UnitGraph& graph, int num_streams, uint64_t seed);

}  // namespace braid::sched
