// Allotments (schedule.h): the heaviest concurrent set against brute force, the validator's
// rule 9, and their JSON.
#include <gtest/gtest.h>

#include <random>

#include "models/dag_json.h"
#include "sched/concurrency.h"
#include "sched/schedule.h"
#include "sched/test_graphs.h"
#include "sched/validate.h"

namespace braid::sched {
namespace {

using testing::diamond;
using testing::first_error;
constexpr UnitId kA{0}, kB{1}, kC{2}, kD{3};

// Every subset of a random order on n <= 12 elements: the heaviest pairwise unordered one.
TEST(HeaviestConcurrentSet, EqualsBruteForce) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    const size_t n = 1 + rng() % 12;
    // A random DAG on 0..n-1 (edges go up), then its transitive closure.
    std::vector<std::vector<bool>> before(n, std::vector<bool>(n, false));
    const double density = (rng() % 100) / 100.0;
    for (size_t u = 0; u < n; ++u)
      for (size_t v = u + 1; v < n; ++v)
        before[u][v] = std::uniform_real_distribution<>(0, 1)(rng) < density * 0.5;
    for (size_t k = 0; k < n; ++k)
      for (size_t u = 0; u < n; ++u)
        for (size_t v = 0; v < n; ++v)
          if (before[u][k] && before[k][v]) before[u][v] = true;
    std::vector<int> weight(n);
    for (int& w : weight) w = 1 + static_cast<int>(rng() % 4);
    long best = 0;
    for (uint32_t mask = 0; mask < (1u << n); ++mask) {
      bool antichain = true;
      long sum = 0;
      for (size_t u = 0; u < n && antichain; ++u) {
        if (!(mask >> u & 1)) continue;
        sum += weight[u];
        for (size_t v = 0; v < n; ++v)
          if ((mask >> v & 1) && before[u][v]) antichain = false;
      }
      if (antichain) best = std::max(best, sum);
    }
    const ConcurrentSet got =
        heaviest_concurrent_set(weight, [&](size_t a, size_t b) { return before[a][b]; });
    ASSERT_EQ(got.threads, best) << "trial " << trial << ", n " << n;
    // The set it names is an antichain of that weight.
    long sum = 0;
    for (size_t u : got.units) {
      sum += weight[u];
      for (size_t v : got.units) EXPECT_FALSE(before[u][v]) << "trial " << trial;
    }
    EXPECT_EQ(sum, best) << "trial " << trial;
  }
}

Schedule stage_allotment(int cores, std::vector<int> middle) {
  Schedule s;
  s.cores = cores;
  s.stages = {{.groups = {{kA}}, .threads = {cores}},
              {.groups = {{kB}, {kC}}, .threads = std::move(middle)},
              {.groups = {{kD}}, .threads = {1}}};
  return s;
}

TEST(Allotment, StagesWithinCoresAreValid) {
  ir::UnitGraph g = diamond();
  EXPECT_EQ(first_error(g, stage_allotment(2, {1, 1})), "(valid)");
  EXPECT_EQ(first_error(g, stage_allotment(4, {3, 1})), "(valid)");
  const std::vector<int> threads = unit_threads(stage_allotment(4, {3, 1}), 4, 1);
  EXPECT_EQ(threads, (std::vector<int>{4, 3, 1, 1}));
}

// b and c run at once: 2 + 1 threads on 2 cores oversubscribe them.
TEST(Allotment, RejectsOversubscribedStage) {
  ir::UnitGraph g = diamond();
  EXPECT_EQ(first_error(g, stage_allotment(2, {2, 1})),
            "cores: units that may run at once ask for 3 threads, more than the 2 cores of the "
            "plan: 'b' (2), 'c' (1)");
}

TEST(Allotment, StreamsCountWhatMayOverlap) {
  ir::UnitGraph g = diamond();
  Schedule s;
  s.cores = 2;
  s.lanes = {{.stream = 0, .units = {kA, kB, kD}, .threads = {2, 1, 2}},
             {.stream = 1, .units = {kC}, .threads = {1}}};
  s.syncs = {{kA, kC}, {kC, kD}};
  EXPECT_EQ(first_error(g, s), "(valid)");  // a and d at 2 threads run alone
  s.lanes[1].threads = {2};                 // c (2) may overlap b (1)
  EXPECT_EQ(first_error(g, s),
            "cores: units that may run at once ask for 3 threads, more than the 2 cores of the "
            "plan: 'b' (1), 'c' (2)");
  s.lanes[1].threads = {1};
  s.syncs = {{kA, kC}};  // c no longer before d: c (1) may overlap d (2); and the edge c -> d
  EXPECT_NE(first_error(g, s), "(valid)");
}

TEST(Allotment, RejectsMalformedThreads) {
  ir::UnitGraph g = diamond();
  Schedule s = stage_allotment(2, {1});
  EXPECT_EQ(first_error(g, s),
            "stages[1].threads: has 1 entries for 2 groups (with 'cores', every stage and stream "
            "gives its threads)");
  s = stage_allotment(2, {1, 3});
  EXPECT_EQ(first_error(g, s), "stages[1].threads[1]: must be from 1 to cores (2), got 3");
  s = stage_allotment(2, {0, 1});
  EXPECT_EQ(first_error(g, s), "stages[1].threads[0]: must be from 1 to cores (2), got 0");
  s = stage_allotment(2, {1, 1});
  s.cores = 0;
  EXPECT_EQ(first_error(g, s),
            "stages[0].threads: an allotment needs the cores it shares ('cores' at the top)");
  s.cores = -1;
  bool named = false;
  for (const Diagnostic& d : check(g, s))
    named = named || d.message == "cores: must be >= 1, got -1";
  EXPECT_TRUE(named);
}

TEST(Allotment, RoundTripsThroughJson) {
  ir::UnitGraph g = diamond();
  Schedule s = stage_allotment(2, {1, 1});
  const nlohmann::json j = to_json(s, g);
  EXPECT_EQ(j["cores"], 2);
  EXPECT_EQ(j["stages"][1]["threads"], nlohmann::json::array({1, 1}));
  Schedule back = schedule_from_json(j, g);
  EXPECT_EQ(back.cores, 2);
  EXPECT_EQ(unit_threads(back, 4, 0), unit_threads(s, 4, 0));
  // Old schedules carry no allotment and keep their meaning.
  Schedule plain;
  plain.stages = {{.groups = {{kA}}}, {.groups = {{kB}, {kC}}}, {.groups = {{kD}}}};
  const nlohmann::json pj = to_json(plain, g);
  EXPECT_FALSE(pj.contains("cores"));
  EXPECT_FALSE(schedule_from_json(pj, g).has_allotment());
  EXPECT_EQ(unit_threads(plain, 4, 3), (std::vector<int>(4, 3)));
}

}  // namespace
}  // namespace braid::sched
