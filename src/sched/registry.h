// The Scheduler interface and the registry of schedulers, an explicit ordered list (like
// oneDNN's impl lists): no registration behind anyone's back.
//
//   std::unique_ptr<Scheduler> s = make_scheduler("greedy", {.max_streams = 8});
//   Schedule plan = s->schedule(units);   // valid by validate.h's rules
//   for (std::string_view name : scheduler_names()) ...
//
// Options are typed and given at construction; schedule() is const and deterministic, so one
// Scheduler may serve many graphs and threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "ir/unit_graph.h"
#include "sched/schedule.h"

namespace braid::sched {

struct ScheduleOptions {
  int max_streams = 10;  // streams per device (IOS's runtime has 10); 0 = unbounded
  int num_devices = 1;
  uint64_t seed = 0;  // for schedulers that randomize; ties are otherwise broken by UnitId
};

class Scheduler {
 public:
  virtual ~Scheduler() = default;
  virtual std::string_view name() const = 0;
  // Later schedulers also take the platform and a cost model (STYLE.md §2); the trivial ones
  // need neither.
  virtual Schedule schedule(const ir::UnitGraph& graph) const = 0;
};

// Throws braid::Error: kNotFound for an unknown name (the message lists the known ones),
// kInvalidArgument for bad options.
std::unique_ptr<Scheduler> make_scheduler(std::string_view name,
                                          const ScheduleOptions& options = {});
// The known names, in registry order.
std::vector<std::string_view> scheduler_names();

}  // namespace braid::sched
