// FP16 and BF16 ONNX models (issue 29) import upcast to float32: FLOAT16 / BFLOAT16 payloads
// (raw_data and int32_data) widen exactly, special values included; value types, Casts and
// constant attributes of those types become float32; DeclaredTypes records what the file said.
// Runs against ONNX Runtime are in tests/e2e/fp16_models_test.cc.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "ir/op.h"
#include "models/onnx_import.h"
#include "models/onnx_tensor.h"
#include "models/onnx_test_util.h"

namespace braid::models {
namespace {

using ir::OpKind;
using P = onnx::TensorProto;

constexpr float kInf = std::numeric_limits<float>::infinity();

// Bit patterns and the float32 each must widen to (NaN: any NaN).
struct Special {
  uint16_t bits;
  float value;
};
// float16: 1, -2, the largest normal, the smallest normal, the smallest and largest subnormals, a
// negative subnormal, +-inf, -0, +0, quiet and signalling NaN.
const std::vector<Special> kFloat16 = {
    {0x3c00, 1.0f},         {0xc000, -2.0f},           {0x7bff, 65504.0f},  {0x0400, 0x1p-14f},
    {0x0001, 0x1p-24f},     {0x03ff, 1023 * 0x1p-24f}, {0x8001, -0x1p-24f}, {0x7c00, kInf},
    {0xfc00, -kInf},        {0x8000, -0.0f},           {0x0000, 0.0f},      {0x7e00, std::nanf("")},
    {0x7c01, std::nanf("")}};
// bfloat16: 1, -5, the largest finite, the smallest normal and subnormal, +-inf, -0, NaN.
const std::vector<Special> kBFloat16 = {
    {0x3f80, 1.0f},      {0xc0a0, -5.0f},     {0x7f7f, 0x1.fep127f},
    {0x0080, 0x1p-126f}, {0x0001, 0x1p-133f}, {0x7f80, kInf},
    {0xff80, -kInf},     {0x8000, -0.0f},     {0x7fc0, std::nanf("")}};

onnx::TensorProto special_tensor(int type, const std::vector<Special>& values, bool raw) {
  onnx::TensorProto t;
  t.set_name("w");
  t.set_data_type(type);
  t.add_dims(static_cast<int64_t>(values.size()));
  for (const Special& s : values) {
    if (raw) {
      t.mutable_raw_data()->append(reinterpret_cast<const char*>(&s.bits), sizeof s.bits);
    } else {
      t.add_int32_data(s.bits);
    }
  }
  return t;
}

void expect_widened(std::span<const float> got, const std::vector<Special>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE("element " + std::to_string(i));
    if (std::isnan(want[i].value)) {
      EXPECT_TRUE(std::isnan(got[i])) << got[i];
    } else {
      EXPECT_EQ(got[i], want[i].value);
      EXPECT_EQ(std::signbit(got[i]), std::signbit(want[i].value));  // -0 stays -0
    }
  }
}

TEST(OnnxFp16, PayloadsWidenExactlyWithTheirSpecialValues) {
  for (bool raw : {true, false}) {
    SCOPED_TRACE(raw ? "raw_data" : "int32_data");
    const onnx_detail::Tensor h =
        onnx_detail::read_tensor(special_tensor(P::FLOAT16, kFloat16, raw), "w");
    EXPECT_TRUE(h.is_float());
    EXPECT_EQ(h.elem_type, P::FLOAT);  // widened: no Tensor holds FLOAT16
    EXPECT_EQ(h.shape, ir::Shape{static_cast<int64_t>(kFloat16.size())});
    expect_widened(h.floats, kFloat16);
    const onnx_detail::Tensor b =
        onnx_detail::read_tensor(special_tensor(P::BFLOAT16, kBFloat16, raw), "w");
    EXPECT_EQ(b.elem_type, P::FLOAT);
    expect_widened(b.floats, kBFloat16);
  }
}

TEST(OnnxFp16, PayloadOfTheWrongSizeIsRefused) {
  onnx::TensorProto t = special_tensor(P::FLOAT16, kFloat16, true);
  t.mutable_raw_data()->pop_back();
  expect_error([&] { onnx_detail::read_tensor(t, "initializer 'w'"); }, ErrorCode::kInvalidModel,
               {"initializer 'w'", "raw_data has 25 bytes", "needs 26"});
  t = special_tensor(P::BFLOAT16, kBFloat16, false);
  t.add_int32_data(0);
  expect_error([&] { onnx_detail::read_tensor(t, "initializer 'w'"); }, ErrorCode::kInvalidModel,
               {"initializer 'w'", "has 10 values", "needs 9"});
}

// Sets the element type of every graph input, output and value_info to `type`.
void retype(ModelMaker& mm, int type) {
  for (auto* list : {mm.g->mutable_input(), mm.g->mutable_output(), mm.g->mutable_value_info()})
    for (auto& v : *list) v.mutable_type()->mutable_tensor_type()->set_elem_type(type);
}

// A 16-bit float initializer of the bit patterns `bits`, as raw_data or int32_data.
void init16(ModelMaker& mm, const std::string& name, int type, std::vector<int64_t> dims,
            const std::vector<uint16_t>& bits, bool raw) {
  auto* t = mm.g->add_initializer();
  t->set_name(name);
  t->set_data_type(type);
  for (int64_t d : dims) t->add_dims(d);
  for (uint16_t b : bits) {
    if (raw) {
      t->mutable_raw_data()->append(reinterpret_cast<const char*>(&b), sizeof b);
    } else {
      t->add_int32_data(b);
    }
  }
}

// An FP16 model as onnxconverter-common writes it without keep_io_types: FLOAT16 inputs,
// outputs, value_info and weights.
TEST(OnnxFp16, Float16ModelImportsAsFloat32) {
  ModelMaker mm;
  mm.input("x", {1, 2, 3, 3});
  mm.value_info("c", {1, 1, 3, 3});
  mm.output("y", {1, 1, 3, 3});
  retype(mm, P::FLOAT16);
  // Weights 0.5 and 1, a bias of 1.5 (int32_data), a factor of -2.
  init16(mm, "w", P::FLOAT16, {1, 2, 1, 1}, {0x3800, 0x3c00}, true);
  init16(mm, "b", P::FLOAT16, {1}, {0x3e00}, false);
  init16(mm, "k", P::FLOAT16, {1}, {0xc000}, true);
  mm.node("Conv", "conv", {"x", "w", "b"}, {"c"});
  mm.node("Mul", "mul", {"c", "k"}, {"y"});
  ImportedModel m = mm.import();
  const ir::Graph& g = *m.graph;
  ASSERT_EQ(g.inputs().size(), 1u);
  EXPECT_EQ(g.value(g.inputs()[0]).type, (ir::TensorType{ir::DType::kFloat32, {1, 2, 3, 3}}));
  EXPECT_EQ(g.value(g.outputs()[0]).type.dtype, ir::DType::kFloat32);
  EXPECT_EQ(std::vector<float>(m.weights.data(*g.find_value("w")).begin(),
                               m.weights.data(*g.find_value("w")).end()),
            (std::vector<float>{0.5f, 1.0f}));
  EXPECT_EQ(m.weights.data(*g.find_value("b"))[0], 1.5f);
  EXPECT_EQ(m.weights.data(*g.find_value("k"))[0], -2.0f);
  EXPECT_EQ(m.declared.floats, ElementType::kFloat16);
  EXPECT_TRUE(m.declared.upcast());
  EXPECT_EQ(m.declared.inputs, std::vector<ElementType>{ElementType::kFloat16});
  EXPECT_EQ(m.declared.outputs, std::vector<ElementType>{ElementType::kFloat16});
  EXPECT_EQ(to_string(m.declared.floats), "float16");
}

// keep_io_types=True: float32 inputs and outputs, Casts to FLOAT16 after the inputs and back to
// FLOAT before the outputs. Those become Identity views; a Cast to INT64 stays a Cast.
TEST(OnnxFp16, CastsBetweenFloatTypesBecomeIdentities) {
  ModelMaker mm;
  mm.input("x", {2, 3});
  mm.output("y", {2, 3});
  mm.output("n", {2, 3});
  mm.g->mutable_output(1)->mutable_type()->mutable_tensor_type()->set_elem_type(P::INT64);
  ModelMaker::integer(mm.node("Cast", "to16", {"x"}, {"x16"}), "to", P::FLOAT16);
  mm.node("Relu", "relu", {"x16"}, {"r16"});
  ModelMaker::integer(mm.node("Cast", "to32", {"r16"}, {"y"}), "to", P::FLOAT);
  ModelMaker::integer(mm.node("Cast", "toint", {"r16"}, {"n"}), "to", P::INT64);
  ImportedModel m = mm.import();
  const ir::Graph& g = *m.graph;
  ASSERT_EQ(g.num_nodes(), 4u);
  EXPECT_EQ(g.nodes()[0].kind, OpKind::Identity);
  EXPECT_EQ(g.nodes()[1].kind, OpKind::Relu);
  EXPECT_EQ(g.nodes()[2].kind, OpKind::Identity);
  EXPECT_EQ(g.nodes()[3].kind, OpKind::Cast);
  EXPECT_EQ(g.value(g.outputs()[0]).name, "y");  // the graph output keeps its name
  EXPECT_EQ(g.value(g.outputs()[1]).type.dtype, ir::DType::kInt64);
  EXPECT_EQ(m.declared.floats, ElementType::kFloat16);  // from the Cast's target
  EXPECT_EQ(m.declared.inputs, std::vector<ElementType>{ElementType::kFloat32});
  EXPECT_EQ(m.declared.outputs,
            (std::vector<ElementType>{ElementType::kFloat32, ElementType::kInt64}));
}

// BF16 constants from a Constant node, ConstantOfShape's value and a folded Cast of a constant;
// all become float32 parameters.
TEST(OnnxFp16, BFloat16ConstantsFold) {
  ModelMaker mm(17);
  mm.input("x", {2, 2});
  mm.output("y", {2, 2});
  retype(mm, P::BFLOAT16);
  auto tensor_attr = [](onnx::NodeProto* n, const std::string& name, std::vector<uint16_t> bits,
                        std::vector<int64_t> dims) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::TENSOR);
    a->mutable_t()->set_data_type(P::BFLOAT16);
    for (int64_t d : dims) a->mutable_t()->add_dims(d);
    for (uint16_t b : bits) a->mutable_t()->add_int32_data(b);
  };
  // w = [[1, -5], [0.5, -0]] (a Constant), s = 3 everywhere (ConstantOfShape).
  tensor_attr(mm.node("Constant", "w", {}, {"w"}), "value", {0x3f80, 0xc0a0, 0x3f00, 0x8000},
              {2, 2});
  mm.init64("shape", {2, 2});
  tensor_attr(mm.node("ConstantOfShape", "fill", {"shape"}, {"s"}), "value", {0x4040}, {1});
  // A Cast to FLOAT of the constant, as converters leave them: folded, still float32.
  ModelMaker::integer(mm.node("Cast", "ws", {"w"}, {"w32"}), "to", P::FLOAT);
  mm.node("MatMul", "mm", {"x", "w32"}, {"p"});
  mm.node("Add", "add", {"p", "s"}, {"y"});
  ImportedModel m = mm.import();
  const ir::Graph& g = *m.graph;
  ASSERT_EQ(g.num_nodes(), 2u);  // MatMul, Add
  const auto w = m.weights.data(*g.find_value("w32"));
  ASSERT_EQ(w.size(), 4u);
  EXPECT_EQ(w[0], 1.0f);
  EXPECT_EQ(w[1], -5.0f);
  EXPECT_EQ(w[2], 0.5f);
  EXPECT_TRUE(std::signbit(w[3]));
  for (float v : m.weights.data(*g.find_value("s"))) EXPECT_EQ(v, 3.0f);
  EXPECT_EQ(m.declared.floats, ElementType::kBFloat16);
  EXPECT_EQ(m.declared.inputs, std::vector<ElementType>{ElementType::kBFloat16});
  EXPECT_EQ(to_string(m.declared.inputs[0]), "bfloat16");
}

// A float32 model declares float32 throughout; types braid does not compute stay refused.
TEST(OnnxFp16, Float32ModelIsNotUpcastAndOtherTypesStayRefused) {
  ModelMaker mm;
  mm.input("x", {2});
  mm.output("y", {2});
  mm.node("Relu", "relu", {"x"}, {"y"});
  ImportedModel m = mm.import();
  EXPECT_FALSE(m.declared.upcast());
  EXPECT_EQ(m.declared.inputs, std::vector<ElementType>{ElementType::kFloat32});

  retype(mm, P::DOUBLE);
  expect_error([&] { mm.import(); }, ErrorCode::kUnsupported,
               {"graph input 'x'", "DOUBLE", "float16, bfloat16 upcast"});
  ModelMaker cast;
  cast.input("x", {2});
  cast.output("y", {2});
  ModelMaker::integer(cast.node("Cast", "c", {"x"}, {"y"}), "to", P::UINT8);
  expect_error([&] { cast.import(); }, ErrorCode::kUnsupported, {"Cast to UINT8"});
}

}  // namespace
}  // namespace braid::models
