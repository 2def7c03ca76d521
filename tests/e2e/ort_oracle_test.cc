// ONNX Runtime as the oracle: every zoo model (exported with its seeded weights) and the
// PyTorch-exported models under models/ run on braid's CPU executor under sequential, ios and a
// random 3-stream schedule, and on ORT with the same inputs; every output element must agree within
// ort_oracle.h's kFp32 (|a-b| <= 1e-4 scale + 1e-3 |b|, scale = max |b|). exported_models_test.cc
// does the same for every model `make models` writes; this test is the CI path (the zoo, ~1 min on
// 2 cores).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "base/error.h"
#include "models/loader.h"
#include "models/onnx_export.h"
#include "ort_oracle.h"
#include "test_env.h"

namespace braid {
namespace {

namespace fs = std::filesystem;
using testing::OrtRun;

constexpr uint64_t kInputSeed = 5;
constexpr uint64_t kScheduleSeed = 7;

void expect_all_schedules_match(const models::LoadedModel& m, const OrtRun& ort,
                                const std::string& tag) {
  ASSERT_FALSE(ort.outputs.empty()) << tag << ": no ORT outputs";
  for (const testing::OracleSchedule& s : testing::oracle_schedules(m.units, kScheduleSeed)) {
    SCOPED_TRACE(tag + " under " + s.name);
    testing::expect_outputs_match(ort.outputs, testing::run_cpu_executor(m, s.schedule, ort.inputs),
                                  testing::kFp32, tag + "_" + s.name);
  }
}

class OrtOracleZoo : public ::testing::TestWithParam<const char*> {};

TEST_P(OrtOracleZoo, CpuExecutorAgreesWithOnnxRuntime) {
  if (testing::venv_python().empty()) GTEST_SKIP() << "no .venv with onnxruntime (run make deps)";
  models::LoadedModel m;
  try {
    m = models::load_model(GetParam());
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kUnsupported) GTEST_SKIP() << e.what();
    throw;
  }
  fs::path scratch = testing::scratch_dir() / GetParam();
  fs::path onnx = scratch / "model.onnx";
  fs::create_directories(scratch);
  models::export_onnx_file(*m.graph, m.weights, onnx.string());
  OrtRun ort = testing::run_onnx_runtime(
      onnx, testing::write_random_inputs(*m.graph, kInputSeed, scratch / "inputs"),
      scratch / "ort");
  expect_all_schedules_match(m, ort, GetParam());
}

INSTANTIATE_TEST_SUITE_P(Zoo, OrtOracleZoo,
                         ::testing::Values("inception_v3", "squeezenet", "nasnet", "randwire",
                                           "googlenet", "resnet50", "bert", "tv_inception_v3",
                                           "tv_squeezenet1_0"),
                         [](const auto& info) { return std::string(info.param); });

// The models the zoo's framework-form builders mirror (zoo_framework_test.cc) and the exported
// BERT-base, on the seeded inputs `make models` saved beside them.
class OrtOracleTorch : public ::testing::TestWithParam<const char*> {};

TEST_P(OrtOracleTorch, CpuExecutorAgreesWithOnnxRuntime) {
  if (testing::venv_python().empty()) GTEST_SKIP() << "no .venv with onnxruntime (run make deps)";
  fs::path dir = testing::source_dir() / "models";
  fs::path onnx = dir / (std::string(GetParam()) + ".onnx");
  if (!fs::exists(onnx)) GTEST_SKIP() << onnx << " absent: run `make models` to export it";
  models::LoadedModel m = models::load_model(onnx.string());
  std::vector<fs::path> inputs;
  for (ValueId v : m.graph->inputs()) {
    inputs.push_back(dir / (std::string(GetParam()) + "." + m.graph->value(v).name + ".npy"));
    if (!fs::exists(inputs.back()))
      GTEST_SKIP() << inputs.back() << " absent: run `make models` again";
  }
  std::string tag = std::string("torch_") + GetParam();
  OrtRun ort = testing::run_onnx_runtime(onnx, inputs, testing::scratch_dir() / tag);
  expect_all_schedules_match(m, ort, tag);
}

INSTANTIATE_TEST_SUITE_P(Models, OrtOracleTorch,
                         ::testing::Values("googlenet", "inception_v3", "squeezenet1_0", "resnet50",
                                           "bert_base"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace braid
