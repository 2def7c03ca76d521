// ONNX Einsum, imported as Transposes and a batched MatMul (src/models/onnx_einsum.h), against two
// oracles: ONNX Runtime on small models (MaxViT's two rank-5 equations with and without its
// attention block around them, and the other accepted forms), element-wise within ort_oracle.h's
// kFp32 on the CPU executor under every oracle schedule and on the reference executor; and the
// expected outputs of ONNX's own Einsum node tests (computed by numpy), converted to float32
// because braid runs float32 only (the node test suite skips them for their float64 inputs). The
// node tests braid does not support must be refused with the node, the equation and the reason.
// scripts/make_einsum_models.py writes the models.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "base/error.h"
#include "exec/ref/ref_executor.h"
#include "models/loader.h"
#include "ort_oracle.h"
#include "sched/registry.h"
#include "test_env.h"

namespace braid {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kInputSeed = 3;
constexpr uint64_t kScheduleSeed = 11;
// ONNX's backend test runner's tolerances; the expected values are float64 results rounded to
// float32, braid's are float32 products of K <= 3 terms.
constexpr double kNodeRtol = 1e-4;
constexpr double kNodeAtol = 1e-5;

// The script's output directory, made once per process; empty without the venv.
const fs::path& models_dir() {
  static const fs::path dir = [] {
    if (testing::venv_python().empty()) return fs::path{};
    fs::path d = testing::scratch_dir() / "einsum";
    const testing::CommandResult r = testing::run_command(
        testing::venv_python().string() + " " +
        (testing::source_dir() / "scripts/make_einsum_models.py").string() + " " + d.string());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return d;
  }();
  return dir;
}

long count(const ir::Graph& g, ir::OpKind kind) {
  return std::count_if(g.nodes().begin(), g.nodes().end(),
                       [&](const ir::Node& n) { return n.kind == kind; });
}

struct OrtCase {
  const char* name;
  long matmuls, transposes;  // what the Einsums become
};

void PrintTo(const OrtCase& c, std::ostream* os) {
  *os << c.name;
}

class EinsumOrt : public ::testing::TestWithParam<OrtCase> {};

TEST_P(EinsumOrt, MatchesOnnxRuntime) {
  if (models_dir().empty()) GTEST_SKIP() << "no .venv with onnx and onnxruntime (run make deps)";
  const OrtCase c = GetParam();
  const fs::path onnx = models_dir() / (std::string(c.name) + ".onnx");
  const models::LoadedModel m = models::load_model(onnx.string());
  EXPECT_EQ(count(*m.graph, ir::OpKind::MatMul), c.matmuls);
  EXPECT_EQ(count(*m.graph, ir::OpKind::Transpose), c.transposes);

  const fs::path scratch = testing::scratch_dir() / (std::string("einsum_") + c.name);
  const testing::OrtRun ort = testing::run_onnx_runtime(
      onnx, testing::write_random_inputs(*m.graph, kInputSeed, scratch / "inputs"),
      scratch / "ort");
  ASSERT_FALSE(ort.outputs.empty()) << "no ORT outputs";
  std::vector<std::vector<float>> inputs;
  for (const testing::RawTensor& t : ort.inputs) inputs.push_back(testing::as_floats(t));
  testing::expect_outputs_match(ort.outputs, exec::ref::run_reference(*m.graph, m.weights, inputs),
                                testing::kFp32, "ref");
  for (const testing::OracleSchedule& s : testing::oracle_schedules(m.units, kScheduleSeed)) {
    SCOPED_TRACE(std::string(c.name) + " under " + s.name);
    testing::expect_outputs_match(ort.outputs, testing::run_cpu_executor(m, s.schedule, ort.inputs),
                                  testing::kFp32, s.name);
  }
}

INSTANTIATE_TEST_SUITE_P(Models, EinsumOrt,
                         ::testing::Values(OrtCase{"einsum_maxvit_attention", 2, 1},
                                           OrtCase{"einsum_maxvit_equations", 2, 1},
                                           // swapped: 0, output: 1, constant A: 1, rank 2: 1
                                           OrtCase{"einsum_forms", 4, 3}),
                         [](const auto& info) { return std::string(info.param.name); });

// The ONNX node test whose equation is a batched matrix product ("bij, bjk -> bik") matches
// ONNX's expected output on both executors.
TEST(EinsumNodeTests, BatchMatmulMatchesOnnxReference) {
  if (models_dir().empty()) GTEST_SKIP() << "no .venv with onnx (run make deps)";
  const fs::path stem = models_dir() / "node_einsum_batch_matmul";
  if (!fs::exists(stem.string() + ".onnx"))
    GTEST_SKIP() << "install libonnx-testdata (make deps): no test_einsum_batch_matmul";
  const models::LoadedModel m = models::load_model(stem.string() + ".onnx");
  std::vector<std::vector<float>> inputs;
  std::vector<testing::RawTensor> raw;
  for (int k = 0; k < 2; ++k) {
    inputs.push_back(
        testing::read_float_file(stem.string() + ".input_" + std::to_string(k) + ".bin"));
    raw.push_back({ir::DType::kFloat32, {}});
    raw.back().bytes.resize(inputs.back().size() * sizeof(float));
    std::memcpy(raw.back().bytes.data(), inputs.back().data(), raw.back().bytes.size());
  }
  const std::vector<float> want = testing::read_float_file(stem.string() + ".output_0.bin");
  const std::vector<std::vector<float>> got[] = {
      exec::ref::run_reference(*m.graph, m.weights, inputs),
      testing::run_cpu_executor(m, sched::make_scheduler("sequential")->schedule(m.units), raw)};
  for (const auto& outputs : got) {
    ASSERT_EQ(outputs.size(), 1u);
    ASSERT_EQ(outputs[0].size(), want.size());
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_LE(std::abs(outputs[0][i] - want[i]), kNodeAtol + kNodeRtol * std::abs(want[i]))
          << "element " << i << ": " << outputs[0][i] << " vs ONNX " << want[i];
  }
}

// The other node tests use forms braid does not import; each is refused as unsupported with the
// node, the equation and the reason, never imported wrongly.
TEST(EinsumNodeTests, OtherFormsAreRefusedWithTheReason) {
  if (models_dir().empty()) GTEST_SKIP() << "no .venv with onnx (run make deps)";
  if (!fs::exists(models_dir() / "node_einsum_batch_matmul.onnx"))
    GTEST_SKIP() << "install libonnx-testdata (make deps): no test_einsum_* node tests";
  struct Refused {
    const char* test;
    const char* equation;
    const char* why;
  };
  for (const Refused& r :
       {Refused{"batch_diagonal", "...ii ->...i", "ellipsis"},
        Refused{"inner_prod", "i,i", "implicit output"}, Refused{"sum", "ij->i", "has 1 operand"},
        Refused{"transpose", "ij->ji", "has 1 operand"}}) {
    const fs::path onnx = models_dir() / ("node_einsum_" + std::string(r.test) + ".onnx");
    try {
      models::load_model(onnx.string());
      ADD_FAILURE() << r.test << ": imported";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_EQ(e.code(), ErrorCode::kUnsupported) << what;
      for (const std::string& needle :
           {std::string("node #0 (Einsum)"), "Einsum equation '" + std::string(r.equation) + "'",
            std::string(r.why), std::string("batched matrix product")})
        EXPECT_NE(what.find(needle), std::string::npos) << "'" << needle << "' missing in " << what;
    }
  }
}

}  // namespace
}  // namespace braid
