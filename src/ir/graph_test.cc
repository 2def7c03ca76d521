#include "ir/graph.h"

#include <gtest/gtest.h>

#include "base/error.h"
#include "ir/op_cost.h"

namespace braid::ir {
namespace {

TEST(GraphBuilder, ConvShapeAndFlops) {
  GraphBuilder b("t");
  ValueId x = b.add_input("x", {DType::kFloat32, {1, 3, 32, 32}});
  ValueId w = b.add_parameter("w", {DType::kFloat32, {8, 3, 3, 3}}, ParamInit::normal(0.1f));
  ValueId y = b.add_op(OpKind::Conv,
                       ConvAttrs{.kernel = {3, 3}, .stride = {2, 2}, .pads = {1, 1, 1, 1}},
                       {x, w}, "conv");
  EXPECT_EQ(b.type(y).shape, (Shape{1, 8, 16, 16}));
  b.mark_output(y);
  Graph g = std::move(b).build();
  EXPECT_EQ(g.num_nodes(), 1u);
  EXPECT_EQ(op_flops(g, NodeId{0}), 2 * 8 * 16 * 16 * 27);
}

// A shape mismatch must be caught where the node is defined, naming it, so that no executor
// ever sees a graph whose buffers disagree with its kernels.
TEST(GraphBuilder, RejectsChannelMismatchNamingTheNode) {
  GraphBuilder b("t");
  ValueId x = b.add_input("x", {DType::kFloat32, {1, 4, 8, 8}});
  ValueId w = b.add_parameter("w", {DType::kFloat32, {8, 3, 1, 1}});
  try {
    b.add_op(OpKind::Conv, ConvAttrs{}, {x, w}, "bad_conv");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
    EXPECT_NE(std::string(e.what()).find("bad_conv"), std::string::npos) << e.what();
  }
}

TEST(GraphBuilder, CeilModePoolMatchesOnnx) {
  GraphBuilder b("t");
  ValueId x = b.add_input("x", {DType::kFloat32, {1, 64, 112, 112}});
  ValueId y = b.add_op(OpKind::MaxPool,
                       PoolAttrs{.kernel = {3, 3}, .stride = {2, 2}, .ceil_mode = true}, {x});
  EXPECT_EQ(b.type(y).shape, (Shape{1, 64, 56, 56}));
  ValueId z = b.add_op(OpKind::MaxPool,
                       PoolAttrs{.kernel = {3, 3}, .stride = {2, 2}, .ceil_mode = false}, {y});
  EXPECT_EQ(b.type(z).shape, (Shape{1, 64, 27, 27}));
}

TEST(GraphBuilder, ReshapeInfersMinusOne) {
  GraphBuilder b("t");
  ValueId x = b.add_input("x", {DType::kFloat32, {2, 128, 768}});
  ValueId y = b.add_op(OpKind::Reshape, ReshapeAttrs{{0, 0, 12, -1}}, {x});
  EXPECT_EQ(b.type(y).shape, (Shape{2, 128, 12, 64}));
  EXPECT_THROW(b.add_op(OpKind::Reshape, ReshapeAttrs{{5, -1}}, {x}), Error);
}

TEST(GraphBuilder, GraphWithoutOutputsIsRejected) {
  GraphBuilder b("t");
  b.add_input("x", {DType::kFloat32, {1}});
  EXPECT_THROW(std::move(b).build(), Error);
}

}  // namespace
}  // namespace braid::ir
