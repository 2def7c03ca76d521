// Operator merge on the CUDA executor (ios.txt §4.2; Compiler::compile_merge): a merge stage's
// convs as one cuDNN convolution must give what the convs give one by one, in every precision
// and layout, and what the reference executor gives. Without a GPU the tests skip after the
// parts that need none (the plans are lowered and checked to hold merges first). Written and
// compiled without a GPU; never run on one yet (2026-11-29).
#include <gtest/gtest.h>

#include <cstdio>
#include <random>

#include "cost/roofline.h"
#include "exec/cuda/cuda_compiler.h"
#include "exec/cuda/cuda_executor.h"
#include "exec/merge_test_model.h"
#include "exec/ref/ref_executor.h"
#include "models/loader.h"
#include "run_plan.h"
#include "sched/lower.h"
#include "sched/registry.h"
#include "tolerance.h"

namespace braid::exec {
namespace {

using Outputs = std::vector<std::vector<float>>;

void expect_agree(const Outputs& got, const Outputs& want, const testing::Tolerance& t,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    const testing::Agreement a = testing::compare(got[i], want[i], t);
    EXPECT_TRUE(a.ok) << what << ", output " << i << ": " << a.failure;
  }
}

std::vector<NodeId> ops_of(const ir::UnitGraph& units, std::string_view name) {
  const auto ops = units.unit(*units.find_unit(name)).ops;
  return {ops.begin(), ops.end()};
}

// The units a merge's ops come from, by name.
std::vector<std::vector<NodeId>> merge_ops(const ir::UnitGraph& units,
                                           std::vector<std::string_view> names) {
  std::vector<std::vector<NodeId>> ops;
  for (std::string_view n : names) ops.push_back(ops_of(units, n));
  return ops;
}

// Which merges compile_merge takes, by its checks (no GPU needed: a Compiler without a cuDNN
// handle answers), then on a GPU the merge compiled into one op.
TEST(CudaMerge, MergeIsOneOpOrRefusedWithAReason) {
  const testing::MergeTestModel m = testing::merge_test_model();
  const sched::ExecutionPlan plan =
      sched::lower(m.units, testing::merge_schedule(m.units, {"one", "three", "five"}));
  ASSERT_EQ(plan.merges.size(), 1u);
  const MemoryPlan no_memory;
  const cuda::Compiler checks(*m.graph, *m.weights, no_memory, {}, nullptr);
  EXPECT_EQ(checks.merge_refusal(merge_ops(m.units, {"one", "three", "five"})), "");
  // A BatchNormalization folded into its conv's weights merges too.
  EXPECT_EQ(checks.merge_refusal(merge_ops(m.units, {"one", "bn_conv"})), "");
  // cuDNN pads symmetrically: (3, 2, 1, 2) cannot be the merged conv's pads.
  EXPECT_EQ(checks.merge_refusal(merge_ops(m.units, {"one", "skewed"})),
            "'skewed' has asymmetric pads");
  // The Concat is no conv.
  EXPECT_EQ(checks.merge_refusal(merge_ops(m.units, {"one", "cat"})),
            "a unit that does not start with a Conv");
  EXPECT_EQ(checks.merge_refusal(merge_ops(m.units, {"one"})), "a merge of 1 units");

  if (cuda_device_count() == 0) GTEST_SKIP() << cuda_unavailable_reason();
  cuda::CompiledModel compiled(*m.graph, *m.weights, m.units, plan, {});
  ASSERT_EQ(compiled.merge_ops.size(), 1u);
  EXPECT_EQ(compiled.merge_ops[0].size(), 1u) << "the merge was not compiled into one op";
  std::string why;
  EXPECT_TRUE(
      compiled.compiler->compile_merge(merge_ops(m.units, {"one", "skewed"}), &why).empty());
  EXPECT_EQ(why, "'skewed' has asymmetric pads");
  EXPECT_EQ(compiled.compiler->compile_merge(merge_ops(m.units, {"one", "bn_conv"}), &why).size(),
            1u)
      << why;
}

// The 1x1 + 3x3 + 5x5 merge against the same convs one by one (same precision) and against the
// reference (FP32), in each precision, eager and replayed, and in 16-bit plans with every conv
// forced NCHW and forced NHWC (the merged output's windows then copied by cudaMemcpy2DAsync and
// by cudnnTransformTensor into NCHW outputs).
TEST(CudaMerge, MergedConvEqualsTheConvsOneByOne) {
  const testing::MergeTestModel m = testing::merge_test_model();
  const sched::Schedule merged = testing::merge_schedule(m.units, {"one", "three", "five"});
  const sched::Schedule one_by_one = sched::make_scheduler("sequential", {})->schedule(m.units);
  const Outputs expected = ref::run_reference(*m.graph, *m.weights, m.inputs);
  if (cuda_device_count() == 0) GTEST_SKIP() << cuda_unavailable_reason();
  for (Precision p : {Precision::kFp32, Precision::kTf32, Precision::kFp16, Precision::kBf16})
    for (cuda::ConvLayoutMode layout : {cuda::ConvLayoutMode::kNchw, cuda::ConvLayoutMode::kNhwc})
      for (bool graph : {false, true}) {
        const bool sixteen = p == Precision::kFp16 || p == Precision::kBf16;
        if (!sixteen && layout == cuda::ConvLayoutMode::kNhwc) continue;  // NCHW only
        const bool nhwc = layout == cuda::ConvLayoutMode::kNhwc;
        const std::string what = to_string(p) + (sixteen ? nhwc ? " NHWC" : " NCHW" : "") +
                                 (graph ? " graph" : " eager");
        SCOPED_TRACE(what);
        const CudaExecutorOptions o{.graph = graph, .precision = p, .conv_layout = layout};
        const Outputs got = testing::run_plan(*make_cuda_executor(o), m.graph, m.weights, m.units,
                                              merged, m.inputs);
        const Outputs want = testing::run_plan(*make_cuda_executor(o), m.graph, m.weights, m.units,
                                               one_by_one, m.inputs);
        // The same sums with zero terms added, but cuDNN may choose another algorithm for the
        // wider conv (FFT, Winograd): the precision's own tolerance, not bit equality.
        expect_agree(got, want, testing::tolerance(p), "merged vs one by one");
        expect_agree(got, expected, testing::tolerance(p), "merged vs reference");
      }
}

// Zoo models where ios-merge merges convs (as MergesOnCpu in tests/e2e/schedulers_cpu_test.cc):
// the plan must hold merges, so this cannot pass without running merged convolutions, and give
// the sequential schedule's outputs on the same GPU.
class CudaMergesZoo : public ::testing::TestWithParam<std::string> {};

TEST_P(CudaMergesZoo, MergedConvsEqualSequential) {
  models::LoadedModel m = models::load_model(GetParam(), {});
  auto weights = std::make_shared<const ir::Weights>(std::move(m.weights));
  cost::RooflineCostModel roofline(m.units);
  const sched::Schedule merged =
      sched::make_scheduler("ios-merge", {})->schedule(m.units, roofline);
  const sched::ExecutionPlan plan = sched::lower(m.units, merged);
  size_t merged_units = 0;
  for (const auto& merge : plan.merges) merged_units += merge.size();
  ASSERT_GE(plan.merges.size(), 1u) << "ios-merge merged nothing on " << GetParam();
  // Every merge passes compile_merge's checks: none falls back to its convs one by one.
  const MemoryPlan no_memory;
  const cuda::Compiler checks(*m.graph, *weights, no_memory, {}, nullptr);
  for (const auto& merge : plan.merges) {
    std::vector<std::vector<NodeId>> ops;
    for (UnitId u : merge) ops.emplace_back(m.units.unit(u).ops.begin(), m.units.unit(u).ops.end());
    EXPECT_EQ(checks.merge_refusal(ops), "") << "merge of " << m.units.unit(merge[0]).name;
  }
  std::printf("[ merges ] %s: %zu merges of %zu units\n", GetParam().c_str(), plan.merges.size(),
              merged_units);
  if (cuda_device_count() == 0) GTEST_SKIP() << cuda_unavailable_reason();
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<float> dist(-1, 1);
  Outputs inputs;
  for (ValueId v : m.graph->inputs()) {
    inputs.emplace_back(m.graph->value(v).type.elements());
    for (float& x : inputs.back()) x = dist(rng);
  }
  const sched::Schedule sequential =
      sched::make_scheduler("sequential", {})->schedule(m.units, roofline);
  for (bool graph : {false, true}) {
    SCOPED_TRACE(graph ? "graph" : "eager");
    const CudaExecutorOptions o{.graph = graph};
    const Outputs want =
        testing::run_plan(*make_cuda_executor(o), m.graph, weights, m.units, sequential, inputs);
    const Outputs got =
        testing::run_plan(*make_cuda_executor(o), m.graph, weights, m.units, merged, inputs);
    // As CudaExecutorZoo: within 1e-3 of each output's scale (FP32 FMA, other sums' order).
    expect_agree(got, want,
                 {.precision = Precision::kFp32, .max_error = 1e-3, .min_cosine = 0.9999},
                 "ios-merge vs sequential");
  }
}

INSTANTIATE_TEST_SUITE_P(Zoo, CudaMergesZoo,
                         ::testing::Values("inception_v3", "googlenet", "squeezenet"));

}  // namespace
}  // namespace braid::exec
