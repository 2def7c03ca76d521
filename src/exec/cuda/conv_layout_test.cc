// How the CUDA executor chooses each 16-bit convolution's layout from measured times
// (conv_layout.h), without a GPU: which convolutions run NHWC, which values are stored so, and how
// the transforms at NCHW boundaries turn convolutions back.
#include "exec/cuda/conv_layout.h"

#include <gtest/gtest.h>

#include <memory>

#include "ir/graph.h"

namespace braid::exec::cuda {
namespace {

constexpr ConvLayout kNchw = ConvLayout::kNchw;
constexpr ConvLayout kNhwc = ConvLayout::kNhwc;

// x -> conv1 -> conv2 -> conv3 -> output, and conv1's output also to a MaxPool (output) when
// `pooled`: a value that an NCHW kernel reads.
struct Chain {
  explicit Chain(bool pooled) {
    ir::GraphBuilder b("chain");
    const auto f32 = [](ir::Shape s) { return ir::TensorType{ir::DType::kFloat32, std::move(s)}; };
    ValueId v = b.add_input("x", f32({1, 8, 6, 6}));
    for (int i = 0; i < 3; ++i) {
      const ValueId w =
          b.add_parameter("w" + std::to_string(i), f32({8, 8, 3, 3}), ir::ParamInit::normal(0.3f));
      v = b.add_op(ir::OpKind::Conv, ir::ConvAttrs{.kernel = {3, 3}, .pads = {1, 1, 1, 1}}, {v, w},
                   "conv" + std::to_string(i));
      values.push_back(v);
    }
    b.mark_output(v);
    if (pooled)
      b.mark_output(b.add_op(ir::OpKind::MaxPool, ir::PoolAttrs{.kernel = {2, 2}, .stride = {2, 2}},
                             {values[0]}, "pool"));
    graph = std::make_shared<const ir::Graph>(std::move(b).build());
    for (ValueId y : values) {
      const NodeId conv = graph->value(y).producer;
      sites.push_back({.conv = conv, .x = graph->node(conv).inputs[0], .y = y, .nhwc_ok = true});
    }
  }
  // Every site measured NHWC in `nhwc` us, NCHW in `nchw`, each transform `transform`.
  void time(double nhwc, double nchw, double transform) {
    for (ConvSite& s : sites) {
      s.nhwc_us = nhwc;
      s.nchw_us = nchw;
      s.x_transform_us = s.y_transform_us = transform;
    }
  }
  ConvLayouts choose(ConvLayoutMode mode = ConvLayoutMode::kMeasure) const {
    return choose_conv_layouts(*graph, sites, mode);
  }
  // Whether each conv's output is stored NHWC under `c`.
  std::vector<bool> stored(const ConvLayouts& c) const {
    std::vector<bool> out;
    for (ValueId v : values) out.push_back(c.stored_nhwc(v));
    return out;
  }
  std::shared_ptr<const ir::Graph> graph;
  std::vector<ValueId> values;  // each conv's output
  std::vector<ConvSite> sites;
};

TEST(ConvLayout, AChainOfFasterNhwcConvsKeepsItsInsideNhwc) {
  Chain c(false);
  c.time(5, 10, 1);
  const ConvLayouts got = c.choose();
  EXPECT_EQ(got.layout, (std::vector{kNhwc, kNhwc, kNhwc}));
  // Between two NHWC convolutions: NHWC. The graph's input and output: NCHW.
  EXPECT_EQ(c.stored(got), (std::vector{true, true, false}));
  EXPECT_FALSE(got.stored_nhwc(c.graph->inputs()[0]));
}

TEST(ConvLayout, AValueThatAnNchwKernelReadsStaysNchw) {
  Chain c(true);  // the MaxPool reads conv0's output
  c.time(5, 10, 1);
  const ConvLayouts got = c.choose();
  EXPECT_EQ(got.layout, (std::vector{kNhwc, kNhwc, kNhwc}));
  EXPECT_EQ(c.stored(got), (std::vector{false, true, false}));
}

// A convolution that adds a residual writes its output NCHW, where the addition runs, even when
// an NHWC convolution alone reads it; it still runs NHWC while that wins with the transform.
TEST(ConvLayout, AResidualConvolutionStoresItsOutputNchw) {
  Chain c(false);
  c.time(5, 10, 1);
  c.sites[0].residual = true;
  const ConvLayouts got = c.choose();
  EXPECT_EQ(got.layout, (std::vector{kNhwc, kNhwc, kNhwc}));
  EXPECT_EQ(c.stored(got), (std::vector{false, true, false}));
  // 9.5 + 1 for its output's transform loses to 10: the first turns back to NCHW.
  c.sites[0].nhwc_us = 9.5;
  EXPECT_EQ(c.choose().layout, (std::vector{kNchw, kNhwc, kNhwc}));
}

TEST(ConvLayout, SlowerNhwcConvsStayNchw) {
  Chain c(false);
  c.time(11, 10, 0);
  const ConvLayouts got = c.choose();
  EXPECT_EQ(got.layout, (std::vector{kNchw, kNchw, kNchw}));
  EXPECT_EQ(c.stored(got), (std::vector{false, false, false}));
}

// NHWC 9 us against NCHW 10: with transforms of 0.6 us the ends pay one each (9.6) and keep NHWC;
// with 1.5 us the ends lose (10.5), and then the middle one pays both sides' and loses too. A
// lone fast one in the middle pays both transforms: 9 + 2 * 0.4 < 10 keeps it.
TEST(ConvLayout, BoundaryTransformsTurnConvsBackUntilNoneLoses) {
  struct Case {
    double transform, ends_nhwc_us;
    std::vector<ConvLayout> layout;
    std::vector<bool> stored;
  };
  const Case cases[] = {{0.6, 9, {kNhwc, kNhwc, kNhwc}, {true, true, false}},
                        {1.5, 9, {kNchw, kNchw, kNchw}, {false, false, false}},
                        {0.4, 12, {kNchw, kNhwc, kNchw}, {false, false, false}}};
  for (const Case& k : cases) {
    SCOPED_TRACE("transforms " + std::to_string(k.transform));
    Chain c(false);
    c.time(9, 10, k.transform);
    c.sites[0].nhwc_us = c.sites[2].nhwc_us = k.ends_nhwc_us;
    const ConvLayouts got = c.choose();
    EXPECT_EQ(got.layout, k.layout);
    EXPECT_EQ(c.stored(got), k.stored);
  }
}

TEST(ConvLayout, ForcedModesIgnoreTheTimesButNotWhatCudnnCannotRun) {
  Chain c(false);
  c.time(11, 10, 5);
  c.sites[2].nhwc_ok = false;  // e.g. asymmetric pads
  const ConvLayouts nhwc = c.choose(ConvLayoutMode::kNhwc);
  EXPECT_EQ(nhwc.layout, (std::vector{kNhwc, kNhwc, kNchw}));
  // conv1's output is read by conv2, which runs NCHW.
  EXPECT_EQ(c.stored(nhwc), (std::vector{true, false, false}));
  c.time(1, 10, 0);
  EXPECT_EQ(c.choose(ConvLayoutMode::kNchw).layout, (std::vector{kNchw, kNchw, kNchw}));
  EXPECT_EQ(to_string(kNhwc), "NHWC");
  EXPECT_EQ(to_string(kNchw), "NCHW");
}

}  // namespace
}  // namespace braid::exec::cuda
