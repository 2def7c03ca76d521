#include "profile/cpu_profiler.h"

#include <gtest/gtest.h>

#include <fstream>
#include <optional>

#include "base/error.h"
#include "cost/subgraph.h"
#include "exec/cpu/layout.h"
#include "models/zoo.h"
#include "test_env.h"

namespace braid::profile {
namespace {

struct Model {
  std::shared_ptr<const ir::Graph> graph;
  std::shared_ptr<const ir::Weights> weights;
  ir::UnitGraph units;
};

Model make_model(const std::string& name, int64_t image_size) {
  Model m;
  m.graph =
      std::make_shared<const ir::Graph>(models::build_zoo_model(name, {.image_size = image_size}));
  m.weights = std::make_shared<const ir::Weights>(ir::Weights::generate(*m.graph, 7));
  m.units = ir::fuse(m.graph);
  return m;
}

// Few runs keep the test fast; no retries, since the test machine is often busy.
CpuProfilerOptions fast_options(const std::filesystem::path& cache_dir) {
  return {.warmup = 1, .runs = 3, .number = 1, .cache_dir = cache_dir, .suspect_retries = 0};
}

std::filesystem::path fresh_dir(const std::string& name) {
  auto dir = testing::scratch_dir() / name;
  std::filesystem::remove_all(dir);
  return dir;
}

// Two units of squeezenet that can run concurrently: the two expands of the `nth` fire module.
std::vector<std::vector<UnitId>> two_expands(const ir::UnitGraph& units, int nth = 0) {
  for (size_t i = 0; i < units.num_units(); ++i) {
    auto succ = units.successors(make_id<UnitId>(i));
    if (succ.size() == 2 && nth-- == 0) return {{succ[0]}, {succ[1]}};
  }
  ADD_FAILURE() << "no such fork in squeezenet";
  return {};
}

// A stage runs in the layouts its values have in the whole model, boundaries included: a unit
// reading a conv's output reads it nhwc, as in `braid run`, not plain (issue 15: measured
// with plain boundaries, a model predicted at 17.6 ms ran 260 ms).
TEST(CpuProfiler, MeasuresStagesInTheirInModelLayouts) {
  Model m = make_model("squeezenet", 64);
  const auto model_layouts =
      exec::cpu::choose_layouts(*m.graph, {.blocked = exec::TensorLayout::kNhwc});
  // The first unit whose data input the model keeps blocked.
  std::optional<UnitId> unit;
  for (size_t u = 0; u < m.units.num_units() && !unit; ++u) {
    const ir::Node& head = m.graph->node(m.units.unit(make_id<UnitId>(u)).ops.front());
    if (model_layouts[index(head.inputs[0])] == exec::TensorLayout::kNhwc)
      unit = make_id<UnitId>(u);
  }
  ASSERT_TRUE(unit.has_value());
  const cost::ExtractedStage stage = cost::extract(*m.graph, m.units, std::vector{*unit});
  ASSERT_EQ(stage.graph->inputs().size(), 1u);
  const ValueId stage_input = stage.graph->inputs()[0];

  auto options = fast_options(fresh_dir("layouts"));
  options.layout = exec::TensorLayout::kNhwc;
  const CpuProfiler nhwc(m.units, m.weights, options);
  EXPECT_EQ(nhwc.stage_layouts(*stage.graph)[index(stage_input)], exec::TensorLayout::kNhwc);
  EXPECT_GT(nhwc.profile_unit(*unit).median.count(), 0);  // runs with an nhwc graph input

  options.layout = exec::TensorLayout::kPlain;
  const CpuProfiler plain(m.units, m.weights, options);
  for (exec::TensorLayout l : plain.stage_layouts(*stage.graph))
    EXPECT_EQ(l, exec::TensorLayout::kPlain);
  EXPECT_NE(plain.machine().executor, nhwc.machine().executor);  // cached apart
}

TEST(CpuProfiler, MeasuresPositiveLatenciesAndCachesThem) {
  Model m = make_model("squeezenet", 64);
  auto dir = fresh_dir("profiler");
  const auto stage = two_expands(m.units);
  Micros first_unit, first_stage;
  {
    CpuProfiler profiler(m.units, m.weights, fast_options(dir));
    EXPECT_EQ(profiler.name(), "cpu_profiler");
    first_unit = profiler.unit_latency(UnitId{0});
    EXPECT_GT(first_unit.count(), 0);
    cost::Measurement full = profiler.profile_unit(UnitId{0});
    EXPECT_LE(full.p10, full.median);
    EXPECT_LE(full.median, full.p90);
    EXPECT_EQ(full.runs, 3);
    first_stage = profiler.stage_latency(stage);
    EXPECT_GT(first_stage.count(), 0);
    // The stage, and its two units for the lower bound it never reports less than.
    EXPECT_EQ(profiler.stats().measurements, 4);
    EXPECT_GE(first_stage, profiler.stage_lower_bound(stage));

    // Asking again measures nothing, and answers the same.
    EXPECT_EQ(profiler.unit_latency(UnitId{0}), first_unit);
    std::vector<std::vector<UnitId>> swapped = {stage[1], stage[0]};
    EXPECT_EQ(profiler.stage_latency(swapped), first_stage);
    // A one-unit stage is the unit.
    std::vector<std::vector<UnitId>> alone = {{UnitId{0}}};
    EXPECT_EQ(profiler.stage_latency(alone), first_unit);
    cost::CostStats stats = profiler.stats();
    EXPECT_EQ(stats.measurements, 4);
    // 2 direct; 2 per bound of the two-unit stage (two stage_latency, one stage_lower_bound),
    // and 2 when it was first measured (priced from its units for the measuring budget).
    EXPECT_EQ(stats.unit_queries, 2 + 4 * 2);
    EXPECT_EQ(stats.stage_queries, 3);
    EXPECT_EQ(stats.cache_hits, 0);
  }
  // A new profiler on the same cache directory measures nothing either.
  CpuProfiler again(m.units, m.weights, fast_options(dir));
  EXPECT_EQ(again.unit_latency(UnitId{0}), first_unit);
  EXPECT_EQ(again.stage_latency(stage), first_stage);
  EXPECT_EQ(again.stats().measurements, 0);
  EXPECT_EQ(again.stats().cache_hits, 4);

  // Threads per stream are part of the key.
  auto two_threads = fast_options(dir);
  two_threads.threads_per_stream = 2;
  CpuProfiler wider(m.units, m.weights, two_threads);
  wider.unit_latency(UnitId{0});
  EXPECT_EQ(wider.stats().measurements, 1);
}

// Once the budget is spent, a stage of several units not measured yet is priced from its units
// at the ratio the measured stages showed, counted as an estimate and never written to disk.
TEST(CpuProfiler, PricesStagesFromTheirUnitsOnceTheBudgetIsSpent) {
  Model m = make_model("squeezenet", 64);
  auto dir = fresh_dir("budget");
  const auto first = two_expands(m.units, 0), second = two_expands(m.units, 1);
  auto options = fast_options(dir);
  options.stage_budget_s = 1e-9;  // spent by the first stage measured
  {
    CpuProfiler profiler(m.units, m.weights, options);
    const Micros measured = profiler.profile_stage(first).median;
    const double ratio = measured / profiler.stage_lower_bound(first);
    const int64_t measurements = profiler.stats().measurements;  // the stage and its 2 units
    EXPECT_EQ(measurements, 3);
    EXPECT_EQ(profiler.stats().estimates, 0);
    const cost::Measurement priced = profiler.profile_stage(second);
    EXPECT_EQ(profiler.stats().estimates, 1);
    EXPECT_EQ(profiler.stats().measurements, measurements + 2);  // only the second's units
    EXPECT_NEAR(priced.median.count(), profiler.stage_lower_bound(second).count() * ratio,
                1e-6 * priced.median.count());
    EXPECT_EQ(priced.runs, 0);  // not measured
    // Asked again, the same price: a search sees one price per stage.
    EXPECT_EQ(profiler.profile_stage(second).median, priced.median);
    EXPECT_EQ(profiler.stats().estimates, 1);
    // Units alone are always measured.
    EXPECT_GT(profiler.unit_latency_at(second[0][0], 1).count(), 0);
  }
  // On disk are the measurements only: without a budget the second stage gets measured.
  options.stage_budget_s = 0;
  CpuProfiler unlimited(m.units, m.weights, options);
  EXPECT_GT(unlimited.profile_stage(second).runs, 0);
  EXPECT_EQ(unlimited.stats().estimates, 0);
  EXPECT_EQ(unlimited.stats().measurements, 1);  // the stage itself
}

TEST(CpuProfiler, WorksWithoutTheDiskCache) {
  Model m = make_model("squeezenet", 64);
  auto options = fast_options({});
  options.use_cache = false;
  CpuProfiler profiler(m.units, m.weights, options);
  EXPECT_EQ(profiler.cache(), nullptr);
  EXPECT_GT(profiler.unit_latency(UnitId{1}).count(), 0);
  profiler.unit_latency(UnitId{1});
  EXPECT_EQ(profiler.stats().measurements, 1);
}

// A merge stage (ios.txt §4.2) is measured as the CPU executor runs it, one merged oneDNN
// convolution (a 1x1 and a 3x3 expand of a fire module on their shared squeeze output): its own
// measurement, not the units' sum nor the concurrent stage of the same units, never below its
// slowest unit alone; units that cannot merge are refused as the validator refuses them.
TEST(CpuProfiler, MeasuresAMergeAsOneMergedKernel) {
  Model m = make_model("squeezenet", 64);
  auto options = fast_options({});
  options.use_cache = false;
  CpuProfiler profiler(m.units, m.weights, options);
  const auto groups = two_expands(m.units);
  const std::vector<UnitId> merge = {groups[0][0], groups[1][0]};
  const Micros merged = profiler.merge_latency(merge);
  EXPECT_EQ(profiler.stats().measurements, 3);  // the merge and, for its bound, its two units
  const Micros slowest = std::max(profiler.unit_latency(merge[0]), profiler.unit_latency(merge[1]));
  EXPECT_EQ(profiler.merge_lower_bound(merge), slowest);
  EXPECT_GE(merged, slowest);
  profiler.merge_latency(merge);
  EXPECT_EQ(profiler.stats().measurements, 3);  // remembered
  profiler.stage_latency(groups);
  EXPECT_EQ(profiler.stats().measurements, 4);  // the concurrent stage is another measurement
  // A unit and its consumer share no input: no merged kernel, the schedule is refused.
  const UnitId producer = m.units.predecessors(merge[0])[0];
  try {
    profiler.merge_latency(std::vector<UnitId>{producer, merge[0]});
    ADD_FAILURE() << "a merge of a unit and its consumer was measured";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidSchedule) << e.what();
  }
}

// Identical Inception-C blocks (mixed_6c, mixed_6d) are measured once.
TEST(CpuProfiler, IdenticalUnitsAreMeasuredOnce) {
  Model m = make_model("inception_v3", 107);
  CpuProfiler profiler(m.units, m.weights, fast_options(fresh_dir("identical")));
  profiler.unit_latency(*m.units.find_unit("mixed_6c/branch7x7dbl_3"));
  profiler.unit_latency(*m.units.find_unit("mixed_6d/branch7x7dbl_3"));
  EXPECT_EQ(profiler.stats().measurements, 1);
}

TEST(CpuProfiler, CorruptCacheIsTolerated) {
  Model m = make_model("squeezenet", 64);
  auto dir = fresh_dir("corrupt");
  std::filesystem::path path;
  {
    CpuProfiler probe(m.units, m.weights, fast_options(dir));
    path = probe.cache()->path();
  }
  std::filesystem::create_directories(dir);
  std::ofstream(path) << "{ this is not json";
  {
    CpuProfiler profiler(m.units, m.weights, fast_options(dir));
    EXPECT_EQ(profiler.cache()->warnings().size(), 1u);
    EXPECT_GT(profiler.unit_latency(UnitId{0}).count(), 0);
    EXPECT_EQ(profiler.stats().measurements, 1);
  }
  CpuProfiler after(m.units, m.weights, fast_options(dir));
  EXPECT_TRUE(after.cache()->warnings().empty());
  after.unit_latency(UnitId{0});
  EXPECT_EQ(after.stats().measurements, 0);
}

// Groups that depend on each other are not a stage: measuring them would time a deadlock or a
// race, so the profiler refuses them by name.
TEST(CpuProfiler, RefusesDependentGroupsAndDags) {
  Model m = make_model("squeezenet", 64);
  CpuProfiler profiler(m.units, m.weights, fast_options(fresh_dir("dependent")));
  std::vector<std::vector<UnitId>> dependent = {{UnitId{0}}, {m.units.successors(UnitId{0})[0]}};
  EXPECT_THROW(profiler.stage_latency(dependent), Error);
  EXPECT_THROW(profiler.stage_latency({}), Error);

  std::vector<ir::Unit> units(1);
  units[0].name = "a";
  units[0].latency = Micros{1};
  ir::UnitGraph dag = ir::UnitGraph::from_dag("dag", units, {});
  EXPECT_THROW(CpuProfiler(dag, m.weights), Error);
}

}  // namespace
}  // namespace braid::profile
