// sched::issue_order: every step of the chosen blocks issued once, each lane's order kept,
// lanes interleaved by the plan's launch order, waits before and records after their launch.
#include "sched/lower.h"

#include <gtest/gtest.h>

#include <map>

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

}  // namespace
}  // namespace braid::sched
