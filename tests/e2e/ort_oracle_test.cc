// ONNX Runtime as the oracle: every zoo model (exported with its seeded weights) and every
// PyTorch-exported model under models/ runs on braid's CPU executor and on ORT with the same
// inputs; outputs must agree within 1e-4 relative to the output's scale.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include "base/error.h"
#include "exec/cpu/cpu_executor.h"
#include "models/loader.h"
#include "models/onnx_export.h"
#include "sched/lower.h"
#include "sched/registry.h"
#include "test_env.h"

namespace braid {
namespace {

namespace fs = std::filesystem;

std::vector<float> read_floats(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<float> data(fs::file_size(path) / sizeof(float));
  in.read(reinterpret_cast<char*>(data.data()), static_cast<std::streamsize>(data.size() * sizeof(float)));
  return data;
}

void compare_with_ort(const models::LoadedModel& m, const fs::path& onnx_path, const std::string& tag) {
  auto python = testing::venv_python();
  if (python.empty()) GTEST_SKIP() << "no .venv with onnxruntime (run make deps)";
  const ir::Graph& g = *m.graph;
  fs::path dir = testing::scratch_dir() / ("ort_" + tag);
  fs::create_directories(dir);
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<std::vector<float>> inputs;
  std::string command = python.string() + " " + (testing::source_dir() / "scripts/ort_run.py").string() +
                        " " + onnx_path.string() + " " + dir.string();
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    std::vector<float> x(g.value(g.inputs()[i]).type.elements());
    for (float& v : x) v = dist(rng);
    fs::path in = dir / ("input_" + std::to_string(i) + ".bin");
    std::ofstream(in, std::ios::binary).write(reinterpret_cast<const char*>(x.data()), x.size() * sizeof(float));
    command += " " + in.string();
    inputs.push_back(std::move(x));
  }
  auto r = testing::run_command(command);
  ASSERT_EQ(r.exit_code, 0) << r.err;

  sched::ExecutionPlan plan = sched::lower(m.units, sched::make_scheduler("greedy")->schedule(m.units));
  auto weights = std::make_shared<const ir::Weights>(m.weights);
  auto model = exec::make_cpu_executor()->prepare({m.graph, weights, &m.units, &plan});
  auto request = model->new_request();
  for (size_t i = 0; i < inputs.size(); ++i) model->set_input(*request, i, inputs[i]);
  model->run(*request);
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    std::vector<float> expected = read_floats(dir / ("output_" + std::to_string(i) + ".bin"));
    auto got = model->output(*request, i);
    ASSERT_EQ(got.size(), expected.size()) << tag << " output " << i;
    double scale = 0, err = 0;
    for (size_t k = 0; k < got.size(); ++k) {
      scale = std::max(scale, std::abs(double(expected[k])));
      err = std::max(err, std::abs(double(got[k]) - double(expected[k])));
    }
    EXPECT_LE(err, 1e-4 * scale) << tag << " output " << i << ": max error " << err << " at scale " << scale;
    ::testing::Test::RecordProperty(tag + "_relative_error", std::to_string(err / std::max(scale, 1e-30)));
  }
}

class OrtOracleZoo : public ::testing::TestWithParam<const char*> {};

TEST_P(OrtOracleZoo, CpuExecutorAgreesWithOnnxRuntime) {
  models::LoadedModel m;
  try {
    m = models::load_model(GetParam());
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kUnsupported) GTEST_SKIP() << e.what();
    throw;
  }
  fs::path onnx = testing::scratch_dir() / (std::string(GetParam()) + ".onnx");
  models::export_onnx_file(*m.graph, m.weights, onnx.string());
  compare_with_ort(m, onnx, GetParam());
}

INSTANTIATE_TEST_SUITE_P(Zoo, OrtOracleZoo,
                         ::testing::Values("inception_v3", "squeezenet", "nasnet", "randwire", "googlenet",
                                           "resnet50", "bert", "tv_inception_v3", "tv_squeezenet1_0"),
                         [](const auto& info) { return std::string(info.param); });

class OrtOracleTorch : public ::testing::TestWithParam<const char*> {};

TEST_P(OrtOracleTorch, CpuExecutorAgreesWithOnnxRuntime) {
  fs::path onnx = testing::source_dir() / "models" / (std::string(GetParam()) + ".onnx");
  if (!fs::exists(onnx)) GTEST_SKIP() << onnx << " absent: run `make models` to export it";
  models::LoadedModel m = models::load_model(onnx.string());
  compare_with_ort(m, onnx, std::string("torch_") + GetParam());
}

INSTANTIATE_TEST_SUITE_P(Models, OrtOracleTorch,
                         ::testing::Values("googlenet", "inception_v3", "squeezenet1_0", "resnet50"),
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
                         ::testing::Values("shuffle", "constant_of_shape_weight", "softmax_opset11_axis1"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace braid
