#include "ir/unit_graph.h"

#include <gtest/gtest.h>

#include "base/error.h"

namespace braid::ir {
namespace {

// x -> conv -> relu -> {conv_a -> relu_a, conv_b} -> concat; the activations join their convs.
std::shared_ptr<const Graph> small_branchy_graph() {
  GraphBuilder b("branchy");
  ValueId x = b.add_input("x", {DType::kFloat32, {1, 4, 8, 8}});
  auto conv = [&](ValueId in, int64_t oc, std::string name) {
    int64_t ic = b.type(in).shape[1];
    ValueId w = b.add_parameter(name + ".w", {DType::kFloat32, {oc, ic, 1, 1}});
    return b.add_op(OpKind::Conv, ConvAttrs{}, {in, w}, name);
  };
  ValueId c = b.add_op(OpKind::Relu, {}, {conv(x, 8, "stem")}, "stem_relu");
  ValueId a = b.add_op(OpKind::Relu, {}, {conv(c, 4, "a")}, "a_relu");
  ValueId bb = conv(c, 4, "b");
  ValueId cat = b.add_op(OpKind::Concat, AxisAttrs{1}, {a, bb}, "cat");
  b.mark_output(cat);
  return std::make_shared<const Graph>(std::move(b).build());
}

TEST(Fuse, ActivationsJoinTheirProducers) {
  UnitGraph u = fuse(small_branchy_graph());
  ASSERT_EQ(u.num_units(), 4u);  // stem+relu, a+relu, b, cat
  EXPECT_EQ(u.signature(UnitId{0}), "Conv-Relu");
  EXPECT_EQ(u.num_edge_references(), 4u);
  EXPECT_EQ(u.num_distinct_edges(), 4u);
  for (const UnitEdge& e : u.edges()) EXPECT_LT(e.from, e.to);
}

TEST(Fuse, UnitHintsWin) {
  GraphBuilder b("hinted");
  ValueId x = b.add_input("x", {DType::kFloat32, {1, 4, 8, 8}});
  NodeId r = b.add_node(OpKind::Relu, {}, {x}, "relu");
  ValueId w = b.add_parameter("w", {DType::kFloat32, {4, 4, 1, 1}});
  NodeId c = b.add_node(OpKind::Conv, ConvAttrs{}, {b.output(r), w}, "conv");
  b.add_unit_hint({r, c});
  b.mark_output(b.output(c));
  UnitGraph u = fuse(std::make_shared<const Graph>(std::move(b).build()));
  ASSERT_EQ(u.num_units(), 1u);
  EXPECT_EQ(u.signature(UnitId{0}), "Relu-Conv");
}

// A cycle in a weighted DAG would deadlock any schedule; it must be refused at load, by name.
TEST(UnitGraphFromDag, RejectsCycles) {
  std::vector<Unit> units(3);
  units[0].name = "a";
  units[1].name = "b";
  units[2].name = "c";
  std::vector<UnitEdge> edges = {{UnitId{0}, UnitId{1}}, {UnitId{1}, UnitId{2}}, {UnitId{2}, UnitId{1}}};
  try {
    UnitGraph::from_dag("cyc", units, edges);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cycle"), std::string::npos);
  }
}

TEST(UnitGraphFromDag, RenumbersTopologically) {
  std::vector<Unit> units(3);
  units[0].name = "late";
  units[1].name = "early";
  units[2].name = "mid";
  std::vector<UnitEdge> edges = {{UnitId{1}, UnitId{2}}, {UnitId{2}, UnitId{0}}};
  UnitGraph g = UnitGraph::from_dag("d", units, edges);
  EXPECT_EQ(g.unit(UnitId{0}).name, "early");
  EXPECT_EQ(g.unit(UnitId{2}).name, "late");
}

}  // namespace
}  // namespace braid::ir
