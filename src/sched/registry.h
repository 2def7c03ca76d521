// The Scheduler interface and the registry of schedulers, an explicit ordered list (like
// oneDNN's impl lists): no registration behind anyone's back.
//
//   std::unique_ptr<Scheduler> s = make_scheduler("ios", {.max_streams = 8});
//   SearchStats stats;
//   Schedule plan = s->schedule(units, cost, &stats);   // valid by validate.h's rules
//   Schedule quick = s->schedule(units);                // cost::default_cost_model(units)
//   for (std::string_view name : scheduler_names()) ...
//
// Options are typed and given at construction; schedule() is const and deterministic (given
// the seed), so one Scheduler may serve many graphs and threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "cost/cost_model.h"
#include "ir/unit_graph.h"
#include "sched/schedule.h"

namespace braid::sched {

// How IOS evaluates its recurrence (ios.h): the memoized dynamic program, which asks the
// latency of every stage it meets, or a best-first search over the same states that asks lower
// bounds first; kAuto picks best-first when the cost model measures (cost::CostModel::measures).
enum class IosSearch { kAuto, kDynamicProgram, kBestFirst };

struct ScheduleOptions {
  int max_streams = 10;  // streams per device (IOS's runtime has 10); 0 = unbounded
  int num_devices = 1;
  // HIOS's sliding window (hios.txt Alg. 2): at most this many consecutive units of a device
  // grouped into one stage (bounded by max_streams too). HIOS's code uses 2.
  int window = 2;
  uint64_t seed = 0;  // for schedulers that randomize; ties are otherwise broken by UnitId
  // IOS pruning (ios.txt §4.3): at most `max_groups` groups (s) of at most `max_group_size`
  // units (r) per stage. 0 = unbounded.
  int max_group_size = 3;
  int max_groups = 8;
  IosSearch ios_search = IosSearch::kAuto;
  // Best-first IOS may return a schedule up to this fraction above the optimum (0: exact) and
  // measures far fewer stages for it; the dynamic program ignores it.
  double ios_tolerance = 0;
  // Allotment schedulers (moldable.h): the cores the plan may use; 0: as many as the cost model
  // prices (cost::CostModel::max_threads, the CPUs here for the CPU profiler).
  int cores = 0;
};

// What a search did, for reports (`braid schedule --json`). Zero where it does not apply.
struct SearchStats {
  int64_t transitions = 0;    // IOS: (S, S') pairs visited
  int64_t states = 0;         // IOS: distinct sets of scheduled units memoized
  int64_t stage_queries = 0;  // stage-latency questions the search asked the cost model
  int64_t nodes = 0;          // exact search: branch-and-bound nodes expanded
};

class Scheduler {
 public:
  virtual ~Scheduler() = default;
  virtual std::string_view name() const = 0;
  // Schedules `graph` under `cost` (bound to the same graph). `stats` may be null.
  virtual Schedule schedule(const ir::UnitGraph& graph, const cost::CostModel& cost,
                            SearchStats* stats = nullptr) const = 0;
  // The same under the graph's own cost model (cost::default_cost_model: its latencies when it
  // is a weighted DAG, else the roofline).
  Schedule schedule(const ir::UnitGraph& graph) const;
};

// What a scheduler's plans are, for callers that choose among schedulers (tune::auto_schedule).
struct SchedulerTraits {
  bool allots = false;          // plans how many cores each unit gets (ScheduleOptions::cores)
  bool intra_operator = false;  // one unit at a time: parallel only inside operators
};

// Throws braid::Error: kNotFound for an unknown name (the message lists the known ones),
// kInvalidArgument for bad options.
std::unique_ptr<Scheduler> make_scheduler(std::string_view name,
                                          const ScheduleOptions& options = {});
// The traits of a known scheduler; kNotFound as make_scheduler for an unknown name.
SchedulerTraits scheduler_traits(std::string_view name);
// The known names, in registry order.
std::vector<std::string_view> scheduler_names();

}  // namespace braid::sched
