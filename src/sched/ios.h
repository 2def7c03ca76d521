// IOS: the inter-operator scheduler's dynamic program (ios.txt §4, Algorithm 1; peers.md §1.3).
//
//   auto ios = make_scheduler("ios", {.max_group_size = 3, .max_groups = 8});
//   SearchStats stats;
//   Schedule s = ios->schedule(units, cost, &stats);   // stages; s.predicted_latency = cost[V]
//   stats.transitions, stats.states, stats.stage_queries
//
// The words (ios.txt §3-§4):
//  - state S: the units still to schedule. S is closed under predecessors.
//  - ending S' of S: a non-empty subset of S such that every edge between S - S' and S' goes
//    from S - S' to S'; it is the last stage of a schedule of S.
//  - cost[S] = min over endings S' of cost[S - S'] + stage_latency(S'), cost[{}] = 0, memoized
//    on S. The schedule follows the recorded choices back from the whole set.
//  - A stage is either concurrent or a merge (GenerateStage picks the faster of the two):
//    * concurrent: the groups are the weakly connected components of S' (units joined by an
//      edge share a group); a group runs its units in topological order on one stream. This
//      is every ending, including those whose groups have several entry units, which IOS's
//      own enumeration misses (peers.md §1.8, issue #10);
//    * merge: every unit of S' is a mergeable Conv reading the same input (sched/merge.h), so
//      S' is a set of sinks of S; the cost model's merge_latency prices it.
//  - Pruning (ios.txt §4.3): a concurrent stage has at most r = max_group_size units per group
//    and at most s = max_groups groups, and at most max_streams groups (0 = unbounded). A
//    merge stage, one group per unit in braid's schedule format, has at most s units.
//
// Variants (registry names):
//  - "ios": concurrent and merge stages (IOS-Both);
//  - "ios-parallel": concurrent stages only;
//  - "ios-merge": merge stages plus single-unit stages, so that every graph can be scheduled;
//  - "ios-threads": concurrent stages with an allotment (schedule.h): every stage also chooses
//    each group's threads, at most ScheduleOptions::cores (else the cost model's max_threads)
//    in all, so at most that many groups; the stage costs its best allotment
//    (cost::CostModel::stage_latency_at). Every allotment is priced under a cost model that
//    computes; one that measures is asked only for the allotment its unit latencies
//    (unit_latency_at) predict fastest. Beyond 8 cores a group's choices are powers of two and
//    all the cores. The best-first bound of a stage is its slowest group at each unit's fastest
//    thread count, and its least work over the cores.
//
// Block-wise search: ir::block_partition cuts the graph at its cut units; each block is
// optimized on its own and the stage lists are concatenated (ios.txt §4.2). A block of more
// than max_part_size units (NASNet's 371-unit block) is cut into consecutive parts in unit id
// (topological) order, each optimized on its own as well, at its narrowest points:
//  - the frontier after position i of the block is the number of units at or before i with a
//    successor in the block after i (what a cut there keeps from running concurrently);
//  - where every unit's name has a scope (`cell_3/conv_1x1`: the module path an exporter
//    writes, the zoo's cells), the block is cut only between scopes, at every boundary of
//    frontier <= t for the smallest t that leaves no part over max_part_size units;
//  - else (or when no t does), for the smallest threshold t that leaves no part over
//    max_part_size units, the block is cut after the first position of every run of
//    consecutive positions of frontier <= t;
//  - when no threshold does, the threshold that leaves the smallest largest part is taken and
//    its parts over max_part_size are cut into the fewest pieces of balanced sizes.
// On NASNet the cell boundaries have frontier 2 (the outputs of the last two cells), so the
// parts are its cells, as IOS's hand-written `get_parts` makes them (peers.md §2.5). Before
// 2026-11-29 the cuts ignored scopes and also fell inside cells where the frontier is as narrow
// (cell_stem_0 cut 1+5+12, the first cells 0, 6, 12 cut 3+15). Plain consecutive chunks of 50
// units would each span about three cells, whose overlap multiplies the states (2.2M states and
// 3.9G transitions, against 42k and 4.4M).
// Parts never exceed 64 units, so a set of units is one uint64_t bit mask. The search stays
// exponential in a part's width (ios.txt §4.2); the pruning bounds it.
//
// Schedules are stage-based on device 0 (IOS schedules one device; num_devices is ignored).
// Within one search the cost model is asked once per distinct stage (cached by the unit set,
// which determines the groups); SearchStats counts the (S, S') transitions, the states
// (memoized sets, the empty set included, as in ios.txt Figure 5) and the stage queries.
// Ties between schedules of equal latency go to the one with fewer stages.
//
// Two evaluations of the same recurrence (ScheduleOptions::ios_search):
//  - the dynamic program: solve(S) recursively over every ending, asking the latency of every
//    stage it meets (IOS's own, which profiles them all on the GPU);
//  - best-first: A* over the same states, from the whole part to the empty set. A transition
//    enters the queue priced by the cost model's stage_lower_bound and is measured only when it
//    reaches the front; the heuristic is the optimum of the same recurrence with every stage
//    priced by its bound (a DP that measures nothing), consistent with those bounds, so the
//    result is the DP's optimum. Stages whose bound already ends behind the optimum are never
//    measured: under the measured CPU cost, 222 measurements on Inception V3, 12,926 on
//    RandWire and 1,067 on NASNet, where IOS makes 5,479, 212,895 and 240,704 (bench/README.md).
//    ScheduleOptions::ios_tolerance t inflates the heuristic (weighted A*): a schedule within
//    (1 + t) of the optimum for fewer measurements.
// kAuto takes best-first when the cost model measures (cost::CostModel::measures), else the DP,
// which is faster when a stage latency is a lookup. The best-first counters: transitions pushed,
// states closed, stages asked.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "sched/registry.h"

namespace braid::sched {

enum class IosVariant : uint8_t { kBoth, kParallel, kMerge, kThreads };

inline constexpr int kIosMaxPartSize = 64;  // units per part: one uint64_t bit mask
inline constexpr int kIosDefaultPartSize = 50;

class IosScheduler final : public Scheduler {
 public:
  // Throws braid::Error(kInvalidArgument) for a max_part_size outside [1, 64] or negative
  // pruning options.
  explicit IosScheduler(const ScheduleOptions& options = {}, IosVariant variant = IosVariant::kBoth,
                        int max_part_size = kIosDefaultPartSize);
  std::string_view name() const override;
  using Scheduler::schedule;
  // Stage form on device 0; predicted_latency = the DP's cost (the sum over parts).
  Schedule schedule(const ir::UnitGraph& graph, const cost::CostModel& cost,
                    SearchStats* stats = nullptr) const override;

 private:
  ScheduleOptions options_;
  IosVariant variant_;
  int max_part_size_;
};

// The parts the DP optimizes independently, in schedule order: the blocks of
// ir::block_partition, those over max_part_size units cut at their narrowest points (above).
std::vector<std::vector<UnitId>> ios_parts(const ir::UnitGraph& graph, int max_part_size);

// Registry factories (registry.cc).
std::unique_ptr<Scheduler> make_ios_scheduler(const ScheduleOptions& options);
std::unique_ptr<Scheduler> make_ios_parallel_scheduler(const ScheduleOptions& options);
std::unique_ptr<Scheduler> make_ios_merge_scheduler(const ScheduleOptions& options);
std::unique_ptr<Scheduler> make_ios_threads_scheduler(const ScheduleOptions& options);

}  // namespace braid::sched
