#include "sched/trivial.h"

#include <gtest/gtest.h>

#include <algorithm>

#include <random>

#include "base/error.h"
#include "ir/analysis.h"
#include "models/random_dag.h"
#include "models/zoo.h"
#include "sched/test_graphs.h"
#include "sched/validate.h"

namespace braid::sched {
namespace {

using testing::random_graph;

std::string errors_of(const ir::UnitGraph& g, const Schedule& s) {
  std::string out;
  for (const Diagnostic& d : check(g, s)) out += to_string(d) + "\n";
  return out;
}

size_t longest_path_units(const ir::UnitGraph& g) {
  std::vector<double> one(g.num_units(), 1.0);
  return static_cast<size_t>(ir::critical_path(g, one).length + 0.5);
}

TEST(Sequential, OneStreamInIdOrder) {
  ir::UnitGraph g = random_graph(1);
  Schedule s = SequentialScheduler().schedule(g);
  ASSERT_EQ(s.lanes.size(), 1u);
  EXPECT_EQ(s.algorithm, "sequential");
  EXPECT_EQ(s.model, g.name());
  EXPECT_EQ(s.lanes[0].units.size(), g.num_units());
  EXPECT_TRUE(ir::is_topological(g, s.lanes[0].units));
  EXPECT_TRUE(check(g, s).empty());
}

TEST(Greedy, DiamondIsThreeStages) {
  ir::UnitGraph g = models::random_dag({.ops = 4, .layers = 3, .edges = 4, .seed = 0});
  Schedule s = GreedyScheduler().schedule(g);
  ASSERT_EQ(s.stages.size(), 3u);
  EXPECT_EQ(s.stages[1].groups, (std::vector<std::vector<UnitId>>{{UnitId{1}}, {UnitId{2}}}));
  EXPECT_EQ(s.stats["stages"], 3);
}

// Property test: both schedulers give valid schedules on 1,000 seeded random DAGs; greedy's
// stages are never wider than max_streams, and with unbounded streams its stage count is the
// longest path (in units), the fewest stages any stage schedule can have.
TEST(Trivial, ValidOnRandomDags) {
  for (uint64_t seed = 0; seed < 1000; ++seed) {
    ir::UnitGraph g = random_graph(seed);
    SCOPED_TRACE("seed " + std::to_string(seed) + " (" + g.name() + ")");
    Schedule seq = SequentialScheduler().schedule(g);
    ASSERT_EQ(errors_of(g, seq), "");
    const int width = 1 + static_cast<int>(seed % 4);
    Schedule narrow = GreedyScheduler({.max_streams = width}).schedule(g);
    ASSERT_EQ(errors_of(g, narrow), "");
    for (const Stage& st : narrow.stages) ASSERT_LE(st.groups.size(), static_cast<size_t>(width));
    Schedule wide = GreedyScheduler({.max_streams = 0}).schedule(g);
    ASSERT_EQ(errors_of(g, wide), "");
    ASSERT_EQ(wide.stages.size(), longest_path_units(g));
    ASSERT_GE(narrow.stages.size(), wide.stages.size());
  }
}

// The zoo models that build (their builders live elsewhere) get valid schedules too.
TEST(Trivial, ValidOnZooModels) {
  int built = 0;
  for (const models::ZooEntry& entry : models::zoo()) {
    std::shared_ptr<const ir::Graph> graph;
    try {
      graph = std::make_shared<const ir::Graph>(entry.build({}));
    } catch (const Error&) {
      continue;
    }
    ++built;
    SCOPED_TRACE(std::string(entry.name));
    ir::UnitGraph g = ir::fuse(graph);
    EXPECT_EQ(errors_of(g, SequentialScheduler().schedule(g)), "");
    Schedule greedy = GreedyScheduler().schedule(g);
    EXPECT_EQ(errors_of(g, greedy), "");
    EXPECT_EQ(GreedyScheduler({.max_streams = 0}).schedule(g).stages.size(), longest_path_units(g));
  }
  if (built == 0) GTEST_SKIP() << "no zoo model builds yet";
}

TEST(Registry, ListsAndMakesSchedulers) {
  // The algorithms, all of them (the order is the registry's).
  const std::vector<std::string_view> names = scheduler_names();
  for (std::string_view name : {"sequential", "greedy", "ios", "ios-parallel", "ios-merge", "lios",
                                "lios-rand1", "lios-rand2", "lios-rand", "nimble", "opara", "heft",
                                "optimal", "intra", "moldable", "ios-threads", "optimal-threads"})
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
  for (std::string_view name : scheduler_names()) EXPECT_EQ(make_scheduler(name)->name(), name);
  ir::UnitGraph g = random_graph(7);
  EXPECT_EQ(make_scheduler("greedy", {.max_streams = 2})->schedule(g).stages.size(),
            GreedyScheduler({.max_streams = 2}).schedule(g).stages.size());
}

// The traits callers choose by (tune::auto_schedule) say what each scheduler's plans are.
TEST(Registry, TraitsSayWhatTheSchedulesAre) {
  const ir::UnitGraph g = random_graph(7, 6, 10);  // small enough for the exact searches
  int allotting = 0;
  for (std::string_view name : scheduler_names()) {
    const SchedulerTraits traits = scheduler_traits(name);
    const Schedule s = make_scheduler(name, {.cores = 2})->schedule(g);
    EXPECT_EQ(s.has_allotment(), traits.allots) << name;
    allotting += traits.allots;
    if (!traits.intra_operator) continue;
    EXPECT_LE(s.lanes.size(), 1u) << name;
    for (const Stage& stage : s.stages)
      EXPECT_TRUE(stage.groups.size() == 1 && stage.groups[0].size() == 1) << name;
  }
  EXPECT_EQ(allotting, 4);  // intra, moldable, ios-threads, optimal-threads
  EXPECT_TRUE(scheduler_traits("sequential").intra_operator);
  EXPECT_FALSE(scheduler_traits("nimble").intra_operator);
  EXPECT_THROW(scheduler_traits("gredy"), Error);
}

// A misspelt --algorithm must say what exists instead of failing later or silently defaulting.
TEST(Registry, UnknownNameListsTheKnownOnes) {
  try {
    make_scheduler("gredy");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("unknown scheduler 'gredy' (known: sequential, greedy, ", 0), 0u) << what;
  }
  try {
    make_scheduler("greedy", {.max_streams = -1});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace braid::sched
