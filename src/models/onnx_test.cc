// ONNX import: hand-written ModelProtos for the importer's own cases (opsets, constants,
// patterns) and the rejections a user meets with a bad file, each asserting the code and that the
// message names the culprit. Export round trips: onnx_export_test.cc.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include "base/error.h"
#include "ir/unit_graph.h"
#include "models/onnx_export.h"
#include "models/onnx_import.h"
#include "models/onnx_test_util.h"
#include "models/zoo.h"
#include "test_env.h"

namespace braid::models {
namespace {

using namespace ir;
namespace fs = std::filesystem;

// ---------------------------------------------------------------------------------------------
// Hand-written ModelProtos for the importer's own cases and rejections.

// A Conv + Relu model, the base of most cases below.
ModelMaker conv_model(int64_t in_channels = 4) {
  ModelMaker mm;
  mm.input("x", {1, in_channels, 8, 8});
  mm.init("conv.w", {8, 4, 3, 3});
  auto* conv = mm.node("Conv", "conv", {"x", "conv.w"}, {"y"});
  ModelMaker::ints(conv, "kernel_shape", {3, 3});
  mm.node("Relu", "relu", {"y"}, {"z"});
  mm.output("z", {1, 8, 6, 6});
  return mm;
}

TEST(OnnxImport, NodesInAnyOrderAreSorted) {
  ModelMaker mm = conv_model();
  mm.g->mutable_node()->SwapElements(0, 1);
  ImportedModel m = mm.import();
  ASSERT_EQ(m.graph->num_nodes(), 2u);
  EXPECT_EQ(m.graph->nodes()[0].name, "conv");
  EXPECT_EQ(m.graph->nodes()[1].name, "relu");
  // A foreign Conv + Relu stays two ops: only braid's metadata re-fuses an activation.
  EXPECT_EQ(std::get<ConvAttrs>(m.graph->nodes()[0].attrs).activation, Activation::kNone);
  EXPECT_EQ(m.weights.data(*m.graph->find_value("conv.w"))[1], 0.51f);
}

TEST(OnnxImport, SymbolicBatchTakesTheOption) {
  ModelMaker mm;
  mm.input("x", {-1, 3, 4, 4});
  mm.node("Relu", "relu", {"x"}, {"y"});
  mm.output("y", {-1, 3, 4, 4});
  ImportedModel m = mm.import({.batch = 5});
  EXPECT_EQ(m.graph->value(m.graph->inputs()[0]).type.shape, (Shape{5, 3, 4, 4}));
  EXPECT_EQ(m.graph->value(m.graph->outputs()[0]).type.shape, (Shape{5, 3, 4, 4}));
}

TEST(OnnxImport, OtherDynamicDimsAreRejected) {
  ModelMaker mm;
  mm.input("ids", {1, -1});
  mm.node("Relu", "relu", {"ids"}, {"y"});
  mm.output("y", {1, -1});
  expect_error([&] { mm.import(); }, ErrorCode::kUnsupported,
               {"graph input 'ids'", "dim 1", "'N'"});
}

TEST(OnnxImport, ConstantsDropoutAndIdentityBecomeParametersOrAliases) {
  ModelMaker mm;
  mm.input("x", {2, 6});
  auto* c = mm.node("Constant", "shape_const", {}, {"shape"});
  ModelMaker::ints(c, "value_ints", {3, 4});
  auto* v = mm.node("Constant", "bias_const", {}, {"bias"});
  auto* a = v->add_attribute();
  a->set_name("value_floats");
  a->set_type(onnx::AttributeProto::FLOATS);
  for (float f : {1.f, 2.f, 3.f, 4.f}) a->add_floats(f);
  mm.node("Dropout", "drop", {"x"}, {"xd"});
  mm.node("Reshape", "reshape", {"xd", "shape"}, {"r"});
  mm.init("w", {4});
  mm.node("Identity", "w_alias", {"w"}, {"w2"});
  mm.node("Add", "add", {"r", "w2"}, {"s"});
  mm.node("Add", "add_bias", {"s", "bias"}, {"t"});
  mm.node("Identity", "copy", {"t"}, {"u"});
  mm.output("u", {3, 4});
  ImportedModel m = mm.import();
  const Graph& g = *m.graph;
  ASSERT_EQ(g.num_nodes(), 4u);  // reshape, add, add_bias, copy
  EXPECT_EQ(g.nodes()[0].kind, OpKind::Reshape);
  EXPECT_EQ(std::get<ReshapeAttrs>(g.nodes()[0].attrs).shape, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(g.value(g.nodes()[0].inputs[0]).name, "x");  // Dropout removed
  EXPECT_EQ(g.value(g.nodes()[1].inputs[1]).name, "w");  // Identity of an initializer
  EXPECT_EQ(g.value(g.nodes()[2].inputs[1]).name, "bias");
  EXPECT_EQ(g.nodes()[3].kind, OpKind::Identity);
  EXPECT_EQ(g.parameters().size(), 2u);
  EXPECT_EQ(m.weights.data(*g.find_value("bias"))[3], 4.0f);
}

TEST(OnnxImport, SplitAndPadAcrossOpsets) {
  for (int64_t opset : {11, 13, 18}) {
    SCOPED_TRACE("opset " + std::to_string(opset));
    ModelMaker mm(opset);
    mm.input("x", {1, 6, 3});
    auto* s = mm.node("Split", "split", {"x"}, {"a", "b", "c"});
    ModelMaker::integer(s, "axis", 1);
    auto* p = mm.node("Pad", "pad", {"a"}, {"pa"});
    if (opset >= 18) {  // Pad the last axis only, through the axes input
      mm.init64("pads", {1, 2});
      mm.init64("axes", {-1});
      p->add_input("pads");
      p->add_input("");
      p->add_input("axes");
    } else {
      mm.init64("pads", {0, 0, 1, 0, 0, 2});
      p->add_input("pads");
    }
    mm.output("pa", {1, 2, 6});
    mm.output("b", {1, 2, 3});
    mm.output("c", {1, 2, 3});
    ImportedModel m = mm.import();
    EXPECT_EQ(std::get<SplitAttrs>(m.graph->nodes()[0].attrs).sizes,
              (std::vector<int64_t>{2, 2, 2}));
    EXPECT_EQ(std::get<PadAttrs>(m.graph->nodes()[1].attrs).pads,
              (std::vector<int64_t>{0, 0, 1, 0, 0, 2}));
  }
}

TEST(OnnxImport, ClipBoundsAcrossOpsets) {
  {  // opset 6: attributes
    ModelMaker mm(6);
    mm.input("x", {1, 4});
    auto* c = mm.node("Clip", "relu6", {"x"}, {"y"});
    auto* a = c->add_attribute();
    a->set_name("max");
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(6.0f);
    mm.output("y", {1, 4});
    const ImportedModel m = mm.import();
    const auto& clip = std::get<ClipAttrs>(m.graph->nodes()[0].attrs);
    EXPECT_EQ(clip.min, ClipAttrs{}.min);  // no min: unbounded below
    EXPECT_EQ(clip.max, 6.0f);
  }
  {  // opset 13: constant inputs, min omitted
    ModelMaker mm(13);
    mm.input("x", {1, 4});
    mm.init("hi", {}, 6.0f);
    mm.node("Clip", "relu6", {"x", "", "hi"}, {"y"});
    mm.output("y", {1, 4});
    const ImportedModel m = mm.import();
    const auto& clip = std::get<ClipAttrs>(m.graph->nodes()[0].attrs);
    EXPECT_EQ(clip.max, 6.0f);
    EXPECT_EQ(m.graph->parameters().size(), 0u);  // the bound is an attribute, not a parameter
  }
  // A bound computed at run time cannot become an attribute.
  ModelMaker mm(13);
  mm.input("x", {1, 4});
  mm.input("lo", {});
  mm.node("Clip", "clip", {"x", "lo"}, {"y"});
  mm.output("y", {1, 4});
  expect_error([&] { mm.import(); }, ErrorCode::kUnsupported, {"node 'clip'", "min", "constant"});
}

TEST(OnnxImport, ReduceMeanAxesAcrossOpsets) {
  for (int64_t opset : {13, 18}) {
    SCOPED_TRACE("opset " + std::to_string(opset));
    ModelMaker mm(opset);
    mm.input("x", {2, 3, 4, 5});
    auto* r = mm.node("ReduceMean", "mean", {"x"}, {"y"});
    if (opset >= 18) {
      mm.init64("axes", {-1, 2});
      r->add_input("axes");
    } else {
      ModelMaker::ints(r, "axes", {-1, 2});
    }
    ModelMaker::integer(r, "keepdims", 0);
    mm.output("y", {2, 3});
    const ImportedModel m = mm.import();
    const auto& a = std::get<ReduceAttrs>(m.graph->nodes()[0].attrs);
    EXPECT_EQ(a.axes, (std::vector<int64_t>{2, 3}));  // normalized and sorted
    EXPECT_FALSE(a.keepdims);
  }
  {  // no axes: every axis
    ModelMaker mm(13);
    mm.input("x", {2, 3});
    mm.node("ReduceMean", "mean", {"x"}, {"y"});
    mm.output("y", {1, 1});
    EXPECT_EQ(std::get<ReduceAttrs>(mm.import().graph->nodes()[0].attrs).axes,
              (std::vector<int64_t>{0, 1}));
  }
  {  // opset 18's noop_with_empty_axes is an identity braid has no op for
    ModelMaker mm(18);
    mm.input("x", {2, 3});
    ModelMaker::integer(mm.node("ReduceMean", "mean", {"x"}, {"y"}), "noop_with_empty_axes", 1);
    mm.output("y", {2, 3});
    expect_error([&] { mm.import(); }, ErrorCode::kUnsupported,
                 {"node 'mean'", "noop_with_empty_axes"});
  }
  // The same axis twice (-1 is 1 here) is malformed.
  ModelMaker mm(13);
  mm.input("x", {2, 3});
  ModelMaker::ints(mm.node("ReduceMean", "mean", {"x"}, {"y"}), "axes", {1, -1});
  mm.output("y", {2, 1});
  expect_error([&] { mm.import(); }, ErrorCode::kInvalidModel, {"node 'mean'", "twice"});
}

TEST(OnnxImport, LrnNeedsItsSize) {
  ModelMaker mm(13);
  mm.input("x", {1, 4, 2, 2});
  auto* n = mm.node("LRN", "norm", {"x"}, {"y"});
  mm.output("y", {1, 4, 2, 2});
  expect_error([&] { mm.import(); }, ErrorCode::kInvalidModel, {"node 'norm'", "size"});
  ModelMaker::integer(n, "size", 3);
  EXPECT_EQ(std::get<LrnAttrs>(mm.import().graph->nodes()[0].attrs),
            (LrnAttrs{3, 1e-4f, 0.75f, 1.0f}));  // ONNX's defaults for the rest
}

TEST(OnnxImport, AutoPadSame) {
  ModelMaker mm = conv_model();
  ModelMaker::text(mm.g->mutable_node(0), "auto_pad", "SAME_LOWER");
  ModelMaker::ints(mm.g->mutable_node(0), "strides", {2, 2});
  mm.g->mutable_output(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(2)
      ->set_dim_value(4);
  mm.g->mutable_output(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(3)
      ->set_dim_value(4);
  ImportedModel m = mm.import();
  // in 8, stride 2 -> out 4; total pad (4-1)*2+3-8 = 1, put at the beginning for SAME_LOWER.
  EXPECT_EQ(std::get<ConvAttrs>(m.graph->nodes()[0].attrs).pads,
            (std::array<int64_t, 4>{1, 1, 0, 0}));
}

TEST(OnnxImport, OldSoftmaxCoercesTo2D) {
  ModelMaker mm(11);
  mm.input("x", {2, 3, 4});
  mm.node("Softmax", "sm", {"x"}, {"y"});  // opset 11 default axis 1: over the flattened [3, 4]
  mm.output("y", {2, 3, 4});
  ImportedModel m = mm.import();
  ASSERT_EQ(m.graph->num_nodes(), 3u);  // Reshape [2, 12], Softmax over dim 1, Reshape back
  const auto& nodes = m.graph->nodes();
  EXPECT_EQ(std::get<ReshapeAttrs>(nodes[0].attrs).shape, (std::vector<int64_t>{2, -1}));
  EXPECT_EQ(nodes[1].name, "sm");
  EXPECT_EQ(std::get<AxisAttrs>(nodes[1].attrs).axis, 1);
  EXPECT_EQ(m.graph->value(nodes[1].outputs[0]).type.shape, (Shape{2, 12}));
  EXPECT_EQ(m.graph->value(nodes[2].outputs[0]).name, "y");
  EXPECT_EQ(m.graph->value(nodes[2].outputs[0]).type.shape, (Shape{2, 3, 4}));
  ModelMaker::integer(mm.g->mutable_node(0), "axis", 2);  // the last axis: one plain Softmax
  m = mm.import();
  ASSERT_EQ(m.graph->num_nodes(), 1u);
  EXPECT_EQ(std::get<AxisAttrs>(m.graph->nodes()[0].attrs).axis, 2);
}

TEST(OnnxImport, CeilModePoolFollowsOnnxRuntimeNotOnnxShapeInference) {
  // in 5, kernel 2, stride 2, pads 1, ceil: ONNX's shape inference says 4, but the 4th window
  // would start in the end padding; ONNX Runtime and PyTorch drop it and give 3, as braid does.
  ModelMaker mm;
  mm.input("x", {1, 1, 5, 5});
  auto* p = mm.node("MaxPool", "pool", {"x"}, {"y"});
  ModelMaker::ints(p, "kernel_shape", {2, 2});
  ModelMaker::ints(p, "strides", {2, 2});
  ModelMaker::ints(p, "pads", {1, 1, 1, 1});
  ModelMaker::integer(p, "ceil_mode", 1);
  mm.node("Relu", "relu", {"y"}, {"z"});
  mm.g->add_output()->set_name("z");
  ImportedModel m = mm.import();
  EXPECT_EQ(m.graph->value(m.graph->outputs()[0]).type.shape, (Shape{1, 1, 3, 3}));
}

TEST(OnnxImport, BadMetadataIsIgnored) {
  ModelMaker mm = conv_model();
  mm.metadata("braid.unit_hints", R"([["conv", "no_such_node"]])");
  mm.metadata("braid.fused_activations", "[not json");
  ImportedModel m = mm.import();
  EXPECT_TRUE(m.graph->unit_hints().empty());
  EXPECT_EQ(m.graph->num_nodes(), 2u);
  ModelMaker good = conv_model();
  good.metadata("braid.unit_hints", R"([["conv", "relu"]])");
  good.metadata("braid.fused_activations", R"(["relu"])");
  m = good.import();
  ASSERT_EQ(m.graph->num_nodes(), 1u);  // relu fused back into conv
  EXPECT_EQ(std::get<ConvAttrs>(m.graph->nodes()[0].attrs).activation, Activation::kRelu);
  EXPECT_EQ(m.graph->value(m.graph->outputs()[0]).name, "z");
  EXPECT_TRUE(m.graph->unit_hints().empty());  // names 'relu', which is no op any more
}

// ---- rejections ----

TEST(OnnxImportErrors, Truncated) {
  const std::string bytes = conv_model().m.SerializeAsString();
  expect_error([&] { import_onnx_bytes(bytes.substr(0, bytes.size() / 2), "half.onnx"); },
               ErrorCode::kInvalidModel, {"half.onnx: not a valid ONNX model"});
}

TEST(OnnxImportErrors, NotOnnx) {
  std::mt19937 rng(1);
  std::string noise(1000, '\0');
  for (char& c : noise) c = static_cast<char>(rng());
  expect_error([&] { import_onnx_bytes(noise, "noise.bin"); }, ErrorCode::kInvalidModel,
               {"noise.bin: not a valid ONNX model"});
  fs::path text = testing::scratch_dir() / "notes.onnx";
  std::ofstream(text) << "this is not an ONNX model\n";
  expect_error([&] { import_onnx_file(text.string()); }, ErrorCode::kInvalidModel,
               {text.string() + ": not a valid ONNX model"});
  expect_error([&] { import_onnx_bytes("", "empty.onnx"); }, ErrorCode::kInvalidModel,
               {"empty.onnx: not a valid ONNX model"});
}

TEST(OnnxImportErrors, MissingFile) {
  expect_error([] { import_onnx_file("/nonexistent/model.onnx"); }, ErrorCode::kNotFound,
               {"/nonexistent/model.onnx"});
}

TEST(OnnxImportErrors, UnsupportedOp) {
  for (const char* op : {"LSTM", "Foo"}) {
    ModelMaker mm = conv_model();
    mm.node(op, "my_op", {"z"}, {"w"});
    mm.g->mutable_output(0)->set_name("w");
    expect_error([&] { mm.import(); }, ErrorCode::kUnsupported,
                 {"node 'my_op': unsupported op type '" + std::string(op) + "'"});
  }
  ModelMaker mm = conv_model();  // an attribute braid does not know could change the semantics
  ModelMaker::integer(mm.g->mutable_node(1), "fancy", 1);
  expect_error([&] { mm.import(); }, ErrorCode::kUnsupported, {"node 'relu'", "'fancy'"});
}

// The transformer ops' inputs that braid needs at import time, and values it cannot run.
TEST(OnnxImportErrors, TransformerOpRejections) {
  auto one_op = [](const std::string& op, std::vector<std::string> in) {
    ModelMaker mm;
    mm.input("x", {2, 3});
    mm.node(op, "op", std::move(in), {"y"});
    mm.output("y", {});
    return mm;
  };
  {  // Slice bounds from a graph input: braid plans shapes at import, it has no runtime shapes.
    ModelMaker mm = one_op("Slice", {"x", "s", "e"});
    for (const char* name : {"s", "e"}) {
      auto* vi = mm.g->add_input();
      vi->set_name(name);
      vi->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::INT64);
      vi->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(1);
    }
    expect_error([&] { mm.import(); }, ErrorCode::kUnsupported,
                 {"node 'op'", "starts input 's' must be a constant"});
  }
  {  // A float input to Gather's indices would be read as int64 bits.
    ModelMaker mm = one_op("Gather", {"x", "x"});
    expect_error([&] { mm.import(); }, ErrorCode::kInvalidModel, {"indices are float32"});
  }
  {  // A step of 0 would never advance.
    ModelMaker mm = one_op("Slice", {"x", "s", "e", "a", "st"});
    mm.init64("s", {0});
    mm.init64("e", {2});
    mm.init64("a", {1});
    mm.init64("st", {0});
    expect_error([&] { mm.import(); }, ErrorCode::kInvalidModel, {"step 0"});
  }
  {  // Cast to a type braid has no kernels for.
    ModelMaker mm = one_op("Cast", {"x"});
    ModelMaker::integer(mm.g->mutable_node(0), "to", onnx::TensorProto::DOUBLE);
    expect_error([&] { mm.import(); }, ErrorCode::kUnsupported, {"Cast to DOUBLE"});
  }
  {  // Squeezing a dim that is not 1 would change the element count.
    ModelMaker mm = one_op("Squeeze", {"x", "axes"});
    mm.init64("axes", {0});
    expect_error([&] { mm.import(); }, ErrorCode::kInvalidModel,
                 {"cannot squeeze dim 0 of size 2"});
  }
  {  // Where's condition must be bool: a float would be read byte by byte.
    ModelMaker mm = one_op("Where", {"x", "x", "x"});
    expect_error([&] { mm.import(); }, ErrorCode::kInvalidModel, {"condition is float32"});
  }
  {  // Not on a float: its bytes are not bools, and ONNX defines Not on bool only.
    ModelMaker mm = one_op("Not", {"x"});
    expect_error([&] { mm.import(); }, ErrorCode::kInvalidModel,
                 {"node 'op' (Not)", "input is float32, must be bool"});
  }
}

// PyTorch writes GELU's sqrt(2), 1 and 0.5 as Constant nodes as often as initializers; the
// pattern is planned before the walk reads those, so both forms must be recognized.
TEST(OnnxImport, ErfGeluWithConstantNodeScalarsBecomesOneGelu) {
  ModelMaker mm(13);
  mm.input("x", {2, 4});
  auto scalar = [&](const std::string& name, float v, bool as_tensor) {
    onnx::AttributeProto* a = mm.node("Constant", name, {}, {name})->add_attribute();
    if (as_tensor) {
      a->set_name("value");
      a->set_type(onnx::AttributeProto::TENSOR);
      a->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
      a->mutable_t()->add_float_data(v);
    } else {
      a->set_name("value_float");
      a->set_type(onnx::AttributeProto::FLOAT);
      a->set_f(v);
    }
  };
  scalar("sqrt2", 1.41421356f, true);
  scalar("one", 1.0f, false);
  scalar("half", 0.5f, true);
  mm.node("Div", "div", {"x", "sqrt2"}, {"d"});
  mm.node("Erf", "erf", {"d"}, {"e"});
  mm.node("Add", "add", {"e", "one"}, {"a"});
  mm.node("Mul", "mul", {"x", "a"}, {"m"});
  mm.node("Mul", "half_mul", {"m", "half"}, {"y"});
  mm.output("y", {2, 4});
  ImportedModel m = mm.import();
  ASSERT_EQ(m.graph->num_nodes(), 1u);
  const ir::Node& gelu = m.graph->nodes()[0];
  EXPECT_EQ(gelu.kind, OpKind::Gelu);
  EXPECT_FALSE(std::get<GeluAttrs>(gelu.attrs).tanh_approximation);
  // A different constant (not 1) is no GELU: the five nodes stay.
  mm.g->mutable_node(1)->mutable_attribute(0)->set_f(2.0f);
  EXPECT_EQ(mm.import().graph->num_nodes(), 5u);
}

TEST(OnnxImportErrors, Cycle) {
  ModelMaker mm;
  mm.input("x", {1, 4});
  mm.node("Add", "add1", {"x", "r"}, {"a"});
  mm.node("Relu", "relu1", {"a"}, {"r"});
  mm.node("Relu", "after", {"a"}, {"b"});  // downstream of the cycle, not on it
  mm.output("b", {1, 4});
  expect_error([&] { mm.import(); }, ErrorCode::kInvalidModel, {"cycle", "'add1'", "'relu1'"});
}

TEST(OnnxImportErrors, ShapeMismatch) {
  // Weights made for 4 input channels, input with 3: braid's own shape inference says so.
  expect_error([] { conv_model(3).import(); }, ErrorCode::kInvalidModel,
               {"node 'conv'", "input channels"});
  // A value_info that contradicts the shapes: the model is inconsistent.
  ModelMaker mm = conv_model();
  mm.value_info("y", {1, 8, 7, 7});
  expect_error([&] { mm.import(); }, ErrorCode::kInvalidModel,
               {"node 'conv'", "shape mismatch", "'y'", "[1,8,7,7]"});
  // So does a declared graph output shape.
  ModelMaker out = conv_model();
  out.g->mutable_output(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(1)
      ->set_dim_value(9);
  expect_error([&] { out.import(); }, ErrorCode::kInvalidModel, {"node 'relu'", "shape mismatch"});
}

TEST(OnnxImportErrors, MissingInitializer) {
  ModelMaker mm = conv_model();
  mm.g->clear_initializer();
  expect_error([&] { mm.import(); }, ErrorCode::kInvalidModel,
               {"node 'conv'", "'conv.w'", "not defined"});
}

TEST(OnnxImportErrors, NodeWithoutOutput) {  // found by the fuzzer
  ModelMaker mm = conv_model();
  mm.node("Relu", "dangling", {"z"}, {});
  expect_error([&] { mm.import(); }, ErrorCode::kInvalidModel, {"node 'dangling'", "output"});
}

TEST(OnnxImportErrors, ExternalData) {
  ModelMaker mm = conv_model();
  onnx::TensorProto* w = mm.g->mutable_initializer(0);
  w->clear_float_data();
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  expect_error([&] { mm.import(); }, ErrorCode::kUnsupported, {"initializer 'conv.w'", "external"});
}

TEST(OnnxImportErrors, BadFilesFromScript) {
  if (testing::venv_python().empty()) GTEST_SKIP() << "no .venv/bin/python (make deps)";
  fs::path dir = testing::scratch_dir() / "bad_onnx";
  auto r = testing::run_command(testing::venv_python().string() + " " +
                                (testing::source_dir() / "scripts" / "make_bad_onnx.py").string() +
                                " " + dir.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::tuple<std::string, ErrorCode, std::string>> cases = {
      {"truncated.onnx", ErrorCode::kInvalidModel, "not a valid ONNX model"},
      {"not_onnx.onnx", ErrorCode::kInvalidModel, "not a valid ONNX model"},
      {"unsupported_op.onnx", ErrorCode::kUnsupported, "node 'lstm': unsupported op type 'LSTM'"},
      {"cycle.onnx", ErrorCode::kInvalidModel, "cycle through node"},
      {"shape_mismatch.onnx", ErrorCode::kInvalidModel, "node 'conv' (Conv)"},
      {"missing_initializer.onnx", ErrorCode::kInvalidModel,
       "node 'conv': input 'conv.w' is not defined"},
  };
  for (const auto& [file, code, needle] : cases) {
    SCOPED_TRACE(file);
    const std::string path = (dir / file).string();
    expect_error([&] { import_onnx_file(path); }, code, {path + ": ", needle});
  }
}

}  // namespace
}  // namespace braid::models
