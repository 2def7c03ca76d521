// Issue 29, FP16 and BF16 ONNX models on the CPU: scripts/make_fp16_models.py writes one small
// CNN (Conv, Relu, Add, Mul, Sigmoid, MaxPool, GlobalAveragePool, Flatten, MatMul, Tanh, Softmax)
// as float32, as a `.half()`-style FLOAT16 model, through onnxconverter-common's float16
// converter with and without keep_io_types, and as BFLOAT16. braid runs each upcast to float32
// under the oracle's three schedules (sequential, ios, random on 3 streams), and every output
// element must match
// - ONNX Runtime running the same FP16 model, within 1e-2 of the output's scale + 1e-2 |b|
//   (ORT rounds to fp16 after each op, braid computes in float32: measured 2.5e-4 of the scale);
//   for BF16, which ORT's CPU cannot run, ORT on the float32 model holding the same bf16-rounded
//   weights and input, within ort_oracle.h's kFp32 (measured 2e-7: the same float32 arithmetic);
// - ONNX Runtime running the float32 original, within 1e-2 (FP16; measured 8e-4) or 2e-2 (BF16,
//   an 8-bit mantissa; measured 3.7e-3).
// Then the CLI as a user meets it: `braid run` on a float16 .npy input, `braid inspect`'s
// precision line and JSON. Skips without the venv; the converter cases without
// onnxconverter-common (scripts/requirements.txt installs it), saying so.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/float16.h"
#include "base/npy.h"
#include "ir/op.h"
#include "models/loader.h"
#include "ort_oracle.h"
#include "test_env.h"

namespace braid {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kScheduleSeed = 29;

// A float32 or float16 .npy as float32 values (float16 widened exactly).
std::vector<float> read_floats(const fs::path& path) {
  const npy::Array a = npy::read_file(path.string());
  std::vector<float> values(static_cast<size_t>(a.elements()));
  if (a.dtype == npy::DType::kFloat16) {
    for (size_t i = 0; i < values.size(); ++i) {
      uint16_t h;
      std::memcpy(&h, a.data.data() + i * sizeof h, sizeof h);
      values[i] = float16_to_float(h);
    }
  } else {
    EXPECT_EQ(a.dtype, npy::DType::kFloat32) << path;
    if (a.dtype == npy::DType::kFloat32) std::memcpy(values.data(), a.data.data(), a.data.size());
  }
  return values;
}

class Fp16Models : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (testing::venv_python().empty()) return;
    dir_ = testing::scratch_dir() / "fp16_models";
    const testing::CommandResult r =
        testing::run_command(testing::venv_python().string() + " " +
                             (testing::source_dir() / "scripts/make_fp16_models.py").string() +
                             " " + dir_.string() + " 2>&1");
    output_ = r.out;
    if (r.exit_code == 0) std::ifstream(dir_ / "manifest.json") >> manifest_;
  }
  void SetUp() override {
    if (testing::venv_python().empty())
      GTEST_SKIP() << "no .venv with onnx/onnxruntime (make deps)";
    ASSERT_TRUE(manifest_.contains("cases")) << "scripts/make_fp16_models.py failed:\n" << output_;
  }
  // The outputs of `reference` (ORT's, saved by the script), in output order.
  static std::vector<std::vector<float>> reference(const std::string& name) {
    std::vector<std::vector<float>> out;
    for (const auto& o : manifest_["outputs"])
      out.push_back(read_floats(dir_ / (name + "." + o.get<std::string>() + ".npy")));
    return out;
  }
  static inline fs::path dir_;
  static inline std::string output_;
  static inline nlohmann::json manifest_;
};

TEST_F(Fp16Models, MatchOnnxRuntimeAndTheFloat32Model) {
  for (const auto& [name, why] : manifest_["skipped"].items())
    std::cout << "[ SKIPPED  ] " << name << ": " << why.get<std::string>() << "\n";
  ASSERT_GE(manifest_["cases"].size(), 2u);
  for (const nlohmann::json& c : manifest_["cases"]) {
    const std::string name = c["name"];
    SCOPED_TRACE(name);
    const models::LoadedModel m = models::load_model((dir_ / (name + ".onnx")).string());
    EXPECT_TRUE(m.declared.upcast());
    EXPECT_EQ(to_string(m.declared.floats), c["floats"].get<std::string>());
    std::vector<std::string> inputs, outputs;
    for (models::ElementType t : m.declared.inputs) inputs.emplace_back(to_string(t));
    for (models::ElementType t : m.declared.outputs) outputs.emplace_back(to_string(t));
    EXPECT_EQ(inputs, c["inputs"].get<std::vector<std::string>>());
    EXPECT_EQ(outputs, c["outputs"].get<std::vector<std::string>>());
    for (const ir::Node& n : m.graph->nodes())  // casts between float types are views
      EXPECT_NE(n.kind, ir::OpKind::Cast) << n.name;

    const std::vector<float> x = read_floats(dir_ / c["input"].get<std::string>());
    testing::RawTensor input{.dtype = ir::DType::kFloat32,
                             .bytes = std::vector<std::byte>(x.size() * sizeof(float))};
    std::memcpy(input.bytes.data(), x.data(), input.bytes.size());
    for (const testing::OracleSchedule& s : testing::oracle_schedules(m.units, kScheduleSeed)) {
      const auto got = testing::run_cpu_executor(m, s.schedule, {input});
      for (const nlohmann::json& o : c["oracles"]) {
        const std::string oracle = o["reference"];
        testing::expect_outputs_match(
            reference(oracle), got,
            {.atol = o["atol"].get<double>(), .rtol = o["rtol"].get<double>()},
            name + "_" + s.name + "_vs_" + oracle);
      }
    }
  }
}

