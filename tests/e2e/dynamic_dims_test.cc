// Models with dynamic input dims (issue 27), fixed at load with --shape or --dim, against ONNX
// Runtime run on the same file at the same shape: a CNN whose dim_params feed
// Shape -> Gather -> Mul -> Concat -> Reshape (folded at import once fixed), a batch written as
// -1, and a dim written as 0 (ORT takes 0 literally, so its oracle is the same model with a
// named dim). The CLI refuses the unfixed model with exit 2 and the sentence naming both flags.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cctype>
#include <fstream>
#include <random>
#include <span>

#include "base/npy.h"
#include "models/loader.h"
#include "models/onnx_test_util.h"
#include "ort_oracle.h"
#include "test_env.h"

namespace braid {
namespace {

namespace fs = std::filesystem;
using models::ModelMaker;

constexpr uint64_t kScheduleSeed = 5;

// dims: a number is its dim_value (-1 and 0 included), anything else a dim_param.
void input(ModelMaker& mm, const std::string& name, const std::vector<std::string>& dims) {
  auto* vi = mm.g->add_input();
  vi->set_name(name);
  auto* t = vi->mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx::TensorProto::FLOAT);
  for (const std::string& d : dims) {
    auto* dim = t->mutable_shape()->add_dim();
    if (d == "-1" || std::isdigit(static_cast<unsigned char>(d[0])))
      dim->set_dim_value(std::stoll(d));
    else
      dim->set_dim_param(d);
  }
}

// x [dims] -> Conv 3->4 (3x3, pad 1) -> the conv's own Shape: Gather n, h, w; Mul h*w; Concat
// [n, 4, h*w] -> Reshape -> Softmax over h*w -> y.
ModelMaker shape_arithmetic_model(const std::vector<std::string>& dims) {
  ModelMaker mm;
  input(mm, "x", dims);
  mm.init("w", {4, 3, 3, 3}, -0.3f);
  mm.init64("i0", {0});
  mm.init64("i2", {2});
  mm.init64("i3", {3});
  mm.init64("four", {4});
  ModelMaker::ints(mm.node("Conv", "conv", {"x", "w"}, {"c"}), "pads", {1, 1, 1, 1});
  mm.node("Shape", "shape", {"c"}, {"s"});
  mm.node("Gather", "gn", {"s", "i0"}, {"n"});
  mm.node("Gather", "gh", {"s", "i2"}, {"h"});
  mm.node("Gather", "gw", {"s", "i3"}, {"w_"});
  mm.node("Mul", "hw", {"h", "w_"}, {"hw"});
  ModelMaker::integer(mm.node("Concat", "cat", {"n", "four", "hw"}, {"target"}), "axis", 0);
  mm.node("Reshape", "reshape", {"c", "target"}, {"r"});
  ModelMaker::integer(mm.node("Softmax", "softmax", {"r"}, {"y"}), "axis", -1);
  mm.g->add_output()->set_name("y");
  return mm;
}

fs::path save(const ModelMaker& mm, const std::string& name) {
  const fs::path path = testing::scratch_dir() / "dynamic_dims" / (name + ".onnx");
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << mm.m.SerializeAsString();
  return path;
}

// Loads `model` with `options`, runs it on the CPU executor under the oracle schedules and on
// ORT (`oracle`, the same model unless ORT cannot take it as written) with the same seeded
// input, and compares every output.
void expect_matches_ort(const fs::path& model, const models::LoadOptions& options,
                        const fs::path& oracle, const std::string& tag) {
  const models::LoadedModel m = models::load_model(model.string(), options);
  const ir::Value& x = m.graph->value(m.graph->inputs()[0]);
  std::vector<float> values(static_cast<size_t>(x.type.elements()));
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uniform(-1, 1);
  for (float& v : values) v = uniform(rng);
  const fs::path scratch = testing::scratch_dir() / "dynamic_dims" / tag;
  fs::create_directories(scratch);
  const fs::path npy = scratch / "x.npy";
  npy::write_file(npy.string(), npy::DType::kFloat32, x.type.shape,
                  std::as_bytes(std::span(values)));
  const testing::OrtRun ort = testing::run_onnx_runtime(oracle, {npy}, scratch / "ort");
  ASSERT_FALSE(ort.outputs.empty()) << "no ORT outputs";
  for (const testing::OracleSchedule& s : testing::oracle_schedules(m.units, kScheduleSeed))
    testing::expect_outputs_match(ort.outputs, testing::run_cpu_executor(m, s.schedule, ort.inputs),
                                  testing::kFp32, tag + "_" + s.name);
}

class DynamicDims : public ::testing::Test {
 protected:
  void SetUp() override {
    if (testing::venv_python().empty()) GTEST_SKIP() << "no .venv with onnxruntime (make deps)";
  }
};

TEST_F(DynamicDims, ShapeArithmeticOnFixedDimsMatchesOrt) {
  const fs::path model = save(shape_arithmetic_model({"N", "3", "height", "width"}), "cnn");
  models::LoadOptions by_dim;
  by_dim.inputs.dims = {{"height", 6}, {"width", 10}};
  const models::LoadedModel m = models::load_model(model.string(), by_dim);
  EXPECT_EQ(m.graph->value(m.graph->outputs()[0]).type.shape, (ir::Shape{1, 4, 60}));
  for (const ir::Node& n : m.graph->nodes())  // the shape arithmetic folded away
    EXPECT_TRUE(n.kind == ir::OpKind::Conv || n.kind == ir::OpKind::Reshape ||
                n.kind == ir::OpKind::Softmax)
        << n.name;
  expect_matches_ort(model, by_dim, model, "by_dim");
  models::LoadOptions by_shape;
  by_shape.inputs.shapes = {{"x", {2, 3, 5, 7}}};
  expect_matches_ort(model, by_shape, model, "by_shape");
}

// A batch written as -1 takes --batch (ORT reads -1 as dynamic too).
TEST_F(DynamicDims, MinusOneBatchMatchesOrt) {
  const fs::path model = save(shape_arithmetic_model({"-1", "3", "8", "8"}), "minus_one");
  models::LoadOptions options{.zoo = {.batch = 3}, .batch_given = true};
  expect_matches_ort(model, options, model, "minus_one");
}

// A dim written as 0 is dynamic to braid; ORT would take it as zero-size, so the oracle is the
// same model with the dim named.
TEST_F(DynamicDims, ZeroDimMatchesOrtOnTheNamedModel) {
  const fs::path model = save(shape_arithmetic_model({"0", "3", "0", "6"}), "zero");
  const fs::path named = save(shape_arithmetic_model({"N", "3", "h", "6"}), "zero_named");
  models::LoadOptions options;
  options.inputs.shapes = {{"x", {2, 3, 9, 6}}};
  expect_matches_ort(model, options, named, "zero");
}

// The CLI: refused without a flag (exit 2, the sentence naming the input, dim and both flags),
// run with either, and bad flag text is a sentence with exit 2.
TEST(DynamicDimsCli, RefusesUnfixedAndRunsWithFlags) {
  const fs::path model = save(shape_arithmetic_model({"N", "3", "48", "width"}), "cli");
  const std::string cli = testing::braid_cli().string() + " ";
  testing::CommandResult r = testing::run_command(cli + "inspect " + model.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("graph input 'x': dim 3 ('width') is dynamic; fix it with --shape "
                       "x=1x3x48x<width> or --dim width=<width>"),
            std::string::npos)
      << r.err;
  for (const char* flag : {"--dim width=16", "--shape x=1x3x48x16"}) {
    r = testing::run_command(cli + "run " + model.string() + " " + flag +
                             " --algo sequential --iters 1 --warmup 0");
    EXPECT_EQ(r.exit_code, 0) << flag << ": " << r.err;
    EXPECT_NE(r.out.find("[1,4,768]"), std::string::npos) << r.out;
  }
  r = testing::run_command(cli + "inspect " + model.string() + " --shape x=1x3x48xten");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("'ten' is not a whole number"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace braid
