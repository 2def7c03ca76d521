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

// An ONNX file on seeded random inputs: ORT and braid under every oracle schedule.
void compare_with_ort(const models::LoadedModel& m, const fs::path& onnx, const std::string& tag) {
  if (testing::venv_python().empty()) GTEST_SKIP() << "no .venv with onnxruntime (run make deps)";
  fs::path scratch = testing::scratch_dir() / ("ort_" + tag);
  fs::create_directories(scratch);
  OrtRun ort = testing::run_onnx_runtime(
      onnx, testing::write_random_inputs(*m.graph, kInputSeed, scratch / "inputs"),
      scratch / "ort");
  expect_all_schedules_match(m, ort, tag);
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

// The CNN ops torchvision classifiers and the ONNX zoo need (Clip at opsets 6 and 13,
// HardSigmoid, HardSwish, ReduceMean with axes as attribute and as input, LRN), alone and in
// the blocks they come in (MobileNetV2's Conv-ReLU6, MobileNetV3's squeeze-excite, MNASNet's
// mean head, AlexNet's LRN): models made by scripts/make_cnn_op_models.py.
class OrtOracleCnnOps : public ::testing::TestWithParam<const char*> {};

TEST_P(OrtOracleCnnOps, CpuExecutorAgreesWithOnnxRuntime) {
  auto python = testing::venv_python();
  if (python.empty()) GTEST_SKIP() << "no .venv with onnx and onnxruntime (run make deps)";
  const fs::path dir = testing::scratch_dir() / "cnn_ops";
  const auto r = testing::run_command(
      python.string() + " " + (testing::source_dir() / "scripts/make_cnn_op_models.py").string() +
      " " + dir.string() + " " + GetParam());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const fs::path onnx = dir / (std::string(GetParam()) + ".onnx");
  compare_with_ort(models::load_model(onnx.string()), onnx, std::string("cnn_ops_") + GetParam());
}

INSTANTIATE_TEST_SUITE_P(CnnOps, OrtOracleCnnOps,
                         ::testing::Values("clip_opset6", "clip_opset13", "clip_opset13_one_sided",
                                           "conv_relu6_opset13", "hardsigmoid_opset13",
                                           "hardswish_opset14", "mobilenetv3_se_block_opset14",
                                           "reduce_mean_opset13_keepdims",
                                           "reduce_mean_opset13_all_axes",
                                           "reduce_mean_opset18_axes_input", "mnasnet_head_opset13",
                                           "lrn_opset13", "alexnet_lrn_block_opset13"),
                         [](const auto& info) { return std::string(info.param); });

// Models that run only after import-time folding (ShuffleNetV2's exported shape arithmetic, a
// ConstantOfShape-built weight) or rewriting (opset-11 Softmax over an inner axis), from
// scripts/make_fold_models.py.
class OrtOracleFolded : public ::testing::TestWithParam<const char*> {};

TEST_P(OrtOracleFolded, CpuExecutorAgreesWithOnnxRuntime) {
  auto python = testing::venv_python();
  if (python.empty()) GTEST_SKIP() << "no .venv with onnxruntime (run make deps)";
  static const fs::path dir = [&] {
    fs::path d = testing::scratch_dir() / "folded";
    auto r = testing::run_command(python.string() + " " +
                                  (testing::source_dir() / "scripts/make_fold_models.py").string() +
                                  " " + d.string());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return d;
  }();
  fs::path onnx = dir / ("run_" + std::string(GetParam()) + ".onnx");
  compare_with_ort(models::load_model(onnx.string()), onnx, GetParam());
}

INSTANTIATE_TEST_SUITE_P(Import, OrtOracleFolded,
                         ::testing::Values("shuffle", "constant_of_shape_weight",
                                           "softmax_opset11_axis1"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace braid
