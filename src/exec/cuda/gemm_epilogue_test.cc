// Which ops after a GEMM the CUDA executor computes in cuBLASLt's epilogue (gemm_epilogue.h),
// without a GPU: small graphs grouped into units by ir::fuse, as the compiler sees them, and
// BERT's units. On a GPU, CudaExecutor.GemmEpiloguesMatchTheCpuExecutor (cuda_executor_test.cc)
// checks the values.
#include "exec/cuda/gemm_epilogue.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "ir/graph.h"
#include "ir/unit_graph.h"
#include "models/loader.h"

namespace braid::exec::cuda {
namespace {

ir::TensorType f32(ir::Shape s) {
  return {ir::DType::kFloat32, std::move(s)};
}

// A graph under construction, then its units and the chain matched at a named GEMM.
struct Net {
  ir::GraphBuilder b{"gemm"};
  ValueId param(const std::string& name, ir::Shape s) {
    return b.add_parameter(name, f32(std::move(s)), ir::ParamInit::normal(0.5f));
  }
  // x [2, 3, 8] MatMul w [8, 16]: "mm".
  ValueId matmul() {
    return b.add_op(ir::OpKind::MatMul, {}, {b.add_input("x", f32({2, 3, 8})), param("w", {8, 16})},
                    "mm");
  }
  // x [4, 8] Gemm w [16, 8] (transB), C when given: "gemm".
  ValueId gemm(std::optional<ir::Shape> c, float beta = 1.0f) {
    std::vector<ValueId> in{b.add_input("x", f32({4, 8})), param("w", {16, 8})};
    if (c) in.push_back(param("c", *c));
    return b.add_op(ir::OpKind::Gemm, ir::GemmAttrs{.beta = beta, .trans_b = true}, in, "gemm");
  }
  // Builds the graph with `out` its output, fuses it, and matches the unit `head` starts.
  GemmChain match(ValueId out, const std::string& head = "mm") {
    b.mark_output(out);
    graph = std::make_shared<const ir::Graph>(std::move(b).build());
    units = std::make_unique<ir::UnitGraph>(ir::fuse(graph));
    const NodeId h = *graph->find_node(head);
    for (size_t u = 0; u < units->num_units(); ++u) {
      ops = units->unit(UnitId(u)).ops;
      if (ops.front() == h) return match_gemm(*graph, ops);
    }
    ADD_FAILURE() << head << " heads no unit";
    return {};
  }
  ValueId value(const std::string& name) const { return *graph->find_value(name); }
  const ir::Node& node(const std::string& name) const {
    return graph->node(*graph->find_node(name));
  }

