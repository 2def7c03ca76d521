// End-to-end tests of the CLI's import side: `braid ops`, and the limits that turn absurd shapes
// (a huge --batch or --image-size, a 100000x100000 ONNX input) into exit 2 with a message naming
// the problem and the flag that raises the limit, instead of std::bad_alloc or negative GFLOPs.
#include <gtest/gtest.h>

#include <map>

#include <nlohmann/json.hpp>

#include "test_env.h"

namespace braid {
namespace {

using testing::cli;
using testing::run_command;

void expect_exit_two(const std::string& args, std::vector<std::string> needles) {
  SCOPED_TRACE(args);
  auto r = run_command(cli() + " " + args);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  for (const std::string& n : needles)
    EXPECT_NE(r.err.find(n), std::string::npos) << "'" << n << "' missing in: " << r.err;
  EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
}

TEST(CliOps, ListsRunAndFoldedOpsWithOpsets) {
  auto r = run_command(cli() + " ops");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Conv"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("opsets 1 to 21"), std::string::npos) << r.out;
  r = run_command(cli() + " ops --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["min_opset"], 1);
  EXPECT_EQ(j["max_opset"], 21);
  bool shape_only_folds = false, gather_folds_and_runs = false, conv_runs = false;
  for (const auto& op : j["ops"]) {
    if (op["op_type"] == "Shape") shape_only_folds = op["folds"] && !op["runs"];
    if (op["op_type"] == "Gather") gather_folds_and_runs = op["folds"] && op["runs"];
    if (op["op_type"] == "Conv") conv_runs = op["runs"] && op["min_opset"] == 1;
  }
  EXPECT_TRUE(shape_only_folds);
  EXPECT_TRUE(gather_folds_and_runs);
  EXPECT_TRUE(conv_runs);
}

// Issue 29: `braid ops --device cuda:0` says which ops the CUDA executor runs (in any build, with
// or without a GPU): its prepare refuses exactly the "no" rows. Since the int64/bool kernels the
// index ops and Cast run there too, and since its LRN kernel every op that runs does.
TEST(CliOps, TheCudaColumnSaysWhatPrepareAccepts) {
  auto r = run_command(cli() + " ops --device cuda:0 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::map<std::string, std::string> cuda;
  const auto listed = nlohmann::json::parse(r.out);
  for (const auto& op : listed["ops"])
    cuda[op["op_type"].get<std::string>()] = op["cuda"].get<std::string>();
  for (const char* yes : {"Conv", "ConvTranspose", "Resize", "MatMul", "LayerNormalization",
                          "Softmax", "Dropout", "Unsqueeze", "Einsum", "Upsample", "Erf", "Gather",
                          "Where", "Equal", "Not", "Expand", "Slice", "Cast", "LRN"})
    EXPECT_EQ(cuda[yes], "yes") << yes;
  EXPECT_EQ(cuda["Shape"], "-");  // folds at import only
  r = run_command(cli() + " ops --device cuda:0");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("cuda"), std::string::npos) << r.out;
  r = run_command(cli() + " ops");
  EXPECT_EQ(r.out.find("partly"), std::string::npos) << r.out;  // no column without --device
  r = run_command(cli() + " ops --device tpu:0");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
}

// inspect printed -11.46 GFLOPs: the batch CLI11 clamped to INT64_MAX overflowed the sizes.
TEST(CliLimits, HugeBatchOrImageSizeExitsTwo) {
  expect_exit_two("inspect inception_v3 --batch 99999999999999999999",
                  {"--batch: 99999999999999999999 is out of range", "from 1 to 65536"});
  expect_exit_two("inspect squeezenet --batch 2147483647", {"is out of range"});
  expect_exit_two("inspect inception_v3 --batch 65536",
                  {"tensor 'input'", "exceeds the limit", "--max-tensor-elements"});
  expect_exit_two("inspect squeezenet --max-tensor-elements 0", {"--max-tensor-elements"});
}

// ONNX files with a 100000x100000 input, no nodes, or opset 99, written by the venv's onnx.
TEST(CliLimits, OnnxFilesOverTheLimitsOrOutOfRange) {
  if (testing::venv_python().empty()) GTEST_SKIP() << "no .venv with onnx (make deps)";
  const auto dir = testing::scratch_dir() / "limits";
  std::filesystem::create_directories(dir);
  const std::string script = R"(
import sys, onnx
from onnx import helper, TensorProto as T
d = sys.argv[1]
def save(name, nodes, shape, opset=13):
    x = helper.make_tensor_value_info("x", T.FLOAT, shape)
    y = helper.make_tensor_value_info("y" if nodes else "x", T.FLOAT, shape)
    g = helper.make_graph(nodes, name, [x], [y])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]), f"{d}/{name}.onnx")
save("big", [helper.make_node("Relu", ["x"], ["y"])], [100000, 100000])
save("empty", [], [1, 4])
save("opset99", [helper.make_node("Relu", ["x"], ["y"])], [1, 4], opset=99)
)";
  auto r = run_command(testing::venv_python().string() + " -c '" + script + "' " + dir.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string big = (dir / "big.onnx").string();
  expect_exit_two("inspect " + big,
                  {"graph input 'x'", "exceeds the limit", "--max-tensor-elements"});
  expect_exit_two("inspect " + big + " --max-tensor-elements 20000000000",
                  {"activations", "exceeds the limit", "--max-activation-bytes"});
  r = run_command(cli() + " inspect " + big +
                  " --max-tensor-elements 20000000000 --max-activation-bytes 100000000000");
  EXPECT_EQ(r.exit_code, 0) << r.err;  // inspect allocates nothing
  expect_exit_two("inspect " + (dir / "empty.onnx").string(), {"the model has no nodes"});
  expect_exit_two("inspect " + (dir / "opset99.onnx").string(),
                  {"opset 99", "braid imports opsets 1 to 21"});
}

}  // namespace
}  // namespace braid
