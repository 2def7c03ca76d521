// Constant folding at import, the unsupported-op report, the opset range and the size limits:
// folded results compared with ONNX Runtime (scripts/make_fold_models.py) and hand-built models
// for the shape subgraphs exporters emit, plus one rejection test per limit, each asserting the
// code and that the message names the problem.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "ir/op.h"
#include "models/onnx_import.h"
#include "models/onnx_test_util.h"
#include "test_env.h"

namespace braid::models {
namespace {

using ir::OpKind;

// Every case of make_fold_models.py: braid folds the subgraph into the parameter feeding the
// final Add, whose data must equal ORT's value of the subgraph (exactly: the cases hold small
// integers and float arithmetic that has one correctly rounded result).
TEST(OnnxFold, MatchesOnnxRuntime) {
  if (testing::venv_python().empty()) GTEST_SKIP() << "no .venv/bin/python (make deps)";
  const auto dir = testing::scratch_dir() / "fold";
  const auto r = testing::run_command(
      testing::venv_python().string() + " " +
      (testing::source_dir() / "scripts" / "make_fold_models.py").string() + " " + dir.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream f(dir / "cases.json");
  const nlohmann::json cases = nlohmann::json::parse(f);
  ASSERT_GE(cases.size(), 15u);
  for (const auto& c : cases) {
    const std::string name = c["name"];
    SCOPED_TRACE(name);
    ImportedModel m = import_onnx_file((dir / (name + ".onnx")).string());
    // Everything but the Add folded away.
    ASSERT_EQ(m.graph->num_nodes(), 1u);
    EXPECT_EQ(m.graph->nodes()[0].kind, OpKind::Add);
    auto param = m.graph->find_value("cf");
    if (!param) param = m.graph->find_value("c");  // float results keep their name
    ASSERT_TRUE(param.has_value());
    std::vector<int64_t> shape = c["shape"];
    if (shape.empty()) shape = {1};
    EXPECT_EQ(m.graph->value(*param).type.shape, shape);
    const auto data = m.weights.data(*param);
    const std::vector<double> expected = c["values"];
    ASSERT_EQ(data.size(), expected.size());
    for (size_t k = 0; k < expected.size(); ++k)
      EXPECT_EQ(data[k], static_cast<float>(expected[k])) << "element " << k;
  }
}

// ShuffleNetV2's channel shuffle as torch exports it: the Reshape target comes from
// Shape -> Gather -> Div -> Unsqueeze -> Concat on a static shape.
TEST(OnnxFold, DynamicReshapeBecomesStatic) {
  ModelMaker mm(13);
  mm.input("x", {1, 6, 2, 2});
  mm.node("Shape", "shape", {"x"}, {"s"});
  mm.scalar64("one", 1);
  mm.node("Gather", "gather", {"s", "one"}, {"ch"});
  mm.scalar64("groups", 3);
  mm.node("Div", "div", {"ch", "groups"}, {"cpg"});
  mm.init64("axes", {0});
  mm.node("Unsqueeze", "unsqueeze", {"cpg", "axes"}, {"cpg1"});
  mm.init64("head", {1, 3});
  mm.init64("tail", {-1});
  ModelMaker::integer(mm.node("Concat", "concat", {"head", "cpg1", "tail"}, {"target"}), "axis", 0);
  mm.node("Reshape", "reshape", {"x", "target"}, {"y"});
  mm.output("y", {1, 3, 2, 4});
  ImportedModel m = mm.import();
  ASSERT_EQ(m.graph->num_nodes(), 1u);
  const ir::Node& n = m.graph->nodes()[0];
  EXPECT_EQ(n.kind, OpKind::Reshape);
  EXPECT_EQ(std::get<ir::ReshapeAttrs>(n.attrs).shape, (std::vector<int64_t>{1, 3, 2, -1}));
  EXPECT_EQ(m.graph->value(n.outputs[0]).type.shape, (ir::Shape{1, 3, 2, 4}));
}

// ViT's class token and BERT's position ids: ConstantOfShape-built weights become parameters.
TEST(OnnxFold, ConstantOfShapeWeightIsAParameter) {
  ModelMaker mm(13);
  mm.input("x", {2, 1, 4});
  mm.init64("shape", {1, 1, 4});
  auto* n = mm.node("ConstantOfShape", "cos", {"shape"}, {"w"});
  auto* a = n->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
  a->mutable_t()->add_dims(1);
  a->mutable_t()->add_float_data(0.5f);
  mm.node("Add", "add", {"x", "w"}, {"y"});
  mm.output("y", {2, 1, 4});
  ImportedModel m = mm.import();
  ASSERT_EQ(m.graph->num_nodes(), 1u);
  auto w = m.graph->find_value("w");
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(m.graph->value(*w).kind, ir::ValueKind::kParameter);
  for (float v : m.weights.data(*w)) EXPECT_EQ(v, 0.5f);
}

// An op braid only folds, on a tensor computed at run time, would need a kernel braid lacks.
TEST(OnnxFold, FoldOnlyOpOnRuntimeInputIsUnsupported) {
  ModelMaker mm(13);
  mm.input("x", {3, 4});
  mm.node("Less", "g", {"x", "x"}, {"y"});
  mm.output("y", {3, 4});
  expect_error([&] { mm.import(); }, ErrorCode::kUnsupported,
               {"node 'g': unsupported op type 'Less'", "'x' is computed at run time"});
}

// A fold must not allocate what a mistyped shape asks for.
TEST(OnnxFold, ResultOverTheLimitIsRefused) {
  ModelMaker mm(13);
  mm.input("x", {1});
  mm.init64("shape", {100000, 100000});
  mm.node("ConstantOfShape", "cos", {"shape"}, {"w"});
  mm.node("Add", "add", {"x", "w"}, {"y"});
  mm.output("y", {100000, 100000});
  expect_error([&] { mm.import(); }, ErrorCode::kUnsupported,
               {"node 'cos'", "[100000,100000]", "exceeds the limit", "--max-tensor-elements"});
}

TEST(OnnxFold, IntegerDivisionByZeroIsAnError) {
  ModelMaker mm(13);
  mm.input("x", {2, 2});
  mm.init64("a", {2, 2});
  mm.init64("zero", {0});
  mm.node("Div", "div", {"a", "zero"}, {"shape"});
  mm.node("Reshape", "reshape", {"x", "shape"}, {"y"});
  mm.output("y", {2, 2});
  expect_error([&] { mm.import(); }, ErrorCode::kInvalidModel, {"node 'div'", "division by zero"});
}

// ---------------------------------------------------------------------------------------------
// The unsupported-op report, the opset range, limits.

// A user deciding whether braid can run a model needs the whole gap, not its first op.
TEST(OnnxImportErrors, EveryUnsupportedOpIsListedAtOnce) {
  ModelMaker mm(13);
  mm.input("x", {1, 4});
  std::string prev = "x";
  for (int k = 0; k < 5; ++k) {
    const std::string out = "l" + std::to_string(k);
    mm.node("LSTM", "lstm" + std::to_string(k), {prev}, {out});
    prev = out;
  }
  mm.node("Foo", "foo", {prev}, {"f"});
  mm.node("Relu", "relu", {"f"}, {"y"});
  mm.output("y", {1, 4});
  expect_error([&] { mm.import(); }, ErrorCode::kUnsupported,
               {"2 unsupported op types in 6 nodes", "`braid ops`",
                "'LSTM': 5 nodes (node 'lstm0', node 'lstm1', node 'lstm2' and 2 more)",
                "'Foo': 1 node (node 'foo')"});
}

// Opset 99 would import with whatever semantics braid guesses for ops that changed since.
TEST(OnnxImportErrors, OpsetOutsideTheSupportedRange) {
  for (int64_t opset : {0, 22, 99}) {
    ModelMaker mm(opset);
    mm.input("x", {1, 4});
    mm.node("Relu", "relu", {"x"}, {"y"});
    mm.output("y", {1, 4});
    expect_error([&] { mm.import(); }, ErrorCode::kUnsupported,
                 {"opset " + std::to_string(opset), "opsets 1 to 21"});
  }
}

// An op used below the opset that introduced it is not ONNX braid knows how to read.
TEST(OnnxImportErrors, OpBelowItsFirstOpset) {
  ModelMaker mm(13);
  mm.input("x", {1, 4});
  mm.node("Gelu", "gelu", {"x"}, {"y"});
  mm.output("y", {1, 4});
  expect_error([&] { mm.import(); }, ErrorCode::kUnsupported,
               {"node 'gelu'", "'Gelu'", "from opset 20", "opset 13"});
}

// Without this check the first error was "the schedule ..." far from the cause.
TEST(OnnxImportErrors, ModelWithoutNodes) {
  ModelMaker mm;
  mm.input("x", {1, 4});
  mm.output("x", {1, 4});
  expect_error([&] { mm.import(); }, ErrorCode::kInvalidModel, {"the model has no nodes"});
}

// A 100000x100000 input used to end in std::bad_alloc when a run allocated it.
TEST(OnnxImportErrors, TensorOverTheElementLimit) {
  ModelMaker mm;
  mm.input("x", {100000, 100000});
  mm.node("Relu", "relu", {"x"}, {"y"});
  mm.output("y", {100000, 100000});
  expect_error([&] { mm.import(); }, ErrorCode::kUnsupported,
               {"graph input 'x'", "exceeds the limit", "--max-tensor-elements"});
  // Raised, the element limit passes and the activation total (2 x 40 GB) is next.
  expect_error([&] { mm.import({.limits = {.max_tensor_elements = int64_t{1} << 40}}); },
               ErrorCode::kUnsupported,
               {"activations", "exceeds the limit", "--max-activation-bytes"});
  EXPECT_NO_THROW(mm.import({.limits = {.max_tensor_elements = int64_t{1} << 40,
                                        .max_activation_bytes = int64_t{1} << 40}}));
  // A node output over the limit is named too.
  ModelMaker big;
  big.input("x", {100000, 1});
  big.input("z", {1, 100000});
  big.node("Add", "add", {"x", "z"}, {"y"});
  big.output("y", {100000, 100000});
  expect_error([&] { big.import(); }, ErrorCode::kUnsupported,
               {"node 'add'", "output 'y'", "[100000,100000]", "--max-tensor-elements"});
  expect_error([&] { big.import({.limits = {.max_tensor_elements = 0}}); },
               ErrorCode::kInvalidArgument, {"limits must be >= 1"});
}

// `braid ops` lists every op of op_kinds.inc: a kind without a row in the op table could never
// be imported.
TEST(OnnxOps, EveryOpKindHasATableRow) {
  const auto ops = supported_onnx_ops();
  EXPECT_TRUE(std::is_sorted(ops.begin(), ops.end(),
                             [](const auto& a, const auto& b) { return a.op_type < b.op_type; }));
  for (int k = 0; k < ir::kNumOpKinds; ++k) {
    const std::string_view name = ir::to_onnx_name(static_cast<OpKind>(k));
    auto it =
        std::find_if(ops.begin(), ops.end(), [&](const auto& op) { return op.op_type == name; });
    ASSERT_NE(it, ops.end()) << name;
    EXPECT_TRUE(it->runs) << name;
    EXPECT_LE(it->min_opset, it->max_opset) << name;
  }
  for (const char* folded : {"Shape", "ConstantOfShape", "Range"}) {
    auto it =
        std::find_if(ops.begin(), ops.end(), [&](const auto& op) { return op.op_type == folded; });
    ASSERT_NE(it, ops.end()) << folded;
    EXPECT_TRUE(it->folds && !it->runs) << folded;
  }
  // Folded on constants, run on activations.
  for (const char* both :
       {"Gather", "Slice", "Unsqueeze", "Squeeze", "Cast", "Where", "Equal", "Not"}) {
    auto it =
        std::find_if(ops.begin(), ops.end(), [&](const auto& op) { return op.op_type == both; });
    ASSERT_NE(it, ops.end()) << both;
    EXPECT_TRUE(it->folds && it->runs) << both;
  }
}

}  // namespace
}  // namespace braid::models