  std::shared_ptr<const ir::Graph> graph;
  std::unique_ptr<ir::UnitGraph> units;
  std::vector<NodeId> ops;  // the matched unit's
};

TEST(GemmEpilogue, MatMulAddReluIsOneReluBiasEpilogue) {
  Net n;
  const ValueId bias = n.param("bias", {16});
  const ValueId y = n.b.add_op(ir::OpKind::Add, {}, {n.matmul(), bias}, "add");
  const ValueId out = n.b.add_op(ir::OpKind::Relu, {}, {y}, "relu");
  const GemmChain c = n.match(out);
  ASSERT_EQ(n.ops.size(), 3u);  // ir::fuse: MatMul, Add, Relu in one unit
  EXPECT_EQ(c.epilogue, GemmEpilogue::kReluBias);
  EXPECT_EQ(c.used, 3u);
  EXPECT_EQ(c.y, out);
  EXPECT_EQ(c.bias, bias);
  EXPECT_EQ(c.bias_scale, 1.0f);
  EXPECT_EQ(c.bias_add, &n.node("add"));
  EXPECT_EQ(c.activation, &n.node("relu"));
}

TEST(GemmEpilogue, ABiasOfOneRowOnEitherSideOfTheAddIsTheBiasEpilogue) {
  for (const ir::Shape& shape : {ir::Shape{16}, ir::Shape{1, 16}, ir::Shape{1, 1, 16}})
    for (bool bias_first : {false, true}) {
      SCOPED_TRACE(std::to_string(shape.size()) + (bias_first ? "-D bias first" : "-D bias"));
      Net n;
      const ValueId mm = n.matmul(), bias = n.param("bias", shape);
      const ValueId out = n.b.add_op(ir::OpKind::Add, {},
                                     bias_first ? std::vector{bias, mm} : std::vector{mm, bias});
      const GemmChain c = n.match(out);
      EXPECT_EQ(c.epilogue, GemmEpilogue::kBias);
      EXPECT_EQ(c.used, 2u);
      EXPECT_EQ(c.y, out);
      EXPECT_EQ(c.bias, bias);
      EXPECT_EQ(c.activation, nullptr);
    }
}

TEST(GemmEpilogue, ABatchedMatMulTakesItsBias) {
  Net n;
  const ValueId a = n.b.add_input("a", f32({2, 4, 3, 8}));
  const ValueId w = n.b.add_input("b", f32({2, 4, 8, 5}));  // both operands activations
  const ValueId mm = n.b.add_op(ir::OpKind::MatMul, {}, {a, w}, "mm");
  const ValueId bias = n.param("bias", {1, 1, 5});
  const ValueId out = n.b.add_op(ir::OpKind::Add, {}, {mm, bias}, "add");
  const GemmChain c = n.match(out);
  EXPECT_EQ(c.epilogue, GemmEpilogue::kBias);
  EXPECT_EQ(c.used, 2u);
}

// cuBLASLt's bias is one value per output column of Y, the same for every row (and matrix).
TEST(GemmEpilogue, AnAddThatIsNoPerColumnBiasStaysOutside) {
  for (const ir::Shape& shape :
       {ir::Shape{3, 16}, ir::Shape{2, 3, 16}, ir::Shape{3, 1}, ir::Shape{1}, ir::Shape{}}) {
    SCOPED_TRACE(::testing::PrintToString(shape));
    Net n;
    const ValueId out = n.b.add_op(ir::OpKind::Add, {}, {n.matmul(), n.param("bias", shape)});
    const GemmChain c = n.match(out);
    EXPECT_EQ(c.epilogue, GemmEpilogue::kNone);
    EXPECT_EQ(c.used, 1u);
    EXPECT_EQ(c.y, n.value("mm"));
    EXPECT_FALSE(c.bias);
  }
}

TEST(GemmEpilogue, AnAddOfAnActivationStaysOutside) {
  Net n;
  const ValueId r = n.b.add_input("r", f32({16}));
  const ValueId out = n.b.add_op(ir::OpKind::Add, {}, {n.matmul(), r}, "add");
  const GemmChain c = n.match(out);
  EXPECT_EQ(c.epilogue, GemmEpilogue::kNone);
  EXPECT_EQ(c.used, 1u);
}

TEST(GemmEpilogue, AGemmOutputThatIsReadElsewhereIsWrittenAsItIs) {
  {
    Net n;  // the MatMul's output is also a graph output
    const ValueId mm = n.matmul();
    n.b.mark_output(mm);
    const GemmChain c = n.match(n.b.add_op(ir::OpKind::Add, {}, {mm, n.param("bias", {16})}));
    EXPECT_EQ(c.epilogue, GemmEpilogue::kNone);
    EXPECT_EQ(c.used, 1u);
  }
  {
    Net n;  // the biased value is also read by a Sigmoid: the bias joins, the ReLU does not
    const ValueId y = n.b.add_op(ir::OpKind::Add, {}, {n.matmul(), n.param("bias", {16})}, "add");
    n.b.mark_output(n.b.add_op(ir::OpKind::Sigmoid, {}, {y}, "sigmoid"));
    const GemmChain c = n.match(n.b.add_op(ir::OpKind::Relu, {}, {y}, "relu"));
    EXPECT_EQ(c.epilogue, GemmEpilogue::kBias);
    EXPECT_EQ(c.used, 2u);
    EXPECT_EQ(c.y, y);
  }
}

// cuBLASLt's GELU is the tanh approximation: ONNX's default (erf) Gelu runs as our kernel.
TEST(GemmEpilogue, OnlyATanhGeluJoinsTheEpilogue) {
  for (bool tanh : {false, true}) {
    SCOPED_TRACE(tanh ? "tanh" : "erf");
    Net n;
    const ValueId y = n.b.add_op(ir::OpKind::Add, {}, {n.matmul(), n.param("bias", {16})}, "add");
    const ValueId out =
        n.b.add_op(ir::OpKind::Gelu, ir::GeluAttrs{.tanh_approximation = tanh}, {y}, "gelu");
    const GemmChain c = n.match(out);
    ASSERT_EQ(n.ops.size(), 3u);
    EXPECT_EQ(c.epilogue, tanh ? GemmEpilogue::kGeluBias : GemmEpilogue::kBias);
    EXPECT_EQ(c.used, tanh ? 3u : 2u);
    EXPECT_EQ(c.y, tanh ? out : y);
    // FP32 plans keep the Gelu out (tanh_gelu false): the bias alone.
    const GemmChain fp32 = match_gemm(*n.graph, n.ops, false);
    EXPECT_EQ(fp32.epilogue, GemmEpilogue::kBias);
    EXPECT_EQ(fp32.used, 2u);
    EXPECT_EQ(fp32.y, y);
  }
}

TEST(GemmEpilogue, AnActivationWithoutABiasIsNotFused) {
  Net n;
  const GemmChain c = n.match(n.b.add_op(ir::OpKind::Relu, {}, {n.matmul()}, "relu"));
  EXPECT_EQ(c.epilogue, GemmEpilogue::kNone);
  EXPECT_EQ(c.used, 1u);
}

TEST(GemmEpilogue, OtherActivationsStayOutside) {
  Net n;
  const ValueId y = n.b.add_op(ir::OpKind::Add, {}, {n.matmul(), n.param("bias", {16})}, "add");
  const GemmChain c = n.match(n.b.add_op(ir::OpKind::Sigmoid, {}, {y}, "sigmoid"));
  EXPECT_EQ(c.epilogue, GemmEpilogue::kBias);
  EXPECT_EQ(c.used, 2u);
}

// A Gemm's per-column C is the bias, scaled by beta at prepare; a ReLU after it joins.
TEST(GemmEpilogue, AGemmsPerColumnCIsItsBiasScaledByBeta) {
  for (const ir::Shape& shape : {ir::Shape{16}, ir::Shape{1, 16}}) {
    Net n;
    const ValueId g = n.gemm(shape, 0.5f);
    const ValueId out = n.b.add_op(ir::OpKind::Relu, {}, {g}, "relu");
    const GemmChain c = n.match(out, "gemm");
    EXPECT_EQ(c.epilogue, GemmEpilogue::kReluBias);
    EXPECT_EQ(c.used, 2u);
    EXPECT_EQ(c.y, out);
    EXPECT_EQ(c.bias, n.value("c"));
    EXPECT_EQ(c.bias_scale, 0.5f);
    EXPECT_EQ(c.bias_add, nullptr);
  }
}

TEST(GemmEpilogue, AGemmsBroadcastCIsAccumulatedAsBefore) {
  for (const ir::Shape& shape : {ir::Shape{4, 16}, ir::Shape{4, 1}, ir::Shape{1}, ir::Shape{}}) {
    SCOPED_TRACE(::testing::PrintToString(shape));
    Net n;
    const GemmChain c = n.match(n.b.add_op(ir::OpKind::Relu, {}, {n.gemm(shape)}, "relu"), "gemm");
    EXPECT_EQ(c.epilogue, GemmEpilogue::kNone);
    EXPECT_EQ(c.used, 1u);
    EXPECT_EQ(c.y, n.value("gemm"));
  }
  Net n;  // C an activation
  const ValueId x = n.b.add_input("x", f32({4, 8})), c_in = n.b.add_input("c", f32({16}));
  const ValueId g = n.b.add_op(ir::OpKind::Gemm, ir::GemmAttrs{.trans_b = true},
                               {x, n.param("w", {16, 8}), c_in}, "gemm");
  EXPECT_EQ(n.match(g, "gemm").epilogue, GemmEpilogue::kNone);
}

TEST(GemmEpilogue, AGemmWithoutCTakesTheAddAfterIt) {
  Net n;
  const ValueId bias = n.param("bias", {16});
  const ValueId out = n.b.add_op(ir::OpKind::Add, {}, {n.gemm(std::nullopt), bias}, "add");
  const GemmChain c = n.match(out, "gemm");
  EXPECT_EQ(c.epilogue, GemmEpilogue::kBias);
  EXPECT_EQ(c.used, 2u);
  EXPECT_EQ(c.bias, bias);
  EXPECT_EQ(c.bias_scale, 1.0f);
}

TEST(GemmEpilogue, OtherOpsTakeNothing) {
  Net n;
  const ValueId x = n.b.add_input("x", f32({2, 16}));
  const ValueId y = n.b.add_op(ir::OpKind::Relu, {}, {x}, "relu");
  const GemmChain c = n.match(n.b.add_op(ir::OpKind::Add, {}, {y, n.param("bias", {16})}), "relu");
  EXPECT_EQ(c.epilogue, GemmEpilogue::kNone);
  EXPECT_EQ(c.used, 1u);
}

// BERT's Linear layers, as HuggingFace exports them (MatMul, then Add of a [N] bias): per layer
// Q, K, V, the attention output and the FFN's two, six bias epilogues; the FFN's Gelu is erf, so
// it stays our kernel. The attention's two MatMuls (scores, context) have no bias.
TEST(GemmEpilogue, BertsLinearLayersAreBiasEpilogues) {
  models::LoadOptions load;
  load.zoo.layers = 2;
  load.zoo.seq_len = 16;
  const models::LoadedModel m = models::load_model("bert", load);
  size_t matmuls = 0, biased = 0;
  for (size_t u = 0; u < m.units.num_units(); ++u) {
    const auto ops = m.units.unit(UnitId(u)).ops;
    if (m.graph->node(ops.front()).kind != ir::OpKind::MatMul) continue;
    ++matmuls;
    const GemmChain c = match_gemm(*m.graph, ops);
    if (c.epilogue == GemmEpilogue::kNone) continue;
    ++biased;
    EXPECT_EQ(c.epilogue, GemmEpilogue::kBias) << m.units.unit(UnitId(u)).name;
    EXPECT_EQ(c.used, 2u);
    EXPECT_EQ(m.graph->value(*c.bias).type.shape.size(), 1u);
  }
  EXPECT_EQ(matmuls, 2u * 8);
  EXPECT_EQ(biased, 2u * 6);
}

TEST(GemmEpilogue, Names) {
  EXPECT_EQ(to_string(GemmEpilogue::kNone), "none");
  EXPECT_EQ(to_string(GemmEpilogue::kReluBias), "relu_bias");
  EXPECT_EQ(to_string(GemmEpilogue::kGeluBias), "gelu_bias");
}

}  // namespace
}  // namespace braid::exec::cuda
