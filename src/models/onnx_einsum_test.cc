// Einsum import: the equation parser (accepted forms, refusals and their messages) and the
// braid ops an Einsum node becomes. The numbers are checked against ONNX Runtime and ONNX's
// own node tests in tests/e2e/einsum_test.cc.
#include "models/onnx_einsum.h"

#include <gtest/gtest.h>

#include "models/onnx_test_util.h"

namespace braid::models {
namespace {

using onnx_detail::EinsumMatMul;
using onnx_detail::parse_einsum_matmul;

struct Accepted {
  const char* equation;
  int batch_rank;
  bool transpose_a, transpose_b, transpose_out;
};

TEST(EinsumEquation, BatchedMatrixProductsAreAccepted) {
  for (const Accepted& c : std::vector<Accepted>{
           {"B G H I D, B G H J D -> B G H I J", 3, false, true, false},   // MaxViT Q K^T
           {"B G H I J, B G H J D -> B G H I D", 3, false, false, false},  // MaxViT P V
           {"bij,bjk->bik", 1, false, false, false},
           {"ij,jk->ik", 0, false, false, false},
           {"bji,bjk->bik", 1, true, false, false},
           {"bij,bjk->bki", 1, false, false, true},
           {"bji,bkj->bki", 1, true, true, true},
           {"aBij , aBjk->aBik", 2, false, false, false},  // letters are case-sensitive
       }) {
    SCOPED_TRACE(c.equation);
    const EinsumMatMul e = parse_einsum_matmul(c.equation, "node 'e'");
    EXPECT_EQ(e.batch_rank, c.batch_rank);
    EXPECT_EQ(e.transpose_a, c.transpose_a);
    EXPECT_EQ(e.transpose_b, c.transpose_b);
    EXPECT_EQ(e.transpose_out, c.transpose_out);
  }
}

// Each refusal names the node and the equation, says what is wrong and, for valid equations of
// another form, what braid supports: a user must see which node to change and how.
TEST(EinsumEquation, OtherEquationsAreRefusedWithTheReason) {
  struct Refused {
    const char* equation;
    ErrorCode code;
    const char* why;
  };
  for (const Refused& c : std::vector<Refused>{
           {"ij,jk", ErrorCode::kUnsupported, "implicit output"},
           {"i,i", ErrorCode::kUnsupported, "implicit output"},
           {"...ij,...jk->...ik", ErrorCode::kUnsupported, "ellipsis"},
           {"ij->ji", ErrorCode::kUnsupported, "has 1 operand"},
           {"ij,jk,kl->il", ErrorCode::kUnsupported, "has 3 operands"},
           {"bii,bij->bij", ErrorCode::kUnsupported, "repeats a letter in 'bii'"},
           {"ij->i", ErrorCode::kUnsupported, "has 1 operand"},
           {"bij,jk->bik", ErrorCode::kUnsupported, "ranks 3, 2 -> 3"},
           {"i,i->", ErrorCode::kUnsupported, "ranks 1, 1 -> 0"},
           {"bcij,cbjk->bcik", ErrorCode::kUnsupported, "same batch letters"},
           {"bij,bjk->cik", ErrorCode::kInvalidModel, "output letter 'c' is in no operand"},
           {"bij,bij->bij", ErrorCode::kUnsupported, "exactly one letter"},
           {"bij,bjk->bij", ErrorCode::kUnsupported, "exactly one letter"},
           {"bik,bjl->bij", ErrorCode::kUnsupported, "exactly one letter"},
           {"i1,1j->ij", ErrorCode::kInvalidModel, "unexpected '1'"},
           {"ij,jk->i,k", ErrorCode::kInvalidModel, "the output has a ','"},
       }) {
    SCOPED_TRACE(c.equation);
    std::vector<std::string> needles = {"node 'att'", std::string("'") + c.equation + "'", c.why};
    if (c.code == ErrorCode::kUnsupported) needles.push_back("batched matrix product only");
    expect_error([&] { parse_einsum_matmul(c.equation, "node 'att'"); }, c.code, needles);
  }
}

// A one-node Einsum model: x [2, 3, 4, 5] against y of `y_dims`.
ModelMaker einsum_model(const std::string& equation, std::vector<int64_t> y_dims,
                        std::vector<int64_t> out_dims, int64_t opset = 14) {
  ModelMaker mm(opset);
  mm.input("x", {2, 3, 4, 5});
  mm.input("y", y_dims);
  ModelMaker::text(mm.node("Einsum", "att", {"x", "y"}, {"z"}), "equation", equation);
  mm.output("z", out_dims);
  return mm;
}

TEST(EinsumImport, QKTransposedIsTransposeThenMatMul) {
  const ImportedModel m =
      einsum_model("a b i d, a b j d -> a b i j", {2, 3, 6, 5}, {2, 3, 4, 6}).import();
  const ir::Graph& g = *m.graph;
  ASSERT_EQ(g.num_nodes(), 2u);
  const ir::Node& t = g.nodes()[0];
  EXPECT_EQ(t.kind, ir::OpKind::Transpose);
  EXPECT_EQ(t.name, "att/transpose_b");
  EXPECT_EQ(std::get<ir::TransposeAttrs>(t.attrs).perm, (std::vector<int64_t>{0, 1, 3, 2}));
  EXPECT_EQ(g.value(t.inputs[0]).name, "y");
  const ir::Node& mm = g.nodes()[1];
  EXPECT_EQ(mm.kind, ir::OpKind::MatMul);
  EXPECT_EQ(mm.name, "att");
  EXPECT_EQ(g.value(mm.inputs[0]).name, "x");
  EXPECT_EQ(mm.inputs[1], t.outputs[0]);
  EXPECT_EQ(g.value(mm.outputs[0]).name, "z");
  EXPECT_EQ(g.value(mm.outputs[0]).type.shape, (ir::Shape{2, 3, 4, 6}));
}

TEST(EinsumImport, PlainProductIsOneMatMul) {
  const ImportedModel m = einsum_model("abij,abjk->abik", {2, 3, 5, 7}, {2, 3, 4, 7}).import();
  ASSERT_EQ(m.graph->num_nodes(), 1u);
  EXPECT_EQ(m.graph->nodes()[0].kind, ir::OpKind::MatMul);
}

// (A^T B^T)^T = B A: three transposes in the equation, none in the graph.
TEST(EinsumImport, ThreeTransposesBecomeSwappedOperands) {
  // x [2, 3, 4(j), 5(i)], y [2, 3, 6(k), 4(j)] -> z [2, 3, 6(k), 5(i)]
  const ImportedModel m = einsum_model("abji,abkj->abki", {2, 3, 6, 4}, {2, 3, 6, 5}).import();
  const ir::Graph& g = *m.graph;
  ASSERT_EQ(g.num_nodes(), 1u);
  EXPECT_EQ(g.value(g.nodes()[0].inputs[0]).name, "y");
  EXPECT_EQ(g.value(g.nodes()[0].inputs[1]).name, "x");
  EXPECT_EQ(g.value(g.nodes()[0].outputs[0]).type.shape, (ir::Shape{2, 3, 6, 5}));
}

TEST(EinsumImport, TransposedOutput) {
  // x [2, 3, 4(i), 5(k)], y [2, 3, 5(k), 6(j)] -> z [2, 3, 6(j), 4(i)]
  const ImportedModel m = einsum_model("abik,abkj->abji", {2, 3, 5, 6}, {2, 3, 6, 4}).import();
  const ir::Graph& g = *m.graph;
  ASSERT_EQ(g.num_nodes(), 2u);
  EXPECT_EQ(g.nodes()[0].kind, ir::OpKind::MatMul);
  EXPECT_EQ(g.nodes()[0].name, "att/matmul");
  EXPECT_EQ(g.nodes()[1].kind, ir::OpKind::Transpose);
  EXPECT_EQ(g.nodes()[1].name, "att");
  EXPECT_EQ(g.value(g.nodes()[1].outputs[0]).type.shape, (ir::Shape{2, 3, 6, 4}));
}

TEST(EinsumImport, ConstantOperandBecomesAParameter) {
  ModelMaker mm;
  mm.input("x", {2, 4, 5});
  mm.init("w", {2, 5, 3});
  ModelMaker::text(mm.node("Einsum", "att", {"x", "w"}, {"z"}), "equation", "bik,bkj->bij");
  mm.output("z", {2, 4, 3});
  const ImportedModel m = mm.import();
  ASSERT_EQ(m.graph->num_nodes(), 1u);
  const ir::Value& w = m.graph->value(m.graph->nodes()[0].inputs[1]);
  EXPECT_EQ(w.kind, ir::ValueKind::kParameter);
  EXPECT_EQ(w.type.shape, (ir::Shape{2, 5, 3}));
}

TEST(EinsumImport, RefusalsNameTheNode) {
  // Before opset 12 ONNX has no Einsum.
  expect_error(
      [] {
        einsum_model("abij,abjk->abik", {2, 3, 5, 7}, {2, 3, 4, 7}, 11).import();
      },
      ErrorCode::kUnsupported, {"node 'att'", "'Einsum'", "from opset 12"});
  expect_error(
      [] {
        einsum_model("abij,abjk", {2, 3, 5, 7}, {2, 3, 4, 7}).import();
      },
      ErrorCode::kUnsupported, {"node 'att'", "'abij,abjk'", "implicit output"});
  // A letter with two sizes: j is 5 in x, 6 in y.
  expect_error(
      [] {
        einsum_model("abij,abjk->abik", {2, 3, 6, 7}, {2, 3, 4, 7}).import();
      },
      ErrorCode::kInvalidModel, {"node 'att'", "letter 'j' has size 5", "but 6"});
  expect_error(
      [] {
        einsum_model("bij,bjk->bik", {2, 3, 5, 7}, {2, 3, 4, 7}).import();
      },
      ErrorCode::kInvalidModel, {"node 'att'", "do not fit the terms 'bij' and 'bjk'"});
  ModelMaker no_equation = einsum_model("abij,abjk->abik", {2, 3, 5, 7}, {2, 3, 4, 7});
  no_equation.g->mutable_node(0)->clear_attribute();
  expect_error([&] { no_equation.import(); }, ErrorCode::kInvalidModel,
               {"node 'att'", "needs an equation"});
  ModelMaker three = einsum_model("abij,abjk->abik", {2, 3, 5, 7}, {2, 3, 4, 7});
  three.g->mutable_node(0)->add_input("x");
  expect_error([&] { three.import(); }, ErrorCode::kInvalidModel,
               {"node 'att'", "names 2 operands, the node has 3"});
}

}  // namespace
}  // namespace braid::models