TEST_F(Fp16Models, CliRunsOnFloat16InputsAndInspectSaysTheModelIsUpcast) {
  const fs::path out = dir_ / "cli_out";
  const std::string cli = testing::braid_cli().string();
  testing::CommandResult r = testing::run_command(
      fmt::format("{} run {} --input x={} --output-dir {} --algo sequential --iters 1 --warmup 0",
                  cli, (dir_ / "half.onnx").string(), (dir_ / "x.f16.npy").string(), out.string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("braid: note: 'half' is a float16 model; braid runs it upcast to float32"),
            std::string::npos)
      << r.err;
  std::vector<std::vector<float>> got;
  for (const auto& o : manifest_["outputs"]) {
    const fs::path file = out / (o.get<std::string>() + ".npy");
    EXPECT_EQ(npy::read_file(file.string()).dtype, npy::DType::kFloat16) << file;  // its own type
    got.push_back(read_floats(file));
  }
  testing::expect_outputs_match(reference("half"), got, {.atol = 1e-2, .rtol = 1e-2}, "cli_half");

  // A BF16 model's outputs: float32 files (NumPy has no bfloat16) holding bfloat16 values, and
  // its float32 input rounded to bfloat16 as it is read (x.npy is not bf16-rounded; the oracle
  // ran on x.bf16.npy, the same values rounded).
  const fs::path bf16_out = dir_ / "cli_out_bf16";
  r = testing::run_command(fmt::format(
      "{} run {} --input x={} --output-dir {} --algo sequential --iters 1 --warmup 0", cli,
      (dir_ / "bf16.onnx").string(), (dir_ / "x.npy").string(), bf16_out.string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  got.clear();
  for (const auto& o : manifest_["outputs"]) {
    const fs::path file = bf16_out / (o.get<std::string>() + ".npy");
    EXPECT_EQ(npy::read_file(file.string()).dtype, npy::DType::kFloat32) << file;
    got.push_back(read_floats(file));
    for (float v : got.back()) {
      uint32_t bits;
      std::memcpy(&bits, &v, sizeof bits);
      ASSERT_EQ(bits & 0xffffu, 0u) << file << ": " << v << " is not a bfloat16 value";
    }
  }
  // Against ORT on the float32 model with the same bf16 weights and bf16-rounded input; braid's
  // outputs are then rounded to bfloat16 (8 mantissa bits: 2^-8 of each value).
  testing::expect_outputs_match(reference("bf16"), got, {.atol = 1e-3, .rtol = 8e-3}, "cli_bf16");

  r = testing::run_command(cli + " inspect " + (dir_ / "half.onnx").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("input  x [1,3,16,16] float16\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("precision: float16 model, run upcast to FP32 on the CPU (inputs/outputs "
                       "float16)\n"),
            std::string::npos)
      << r.out;
  r = testing::run_command(cli + " inspect " + (dir_ / "bf16.onnx").string() + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["precision"]["model"], "bfloat16");
  EXPECT_EQ(j["precision"]["computed"], "float32");
  EXPECT_EQ(j["inputs"][0]["dtype"], "bfloat16");
  EXPECT_EQ(j["outputs"][2]["dtype"], "bfloat16");
  r = testing::run_command(cli + " inspect " + (dir_ / "fp32.onnx").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("precision:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("input  x [1,3,16,16]\n"), std::string::npos) << r.out;
  if (fs::exists(dir_ / "converter_io32.onnx")) {
    r = testing::run_command(cli + " inspect " + (dir_ / "converter_io32.onnx").string());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("precision: float16 model, run upcast to FP32 on the CPU (inputs/outputs "
                         "float32)\n"),
              std::string::npos)
        << r.out;
  }
}

}  // namespace
}  // namespace braid
