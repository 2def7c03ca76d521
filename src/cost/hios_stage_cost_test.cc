#include "cost/hios_stage_cost.h"

#include <gtest/gtest.h>

#include "base/error.h"

namespace braid::cost {
namespace {

ir::UnitGraph three_units() {
  return ir::UnitGraph::from_dag("three",
                                 {{.name = "a", .latency = Millis(2), .utilization = 0.5},
                                  {.name = "b", .latency = Millis(1), .utilization = 1.0},
                                  {.name = "c", .latency = Millis(4)}},
                                 {{.from = UnitId(0), .to = UnitId(2), .transfer = Millis(0.3)}});
}

TEST(HiosStageCost, IsTheSimulatorsFormula) {
  const ir::UnitGraph g = three_units();
  HiosStageCostModel cost(g);
  const std::vector<std::vector<UnitId>> one = {{UnitId(0)}};
  EXPECT_DOUBLE_EQ(Millis(cost.stage_latency(one)).count(), 2);  // alone: its latency
  // a || b: serialized 3, busy 2*0.5 + 1*1 = 2, slowest 2 -> 0.5*3 + 0.5*2 = 2.5
  const std::vector<std::vector<UnitId>> ab = {{UnitId(0)}, {UnitId(1)}};
  EXPECT_DOUBLE_EQ(Millis(cost.stage_latency(ab)).count(), 2.5);
  // (a then b) as one group: 3
  const std::vector<std::vector<UnitId>> seq = {{UnitId(0), UnitId(1)}};
  EXPECT_DOUBLE_EQ(Millis(cost.stage_latency(seq)).count(), 3);
  EXPECT_DOUBLE_EQ(Millis(cost.transfer_latency(g.edges()[0])).count(), 0.3);
  // Between the ideal overlap and full serialization, never below the slowest group alone.
  EXPECT_GE(cost.stage_latency(ab), cost.stage_lower_bound(ab));
}

TEST(HiosStageCost, NeedsLatencies) {
  const ir::UnitGraph g = ir::UnitGraph::from_dag("x", {{.name = "a"}}, {});
  EXPECT_THROW(HiosStageCostModel{g}, Error);
}

}  // namespace
}  // namespace braid::cost
