#include "cost/dag_cost.h"

#include <gtest/gtest.h>

#include "base/error.h"

namespace braid::cost {
namespace {

// a(10) -> {b(20), c(5) -> d(7)} -> e(1); edge a->b carries a 3 us transfer.
ir::UnitGraph diamond() {
  std::vector<ir::Unit> units(5);
  const char* names[] = {"a", "b", "c", "d", "e"};
  const double latency[] = {10, 20, 5, 7, 1};
  for (size_t i = 0; i < units.size(); ++i) {
    units[i].name = names[i];
    units[i].latency = Micros{latency[i]};
  }
  auto edge = [](size_t from, size_t to) {
    return ir::UnitEdge{make_id<UnitId>(from), make_id<UnitId>(to)};
  };
  std::vector<ir::UnitEdge> edges = {edge(0, 1), edge(0, 2), edge(2, 3), edge(1, 4), edge(3, 4)};
  edges[0].transfer = Micros{3};
  return ir::UnitGraph::from_dag("diamond", units, edges);
}

UnitId unit(const ir::UnitGraph& g, const char* name) {
  return *g.find_unit(name);
}

TEST(DagCostModel, StageIsTheSlowestGroupPlusOverhead) {
  ir::UnitGraph g = diamond();
  DagCostModel costs(g);
  EXPECT_EQ(costs.name(), "dag");
  EXPECT_EQ(costs.unit_latency(unit(g, "b")).count(), 20);
  std::vector<std::vector<UnitId>> stage = {{unit(g, "b")}, {unit(g, "c"), unit(g, "d")}};
  EXPECT_EQ(costs.stage_latency(stage).count(), 20);  // max(20, 5 + 7)
  std::vector<std::vector<UnitId>> chain = {{unit(g, "c"), unit(g, "d")}};
  EXPECT_EQ(costs.stage_latency(chain).count(), 12);

  DagCostModel with_sync(g, {.stage_overhead = Micros{2.5}});
  EXPECT_EQ(with_sync.stage_latency(stage).count(), 22.5);
  EXPECT_EQ(with_sync.stats().stage_queries, 1);
  EXPECT_EQ(with_sync.stats().measurements, 0);
  EXPECT_EQ(costs.stats().stage_queries, 2);
  EXPECT_EQ(costs.stats().unit_queries, 1);
}

TEST(DagCostModel, TransferComesFromTheEdge) {
  ir::UnitGraph g = diamond();
  DagCostModel costs(g);
  auto ab = g.edges()[*g.find_edge(unit(g, "a"), unit(g, "b"))];
  auto ac = g.edges()[*g.find_edge(unit(g, "a"), unit(g, "c"))];
  EXPECT_EQ(costs.transfer_latency(ab).count(), 3);
  EXPECT_EQ(costs.transfer_latency(ac).count(), 0);
}

// A unit without a latency would silently cost 0 and attract every scheduler's choice.
TEST(DagCostModel, RefusesUnitsWithoutLatency) {
  std::vector<ir::Unit> units(2);
  units[0].name = "a";
  units[0].latency = Micros{1};
  units[1].name = "b";
  ir::UnitGraph g = ir::UnitGraph::from_dag("partial", units, {});
  EXPECT_THROW(DagCostModel{g}, Error);
}

TEST(DagCostModel, RefusesEmptyStagesAndGroups) {
  ir::UnitGraph g = diamond();
  DagCostModel costs(g);
  EXPECT_THROW(costs.stage_latency({}), Error);
  std::vector<std::vector<UnitId>> empty_group = {{unit(g, "a")}, {}};
  EXPECT_THROW(costs.stage_latency(empty_group), Error);
}

}  // namespace
}  // namespace braid::cost
