#include "sched/registry.h"

#include <string>

#include "base/error.h"
#include "cost/roofline.h"
#include "sched/heft.h"
#include "sched/hios.h"
#include "sched/ios.h"
#include "sched/lios.h"
#include "sched/moldable.h"
#include "sched/nimble.h"
#include "sched/opara.h"
#include "sched/optimal.h"
#include "sched/trivial.h"

namespace braid::sched {

namespace {

struct Entry {
  std::string_view name;
  std::unique_ptr<Scheduler> (*make)(const ScheduleOptions&);
  SchedulerTraits traits = {};
};

constexpr SchedulerTraits kAllots{.allots = true};

template <typename T>
std::unique_ptr<Scheduler> make(const ScheduleOptions& options) {
  return std::make_unique<T>(options);
}

// Every scheduler braid knows, in the order listings show them. Add new ones here.
constexpr Entry kSchedulers[] = {
    {"sequential", make<SequentialScheduler>, {.intra_operator = true}},
    {"greedy", make<GreedyScheduler>},
    {"intra", make<IntraOpScheduler>, {.allots = true, .intra_operator = true}},
    {"moldable", make<MoldableScheduler>, kAllots},
    {"ios", make_ios_scheduler},
    {"ios-parallel", make_ios_parallel_scheduler},
    {"ios-merge", make_ios_merge_scheduler},
    {"ios-threads", make_ios_threads_scheduler, kAllots},
    {"optimal", make<OptimalScheduler>},
    {"optimal-threads", make<OptimalThreadsScheduler>, kAllots},
    {"lios", make_lios_scheduler<LiosVariant::kLios>},
    {"lios-rand1", make_lios_scheduler<LiosVariant::kRand1>},
    {"lios-rand2", make_lios_scheduler<LiosVariant::kRand2>},
    {"lios-rand", make_lios_scheduler<LiosVariant::kRand>},
    {"nimble", make<NimbleScheduler>},
    {"opara", make<OparaScheduler>},
    {"heft", make<HeftScheduler>},
    {"hios-lp", make_hios_lp_scheduler},
    {"hios-mr", make_hios_mr_scheduler},
    {"hios-lp-inter", make_hios_lp_inter_scheduler},
    {"hios-mr-inter", make_hios_mr_inter_scheduler},
};

const Entry& find(std::string_view name) {
  for (const Entry& e : kSchedulers)
    if (e.name == name) return e;
  std::string known;
  for (const Entry& e : kSchedulers) known += (known.empty() ? "" : ", ") + std::string(e.name);
  BRAID_THROW(ErrorCode::kNotFound, "unknown scheduler '", name, "' (known: ", known, ")");
}

}  // namespace

Schedule Scheduler::schedule(const ir::UnitGraph& graph) const {
  const std::unique_ptr<cost::CostModel> cost = cost::default_cost_model(graph);
  return schedule(graph, *cost, nullptr);
}

std::unique_ptr<Scheduler> make_scheduler(std::string_view name, const ScheduleOptions& options) {
  BRAID_CHECK(options.max_streams >= 0, ErrorCode::kInvalidArgument,
              "max_streams must be >= 0 (0 = unbounded), got ", options.max_streams);
  BRAID_CHECK(options.num_devices >= 1, ErrorCode::kInvalidArgument,
              "num_devices must be >= 1, got ", options.num_devices);
  BRAID_CHECK(options.max_group_size >= 0 && options.max_groups >= 0, ErrorCode::kInvalidArgument,
              "max_group_size and max_groups must be >= 0, got ", options.max_group_size, " and ",
              options.max_groups);
  BRAID_CHECK(options.cores >= 0, ErrorCode::kInvalidArgument,
              "cores must be >= 0 (0 = every core the cost model has), got ", options.cores);
  return find(name).make(options);
}

SchedulerTraits scheduler_traits(std::string_view name) {
  return find(name).traits;
}

std::vector<std::string_view> scheduler_names() {
  std::vector<std::string_view> names;
  for (const Entry& e : kSchedulers) names.push_back(e.name);
  return names;
}

}  // namespace braid::sched
