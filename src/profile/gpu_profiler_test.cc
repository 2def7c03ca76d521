// The GPU profiler: measured stages on a GPU (skips without one), and a clear error elsewhere.
#include "profile/gpu_profiler.h"

#include <gtest/gtest.h>

#include "base/error.h"
#include "exec/cuda/cuda_executor.h"
#include "models/loader.h"

namespace braid::profile {
namespace {

models::LoadedModel squeezenet() {
  models::LoadOptions load;
  load.zoo.image_size = 64;
  return models::load_model("squeezenet", load);
}

TEST(GpuProfiler, WithoutADeviceSaysNoCudaDevice) {
  if (exec::cuda_device_count() > 0) GTEST_SKIP() << "a CUDA device is present";
  models::LoadedModel m = squeezenet();
  auto weights = std::make_shared<const ir::Weights>(std::move(m.weights));
  try {
    GpuProfiler profiler(m.units, weights);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_NE(std::string(e.what()).find("no CUDA device"), std::string::npos) << e.what();
  }
}

TEST(GpuProfiler, MeasuresStagesOnTheGpu) {
  if (exec::cuda_device_count() == 0) GTEST_SKIP() << exec::cuda_unavailable_reason();
  models::LoadedModel m = squeezenet();
  auto weights = std::make_shared<const ir::Weights>(std::move(m.weights));
  GpuProfiler profiler(m.units, weights, {.use_cache = false});
  for (size_t u = 0; u < m.units.num_units(); ++u)
    EXPECT_GT(profiler.unit_latency(UnitId(u)).count(), 0) << m.units.unit(UnitId(u)).name;
  // Two independent units (the two expand convs of the first fire module) as a stage: never
  // below the slower one alone (the bound), and asked twice, measured once.
  const auto a = m.units.find_unit("fire2/expand1x1"), b = m.units.find_unit("fire2/expand3x3");
  ASSERT_TRUE(a && b);
  const std::vector<std::vector<UnitId>> stage = {{*a}, {*b}};
  const Micros t = profiler.stage_latency(stage);
  EXPECT_GE(t, std::max(profiler.unit_latency(*a), profiler.unit_latency(*b)));
  const int64_t measured = profiler.stats().measurements;
  EXPECT_EQ(profiler.stage_latency(stage), t);
  EXPECT_EQ(profiler.stats().measurements, measured);
}

}  // namespace
}  // namespace braid::profile
