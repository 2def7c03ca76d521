// Issue 29: the exported torchvision models and BERT (scripts/export_torchvision.py: NAME.onnx and
// NAME.INPUT.npy, the seeded inputs) on cuda:0 in FP32, TF32, FP16 and BF16, under `ios` with
// graph replay, against braid's CPU executor in FP32 on the same inputs. The CPU executor is held
// to ONNX Runtime on these files by exported_models_test, so ONNX Runtime is the oracle at one
// remove (the GPU machines have no ONNX Runtime). FP32 within 1e-3 of each output's scale (as
// CudaExecutorZoo), the others within tests/testing/tolerance.h's bounds.
//
//   BRAID_EXPORTED_MODELS_DIR=DIR   where the files are (default: the source tree's models/)
//   BRAID_EXPORTED_MODELS=a,b       only these (default: every NAME.onnx there)
//
// Skips without a GPU, and without the files (`make models`, or on a GPU machine `python3
// scripts/export_torchvision.py --out DIR resnet50 vit_b_16 ...`: scripts/gpu_check.sh's
// `exported` part). Written 2026-11-29; never run on a GPU yet.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "cost/roofline.h"
#include "exec/cpu/cpu_executor.h"
#include "exec/cuda/cuda_executor.h"
#include "models/loader.h"
#include "run_plan.h"
#include "sched/registry.h"
#include "test_env.h"
#include "tolerance.h"
#include "tune/tensor_files.h"

namespace braid {
namespace {

namespace fs = std::filesystem;
using Outputs = std::vector<std::vector<float>>;

fs::path exported_dir() {
  const char* dir = std::getenv("BRAID_EXPORTED_MODELS_DIR");
  return dir != nullptr ? fs::path(dir) : testing::source_dir() / "models";
}

// The models to run: BRAID_EXPORTED_MODELS, else every NAME.onnx in the directory, sorted.
std::vector<std::string> exported_models() {
  std::vector<std::string> names;
  if (const char* only = std::getenv("BRAID_EXPORTED_MODELS")) {
    std::stringstream s(only);
    for (std::string name; std::getline(s, name, ',');)
      if (!name.empty()) names.push_back(name);
    return names;
  }
  if (!fs::is_directory(exported_dir())) return names;
  for (const auto& entry : fs::directory_iterator(exported_dir()))
    if (entry.path().extension() == ".onnx") names.push_back(entry.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(ExportedModelsCuda, MatchTheCpuExecutorInEveryPrecision) {
  if (exec::cuda_device_count() == 0) GTEST_SKIP() << exec::cuda_unavailable_reason();
  const std::vector<std::string> names = exported_models();
  if (names.empty())
    GTEST_SKIP() << "no exported models in " << exported_dir()
                 << " (make models, or scripts/export_torchvision.py --out DIR NAME...)";
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    const fs::path onnx = exported_dir() / (name + ".onnx");
    if (!fs::exists(onnx)) {  // its export failed: the others still run
      ADD_FAILURE() << onnx << " is absent";
      continue;
    }
    models::LoadedModel m = models::load_model(onnx.string());
    std::vector<std::string> specs;
    for (ValueId v : m.graph->inputs()) {
      const std::string& input = m.graph->value(v).name;
      specs.push_back(input + "=" + (exported_dir() / (name + "." + input + ".npy")).string());
    }
    const Outputs inputs = tune::read_inputs(*m.graph, specs);
    auto weights = std::make_shared<const ir::Weights>(std::move(m.weights));
    cost::RooflineCostModel roofline(m.units);
    const Outputs expected = testing::run_plan(
        *exec::make_cpu_executor({}), m, weights,
        sched::make_scheduler("sequential", {})->schedule(m.units, roofline), inputs);
    std::vector<float> all;
    for (const auto& out : expected) all.insert(all.end(), out.begin(), out.end());
    const sched::Schedule s = sched::make_scheduler("ios", {})->schedule(m.units, roofline);
    for (Precision precision :
         {Precision::kFp32, Precision::kTf32, Precision::kFp16, Precision::kBf16}) {
      if (std::string why = testing::out_of_range(all, precision); !why.empty()) {
        std::printf("[ exported ] %s %s not checked: %s\n", name.c_str(),
                    to_string(precision).c_str(), why.c_str());
        continue;
      }
      SCOPED_TRACE(to_string(precision));
      auto cuda = exec::make_cuda_executor({.device = 0, .graph = true, .precision = precision});
      const Outputs got = testing::run_plan(*cuda, m, weights, s, inputs);
      ASSERT_EQ(got.size(), expected.size());
      // FP32 on the GPU sums in another order than oneDNN: CudaExecutorZoo's 1e-3 of the scale.
      const testing::Tolerance t =
          precision == Precision::kFp32
              ? testing::Tolerance{.precision = precision, .max_error = 1e-3, .min_cosine = 0.9999}
              : testing::tolerance(precision);
      for (size_t i = 0; i < got.size(); ++i) {
        const testing::Agreement a = testing::compare(got[i], expected[i], t);
        std::printf("[ exported ] %s %s output %zu: max error %.3g of scale %.3g, cosine %.6f\n",
                    name.c_str(), to_string(precision).c_str(), i,
                    a.max_error / std::max(a.scale, 1e-30), a.scale, a.cosine);
        EXPECT_TRUE(a.ok) << "output " << i << ": " << a.failure;
      }
    }
  }
}

}  // namespace
}  // namespace braid
