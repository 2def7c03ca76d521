// sched::lower refuses invalid schedules with the validator's message; sched::issue_order: every
// step of the chosen blocks issued once, each lane's order kept, lanes interleaved by the plan's
// launch order, waits before and records after their launch.
#include "sched/lower.h"

#include <gtest/gtest.h>

#include <map>

#include "base/error.h"
#include "cost/roofline.h"
#include "models/loader.h"
#include "sched/registry.h"

namespace braid::sched {
namespace {

TEST(IssueOrder, IssuesEveryStepOnceInLaneOrderByLaunchOrder) {
  models::LoadOptions load;
  load.with_weights = false;
  const models::LoadedModel m = models::load_model("inception_v3", load);
  cost::RooflineCostModel roofline(m.units);
  for (const char* algo : {"sequential", "greedy", "ios", "lios", "opara"}) {
    SCOPED_TRACE(algo);
    const Schedule s = make_scheduler(algo, {})->schedule(m.units, roofline);
    const ExecutionPlan plan = lower(m.units, s);
    std::map<UnitId, size_t> position;
    for (size_t i = 0; i < plan.launch_order.size(); ++i) position[plan.launch_order[i]] = i;
    std::vector<uint32_t> next(plan.lanes.size(), 0);
    size_t last_launch = 0;
    for (const IssueSegment& seg : issue_order(plan)) {
      ASSERT_LT(seg.lane, plan.lanes.size());
      EXPECT_EQ(seg.begin, next[seg.lane]);  // each lane's steps in order, none skipped
      next[seg.lane] = seg.end;
      size_t launches = 0;
      for (uint32_t i = seg.begin; i < seg.end; ++i) {
        const Step& step = plan.lanes[seg.lane].steps[i];
        if (const auto* launch = std::get_if<LaunchStep>(&step)) {
          ++launches;
          // Segments come in launch order.
          EXPECT_GE(position.at(launch->unit) + 1, last_launch);
          last_launch = position.at(launch->unit) + 1;
        } else if (std::holds_alternative<WaitStep>(step)) {
          EXPECT_EQ(launches, 0u) << "a wait after the launch of its segment";
        } else {
          EXPECT_EQ(launches, 1u) << "a record before the launch of its segment";
        }
      }
      EXPECT_LE(launches, 1u);
    }
    for (size_t li = 0; li < plan.lanes.size(); ++li)
      EXPECT_EQ(next[li], plan.lanes[li].steps.size()) << "lane " << li;
  }
}

TEST(IssueOrder, OneBlockIssuesOnlyItsSteps) {
  models::LoadOptions load;
  load.with_weights = false;
  const models::LoadedModel m = models::load_model("inception_v3", load);
  cost::RooflineCostModel roofline(m.units);
  const ExecutionPlan plan = lower(m.units, make_scheduler("ios", {})->schedule(m.units, roofline));
  ASSERT_GT(plan.num_blocks, 1u);
  size_t total = 0;
  for (size_t b = 0; b < plan.num_blocks; ++b)
    for (const IssueSegment& seg : issue_order(plan, b, b + 1)) {
      EXPECT_GE(seg.begin, plan.lanes[seg.lane].block_begin[b]);
      EXPECT_LE(seg.end, plan.lanes[seg.lane].block_begin[b + 1]);
      total += seg.end - seg.begin;
    }
  size_t steps = 0;
  for (const PlanLane& lane : plan.lanes) steps += lane.steps.size();
  EXPECT_EQ(total, steps);
}

// What `braid run --schedule` once aborted on (an assertion in lower): each is now
// braid::Error(kInvalidSchedule) naming the problem, as `braid validate` says it.
TEST(Lower, RefusesInvalidSchedulesWithTheValidatorsMessage) {
  models::LoadOptions load;
  load.with_weights = false;
  const models::LoadedModel m = models::load_model("squeezenet", load);
  cost::RooflineCostModel roofline(m.units);
  const Schedule sequential = make_scheduler("sequential", {})->schedule(m.units, roofline);
  const std::vector<UnitId>& units = sequential.lanes.at(0).units;
  ASSERT_GT(units.size(), 4u);

  Schedule duplicate = sequential;
  duplicate.lanes[0].units.push_back(units[0]);

  Schedule reversed = sequential;
  reversed.lanes.clear();
  for (auto u = units.rbegin(); u != units.rend(); ++u)
    reversed.stages.push_back({.device = 0, .kind = StageKind::kConcurrent, .groups = {{*u}}});

  Schedule cycle = sequential;  // two streams whose waits form a cycle: a deadlock
  cycle.lanes = {{.device = 0, .stream = 0, .units = {units.begin(), units.begin() + 2}},
                 {.device = 0, .stream = 1, .units = {units.begin() + 2, units.end()}}};
  cycle.syncs = {{units[1], units[2]}, {units[3], units[0]}};

  for (const auto& [name, s, expected] :
       {std::tuple{"duplicate", duplicate, "is scheduled 2 times"},
        std::tuple{"reversed", reversed, "goes backwards"},
        std::tuple{"cycle", cycle, "form a cycle"}}) {
    SCOPED_TRACE(name);
    try {
      lower(m.units, s);
      ADD_FAILURE() << "lowered an invalid schedule";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidSchedule);
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace braid::sched
