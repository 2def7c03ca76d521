// Random valid schedules, for property tests: a seeded random topological order dealt onto
// random streams, with a sync on every edge that crosses streams. Every one is valid, and any
// correct executor must give the same outputs for all of them.
#pragma once

#include <cstdint>

#include "ir/unit_graph.h"
#include "sched/schedule.h"

namespace braid::sched {

Schedule random_stream_schedule(const ir::UnitGraph& graph, int num_streams, uint64_t seed);

// `s` with a random valid allotment on `threads_per_lane` threads per stream: each unit of a
// stream (each group of a stage) gets 1..threads_per_lane threads, and `cores` is the streams
// (the widest stage's groups) times threads_per_lane, so no two units can oversubscribe it.
Schedule with_random_allotment(Schedule s, int threads_per_lane, uint64_t seed);

}  // namespace braid::sched
