// Shapes chosen at load (input_shapes.h): the flags' text, and models with dynamic input dims
// refused without --shape/--dim (the message naming the input, the dim and both flags) and
// imported with either, the shape arithmetic on the fixed dims folded.
#include "models/input_shapes.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cctype>

#include "base/error.h"
#include "models/onnx_import.h"
#include "models/onnx_test_util.h"

namespace braid::models {
namespace {

// dims: "?" unset, a number its dim_value (-1 and 0 included), anything else a dim_param.
void dynamic_input(onnx::ValueInfoProto* vi, const std::string& name,
                   const std::vector<std::string>& dims) {
  vi->set_name(name);
  auto* t = vi->mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx::TensorProto::FLOAT);
  auto* s = t->mutable_shape();
  for (const std::string& d : dims) {
    auto* dim = s->add_dim();
    if (d == "?") continue;
    if (d == "0" || d == "-1" || std::isdigit(static_cast<unsigned char>(d[0])))
      dim->set_dim_value(std::stoll(d));
    else
      dim->set_dim_param(d);
  }
}

// x: [dims] -> Relu -> y (output shape unset).
ModelMaker relu_model(const std::vector<std::string>& dims) {
  ModelMaker mm;
  dynamic_input(mm.g->add_input(), "x", dims);
  mm.node("Relu", "relu", {"x"}, {"y"});
  mm.g->add_output()->set_name("y");
  return mm;
}

ir::Shape input_shape(const ImportedModel& m, size_t i = 0) {
  return m.graph->value(m.graph->inputs()[i]).type.shape;
}

InputShapes flags(std::vector<std::string> shapes, std::vector<std::string> dims = {}) {
  InputShapes s;
  for (const std::string& t : shapes) add_shape_flag(s, t);
  for (const std::string& t : dims) add_dim_flag(s, t);
  return s;
}

TEST(InputShapes, ParsesTrtexecSpelling) {
  EXPECT_EQ(parse_shape_flag("x=1x3x320x320"),
            (std::pair<std::string, std::vector<int64_t>>{"x", {1, 3, 320, 320}}));
  // The name is what precedes the last '=': TF-style names keep their ':' and '/'.
  EXPECT_EQ(parse_shape_flag("input:0=7").first, "input:0");
  EXPECT_EQ(parse_dim_flag("width=320"), (std::pair<std::string, int64_t>{"width", 320}));
  EXPECT_EQ(shape_flag_text({1, -1, 5}), "1x?x5");
}

// Bad text is refused with a sentence naming it, never a std::stoi exception.
TEST(InputShapes, RefusesBadText) {
  for (const char* bad : {"x", "=1x2", "x=", "x=1x", "x=1xa", "x=0x3", "x=-1x3", "x=1,3",
                          "x=99999999999999999999x1", "x=1x 3"})
    expect_error([&] { parse_shape_flag(bad); }, ErrorCode::kInvalidArgument, {"--shape", bad});
  for (const char* bad : {"w", "w=", "=3", "w=0", "w=3.5", "w=1e3", "w=99999999999999999999"})
    expect_error([&] { parse_dim_flag(bad); }, ErrorCode::kInvalidArgument, {"--dim", bad});
  InputShapes s = flags({"x=1x2"}, {"w=3"});
  add_shape_flag(s, "x=1x2");  // the same again is harmless
  expect_error([&] { add_shape_flag(s, "x=1x4"); }, ErrorCode::kInvalidArgument, {"'x'", "1x2"});
  expect_error([&] { add_dim_flag(s, "w=4"); }, ErrorCode::kInvalidArgument, {"'w'", "3"});
}

// The message a user of a public model meets first: it must say which input and dim, and give
// both ways to fix it with the dims known so far filled in.
TEST(InputShapes, UnfixedDynamicDimNamesInputDimAndFlags) {
  ModelMaker mm = relu_model({"?", "3", "48", "width"});
  expect_error([&] { mm.import(); }, ErrorCode::kUnsupported,
               {"graph input 'x': dim 3 ('width') is dynamic; fix it with --shape x=1x3x48x<width> "
                "or --dim width=<width>"});
  ModelMaker unnamed = relu_model({"1", "?", "4"});
  expect_error([&] { unnamed.import(); }, ErrorCode::kUnsupported,
               {"graph input 'x': dim 1 (unnamed) is dynamic; fix it with --shape x=1x<dim1>x4"});
}

TEST(InputShapes, ShapeOrDimFixesDynamicDims) {
  ModelMaker mm = relu_model({"?", "3", "height", "width"});
  EXPECT_EQ(input_shape(mm.import({.inputs = flags({"x=2x3x48x320"})})),
            (ir::Shape{2, 3, 48, 320}));
  // --dim by name; the batch fills the dynamic dim 0.
  ImportedModel m = mm.import({.batch = 4, .inputs = flags({}, {"height=32", "width=64"})});
  EXPECT_EQ(input_shape(m), (ir::Shape{4, 3, 32, 64}));
  EXPECT_EQ(m.graph->value(m.graph->outputs()[0]).type.shape, (ir::Shape{4, 3, 32, 64}));
  // Only one of the two: the other is still refused.
  expect_error([&] { mm.import({.inputs = flags({}, {"height=32"})}); }, ErrorCode::kUnsupported,
               {"dim 3 ('width')", "--shape x=1x3x32x<width>", "--dim width=<width>"});
}

// Exporters write -1 or 0 for "dynamic" in dim_value: a batch so written takes --batch, another
// dim so written needs a flag (0 was once taken for a zero-size tensor).
TEST(InputShapes, MinusOneAndZeroAreDynamic) {
  for (const char* d : {"-1", "0"}) {
    ModelMaker mm = relu_model({d, "3", "4"});
    EXPECT_EQ(input_shape(mm.import({.batch = 3})), (ir::Shape{3, 3, 4})) << d;
    ModelMaker inner = relu_model({"1", d, "4"});
    expect_error([&] { inner.import(); }, ErrorCode::kUnsupported, {"dim 1 (unnamed) is dynamic"});
    EXPECT_EQ(input_shape(inner.import({.inputs = flags({"x=1x5x4"})})), (ir::Shape{1, 5, 4}));
  }
}

// A --shape or --dim that does not fit the model is an error naming what the model has, not a
// flag silently ignored.
TEST(InputShapes, FlagsThatDoNotFitAreRefused) {
  ModelMaker mm = relu_model({"N", "3", "height", "width"});
  expect_error([&] { mm.import({.inputs = flags({"images=1x3x4x4"})}); },
               ErrorCode::kInvalidArgument, {"--shape images=1x3x4x4", "no input 'images'", "'x'"});
  expect_error([&] { mm.import({.inputs = flags({}, {"W=4"})}); }, ErrorCode::kInvalidArgument,
               {"--dim W=4", "'N', 'height', 'width'"});
  expect_error([&] { mm.import({.inputs = flags({"x=1x3x4"})}); }, ErrorCode::kInvalidArgument,
               {"--shape x=1x3x4", "4 dims [N,3,height,width]"});
  expect_error([&] { mm.import({.inputs = flags({"x=1x5x4x4"})}); }, ErrorCode::kInvalidArgument,
               {"--shape x=1x5x4x4", "dim 1 fixed at 3"});
  // --shape and --dim giving one name two values.
  expect_error([&] { mm.import({.inputs = flags({"x=1x3x4x4"}, {"width=8"})}); },
               ErrorCode::kInvalidArgument, {"dim 3 ('width') is 4 but --dim width=8"});
  ModelMaker fixed = relu_model({"1", "3"});
  expect_error([&] { fixed.import({.inputs = flags({}, {"N=2"})}); }, ErrorCode::kInvalidArgument,
               {"no named dynamic dims"});
  // Values from the struct (Python, config.pbtxt) are checked as well as the flags' text.
  InputShapes bad;
  bad.shapes["x"] = {1, 3, 0, 4};
  expect_error([&] { mm.import({.inputs = bad}); }, ErrorCode::kInvalidArgument, {"dim 2 is 0"});
  bad = {};
  bad.dims["width"] = -3;
  expect_error([&] { mm.import({.inputs = bad}); }, ErrorCode::kInvalidArgument, {"must be >= 1"});
  // Within the tensor limits.
  expect_error(
      [&] {
        mm.import({.inputs = flags({}, {"height=100000", "width=100000"})});
      },
      ErrorCode::kUnsupported, {"graph input 'x'", "--max-tensor-elements"});
}

// One dim_param is one size: --shape on one input fixes the name on the others; -1 in a shapes
// entry (config.pbtxt's "still dynamic") keeps a dim to the other rules.
TEST(InputShapes, NamedDimsAgreeAcrossInputs) {
  ModelMaker mm;
  dynamic_input(mm.g->add_input(), "a", {"N", "seq"});
  dynamic_input(mm.g->add_input(), "b", {"N", "seq"});
  mm.node("Add", "add", {"a", "b"}, {"y"});
  mm.g->add_output()->set_name("y");
  ImportedModel m = mm.import({.inputs = flags({"a=2x7"})});
  EXPECT_EQ(input_shape(m, 1), (ir::Shape{2, 7}));
  // Each --shape holds for its own input; here the Add then cannot broadcast.
  expect_error(
      [&] {
        mm.import({.inputs = flags({"a=2x7", "b=2x8"})});
      },
      ErrorCode::kInvalidModel, {"do not broadcast"});
  expect_error([&] { mm.import({.inputs = flags({"a=2x7"}, {"seq=8"})}); },
               ErrorCode::kInvalidArgument, {"('seq') is 7 but --dim seq=8 makes it 8"});
  InputShapes partial;
  partial.shapes["a"] = {-1, 5};
  EXPECT_EQ(input_shape(mm.import({.batch = 3, .inputs = partial}), 1), (ir::Shape{3, 5}));
}

// PaddleOCR's classifier declares x: [-1, 3, '?', '?']: one placeholder name for two unrelated
// dims. --shape fixes each; the name then fixes nothing else.
TEST(InputShapes, ARepeatedPlaceholderNameTakesEachShapeValue) {
  ModelMaker mm;
  dynamic_input(mm.g->add_input(), "x", {"?", "?"});
  mm.node("Relu", "relu", {"x"}, {"y"});
  mm.g->add_output()->set_name("y");
  EXPECT_EQ(input_shape(mm.import({.inputs = flags({"x=48x192"})}), 0), (ir::Shape{48, 192}));
}

// Shape -> Gather -> Mul -> Concat -> Reshape on the fixed dims folds at import, as it does for
// static models: no Shape op reaches braid's graph, and the Reshape's target is the fixed one.
TEST(InputShapes, ShapeArithmeticOnFixedDimsFolds) {
  ModelMaker mm;
  dynamic_input(mm.g->add_input(), "x", {"N", "4", "height", "width"});
  mm.init64("i0", {0});
  mm.init64("i1", {1});
  mm.init64("i2", {2});
  mm.init64("i3", {3});
  mm.node("Shape", "shape", {"x"}, {"s"});
  mm.node("Gather", "g0", {"s", "i0"}, {"n"});
  mm.node("Gather", "g1", {"s", "i1"}, {"c"});
  mm.node("Gather", "g2", {"s", "i2"}, {"h"});
  mm.node("Gather", "g3", {"s", "i3"}, {"w"});
  mm.node("Mul", "hw", {"h", "w"}, {"hw"});
  ModelMaker::integer(mm.node("Concat", "cat", {"n", "c", "hw"}, {"target"}), "axis", 0);
  mm.node("Reshape", "reshape", {"x", "target"}, {"r"});
  mm.node("Relu", "relu", {"r"}, {"y"});
  mm.g->add_output()->set_name("y");
  expect_error([&] { mm.import(); }, ErrorCode::kUnsupported, {"dim 2 ('height')"});
  ImportedModel m = mm.import({.batch = 2, .inputs = flags({}, {"height=6", "width=5"})});
  EXPECT_EQ(m.graph->value(m.graph->outputs()[0]).type.shape, (ir::Shape{2, 4, 30}));
  for (const ir::Node& n : m.graph->nodes())
    EXPECT_TRUE(n.kind == ir::OpKind::Reshape || n.kind == ir::OpKind::Relu) << n.name;
}

}  // namespace
}  // namespace braid::models
