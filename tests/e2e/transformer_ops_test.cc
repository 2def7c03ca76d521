// The ops transformer exports run on activations (Erf, Sub, Div, Pow, Sqrt, Where, Expand,
// Gather, Cast, Equal, Not, Slice, Unsqueeze/Squeeze, 6-D Transpose, 4-D MatMul, the erf GELU), one
// small model each, plus a tiny BERT-like and ViT-like model, against ONNX Runtime as the
// oracle. scripts/make_transformer_op_models.py writes the models and their inputs (int64 and
// bool inputs included); each runs on ORT, on braid's reference executor and on the CPU
// executor under a sequential and two multi-lane schedules, and braid's own ONNX export of it
// runs on ORT again (the round trip). Outputs must agree element-wise:
// |braid - ort| <= kAtol + kRtol * |ort|.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "base/error.h"
#include "exec/cpu/cpu_executor.h"
#include "exec/ref/ref_executor.h"
#include "models/loader.h"
#include "models/onnx_export.h"
#include "ort_oracle.h"
#include "sched/lower.h"
#include "sched/registry.h"
#include "test_env.h"

namespace braid {
namespace {

namespace fs = std::filesystem;

// float32 kernels against ORT's: the reference accumulates in double, oneDNN and ORT in float.
constexpr double kAtol = 1e-5;
constexpr double kRtol = 1e-4;

void expect_close(std::span<const float> got, std::span<const float> want,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  size_t bad = 0, first = 0;
  for (size_t k = 0; k < got.size(); ++k) {
    const double tolerance = kAtol + kRtol * std::abs(double(want[k]));
    if (!(std::abs(double(got[k]) - double(want[k])) <= tolerance) && bad++ == 0) first = k;
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << got.size() << " elements differ; first at "
                     << first << ": " << got[first] << " vs ORT " << want[first];
}

// Runs a model on ORT (scripts/ort_run.py, inputs as .npy in their declared types); returns its
// outputs.
std::vector<std::vector<float>> run_ort(const fs::path& onnx, std::span<const fs::path> inputs,
                                        const fs::path& out_dir, size_t num_outputs) {
  std::string command = testing::venv_python().string() + " " +
                        (testing::source_dir() / "scripts/ort_run.py").string() + " " +
                        onnx.string() + " " + out_dir.string();
  for (const fs::path& in : inputs) command += " " + in.string();
  const testing::CommandResult r = testing::run_command(command);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::vector<float>> outputs;
  for (size_t i = 0; i < num_outputs; ++i)
    outputs.push_back(testing::read_float_file(out_dir / ("output_" + std::to_string(i) + ".bin")));
  return outputs;
}

class TransformerOps : public ::testing::TestWithParam<const char*> {
 protected:
  static void SetUpTestSuite() {
    if (testing::venv_python().empty()) return;
    dir_ = testing::scratch_dir() / "transformer_ops";
    const testing::CommandResult r = testing::run_command(
        testing::venv_python().string() + " " +
        (testing::source_dir() / "scripts/make_transformer_op_models.py").string() + " " +
        dir_.string());
    generated_ = r.exit_code == 0;
    ASSERT_TRUE(generated_) << r.err;
  }
  static inline fs::path dir_;
  static inline bool generated_ = false;
};

TEST_P(TransformerOps, MatchesOnnxRuntime) {
  if (testing::venv_python().empty()) GTEST_SKIP() << "no .venv with onnxruntime (run make deps)";
  ASSERT_TRUE(generated_);
  const std::string name = GetParam();
  const fs::path onnx = dir_ / (name + ".onnx");
  const models::LoadedModel m = models::load_model(onnx.string());
  const ir::Graph& g = *m.graph;

  std::vector<fs::path> input_files;  // for ORT
  std::vector<std::vector<float>> inputs;
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    const std::string stem = name + ".input_" + std::to_string(i);
    input_files.push_back(dir_ / (stem + ".npy"));
    inputs.push_back(testing::read_float_file(dir_ / (stem + ".bin")));
  }
  const auto expected = run_ort(onnx, input_files, dir_ / (name + ".ort"), g.outputs().size());

  const auto reference = exec::ref::run_reference(g, m.weights, inputs);
  for (size_t i = 0; i < expected.size(); ++i)
    expect_close(reference[i], expected[i], name + " ref output " + std::to_string(i));

  auto weights = std::make_shared<const ir::Weights>(m.weights);
  for (const char* scheduler : {"sequential", "greedy", "ios"}) {
    const sched::ExecutionPlan plan =
        sched::lower(m.units, sched::make_scheduler(scheduler)->schedule(m.units));
    auto model = exec::make_cpu_executor()->prepare({m.graph, weights, &m.units, &plan});
    auto request = model->new_request();
    for (size_t i = 0; i < inputs.size(); ++i) model->set_input(*request, i, inputs[i]);
    model->run(*request);
    for (size_t i = 0; i < expected.size(); ++i)
      expect_close(model->output(*request, i), expected[i],
                   name + " cpu/" + scheduler + " output " + std::to_string(i));
  }

  // braid's export computes the same function (ORT on both files).
  const fs::path exported = dir_ / (name + ".braid.onnx");
  models::export_onnx_file(g, m.weights, exported.string());
  const auto round_trip = run_ort(exported, input_files, dir_ / (name + ".ort2"), expected.size());
  for (size_t i = 0; i < expected.size(); ++i)
    expect_close(round_trip[i], expected[i], name + " exported output " + std::to_string(i));
}

INSTANTIATE_TEST_SUITE_P(Ops, TransformerOps,
                         ::testing::Values("erf", "sub", "div", "pow", "sqrt", "where_equal",
                                           "equal_float", "expand", "gather_embedding",
                                           "gather_constant", "cast", "slice_roll", "slice_opset9",
                                           "unsqueeze_squeeze", "unsqueeze_opset11", "transpose_6d",
                                           "matmul_4d", "gelu_erf", "gelu_erf_shared", "tiny_bert",
                                           "tiny_vit", "where_not_equal"),
                         [](const auto& info) { return std::string(info.param); });

// PyTorch's two erf GELU patterns become braid Gelus; a pattern whose Div result has a second
// reader stays as it is (Erf runs), since folding it would drop that value.
TEST(TransformerOpsImport, ErfGeluPatternsFoldIntoGelu) {
  if (testing::venv_python().empty()) GTEST_SKIP() << "no .venv with onnx (run make deps)";
  const fs::path dir = testing::scratch_dir() / "transformer_ops_fold";
  const testing::CommandResult r = testing::run_command(
      testing::venv_python().string() + " " +
      (testing::source_dir() / "scripts/make_transformer_op_models.py").string() + " " +
      dir.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto count = [](const ir::Graph& g, ir::OpKind kind) {
    return std::count_if(g.nodes().begin(), g.nodes().end(),
                         [&](const ir::Node& n) { return n.kind == kind; });
  };
  const models::LoadedModel folded = models::load_model((dir / "gelu_erf.onnx").string());
  EXPECT_EQ(count(*folded.graph, ir::OpKind::Gelu), 2);
  EXPECT_EQ(count(*folded.graph, ir::OpKind::Erf), 0);
  const models::LoadedModel shared = models::load_model((dir / "gelu_erf_shared.onnx").string());
  EXPECT_EQ(count(*shared.graph, ir::OpKind::Gelu), 0);
  EXPECT_EQ(count(*shared.graph, ir::OpKind::Erf), 1);
  const models::LoadedModel bert = models::load_model((dir / "tiny_bert.onnx").string());
  EXPECT_EQ(count(*bert.graph, ir::OpKind::Gelu), 2);
}

}  // namespace
}  // namespace braid
