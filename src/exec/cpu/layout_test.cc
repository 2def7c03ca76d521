// The layout pass: which activations the CPU executor keeps blocked, on hand-made graphs and on
// zoo models, and layout names.
#include "exec/cpu/layout.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "base/error.h"
#include "models/zoo.h"

namespace braid::exec::cpu {
namespace {

using ir::OpKind;
using ir::ParamInit;

constexpr TensorLayout kPlain = TensorLayout::kPlain;
constexpr TensorLayout kBlocked = TensorLayout::kNChw16c;

ir::TensorType f32(ir::Shape shape) {
  return {ir::DType::kFloat32, std::move(shape)};
}

ValueId conv(ir::GraphBuilder& b, ValueId x, int64_t ic, int64_t oc, const std::string& name) {
  return b.add_op(OpKind::Conv, ir::ConvAttrs{.kernel = {3, 3}, .pads = {1, 1, 1, 1}},
                  {x, b.add_parameter(name + ".w", f32({oc, ic, 3, 3}), ParamInit::normal(0.1f))},
                  name);
}

TEST(CpuLayout, BlocksConvChainsAndKeepsBoundariesPlain) {
  ir::GraphBuilder b("chain");
  const ValueId x = b.add_input("x", f32({1, 16, 8, 8}));
  const ValueId r0 = b.add_op(OpKind::Relu, {}, {x}, "relu0");  // from a graph input: plain
  const ValueId c1 = conv(b, r0, 16, 32, "c1");
  const ValueId c2 = conv(b, c1, 32, 16, "c2");
  const ValueId c3 = conv(b, c1, 32, 24, "c3");  // 24 channels: not a whole 16c block
  const ValueId cat = b.add_op(OpKind::Concat, ir::AxisAttrs{1}, {c2, c1}, "cat");
  const ValueId cat_plain = b.add_op(OpKind::Concat, ir::AxisAttrs{1}, {c2, x}, "cat_plain");
  const ValueId add = b.add_op(OpKind::Add, {}, {c2, c2}, "add");
  const ValueId pool =
      b.add_op(OpKind::MaxPool, ir::PoolAttrs{.kernel = {2, 2}, .stride = {2, 2}}, {cat}, "pool");
  const ValueId flat = b.add_op(OpKind::Flatten, ir::AxisAttrs{1}, {pool}, "flatten");
  b.mark_output(flat);
  b.mark_output(c3);
  b.mark_output(cat_plain);
  b.mark_output(add);
  const ir::Graph g = std::move(b).build();
  const auto layouts = choose_layouts(g, {.blocked = kBlocked});
  auto at = [&](ValueId v) { return layouts[index(v)]; };
  EXPECT_EQ(at(x), kPlain);   // a graph input
  EXPECT_EQ(at(r0), kPlain);  // blocked data starts at a conv
  EXPECT_EQ(at(c1), kBlocked);
  EXPECT_EQ(at(c2), kBlocked);
  EXPECT_EQ(at(c3), kPlain);  // a graph output, and 24 % 16 != 0
  EXPECT_EQ(at(cat), kBlocked);
  EXPECT_EQ(at(cat_plain), kPlain);
  EXPECT_EQ(at(add), kPlain);   // a graph output
  EXPECT_EQ(at(pool), kPlain);  // read by a view
  EXPECT_EQ(at(flat), kPlain);
  // A concat with one plain input stays plain, so c2 reaches it blocked and is reordered.
  EXPECT_TRUE(can_be_blocked(g, c2, kBlocked));
  EXPECT_FALSE(can_be_blocked(g, c3, kBlocked));
  EXPECT_TRUE(can_be_blocked(g, c3, TensorLayout::kNhwc));  // nhwc has no block
  EXPECT_FALSE(can_be_blocked(g, pool, kBlocked));
  for (TensorLayout l : layouts) EXPECT_TRUE(l == kPlain || l == kBlocked);

  const auto plain = choose_layouts(g, {.blocked = kPlain});
  EXPECT_EQ(std::count(plain.begin(), plain.end(), kPlain), static_cast<long>(g.num_values()));
}

TEST(CpuLayout, CeilModeAveragePoolWritesPlain) {
  ir::GraphBuilder b("pool");
  const ValueId x = b.add_input("x", f32({1, 16, 7, 7}));
  const ValueId c = conv(b, x, 16, 16, "c");
  const ValueId p = b.add_op(
      OpKind::AveragePool,
      ir::PoolAttrs{
          .kernel = {2, 2}, .stride = {2, 2}, .ceil_mode = true, .count_include_pad = true},
      {c}, "pool");
  b.mark_output(conv(b, p, 16, 16, "c2"));
  const ir::Graph g = std::move(b).build();
  const auto layouts = choose_layouts(g, {.blocked = kBlocked});
  EXPECT_EQ(layouts[index(c)], kBlocked);
  EXPECT_EQ(layouts[index(p)], kPlain);  // its clipped windows are rescaled on nchw
}

// On real networks: inputs, outputs and everything views or plain-only ops read stay plain;
// every blocked value is one the kernels take; most conv outputs are blocked.
TEST(CpuLayout, ZooModels) {
  const std::pair<const char*, int64_t> models[] = {
      {"inception_v3", 107},    {"resnet50", 64}, {"googlenet", 64}, {"squeezenet", 64},
      {"tv_inception_v3", 107}, {"nasnet", 96},   {"bert", 0}};
  for (const auto& [name, image_size] : models) {
    const ir::Graph g = models::build_zoo_model(
        name, {.batch = 1, .image_size = image_size, .layers = 1, .seq_len = 16, .hidden = 128});
    for (TensorLayout blocked : {TensorLayout::kNhwc, TensorLayout::kNChw16c}) {
      const auto layouts = choose_layouts(g, {.blocked = blocked});
      for (ValueId v : g.inputs()) EXPECT_EQ(layouts[index(v)], kPlain) << name;
      for (ValueId v : g.outputs()) EXPECT_EQ(layouts[index(v)], kPlain) << name;
      size_t convs = 0, blocked_convs = 0;
      for (size_t i = 0; i < g.num_values(); ++i) {
        const ValueId v = make_id<ValueId>(i);
        if (layouts[i] != kPlain) {
          EXPECT_EQ(layouts[i], blocked);
          EXPECT_TRUE(can_be_blocked(g, v, blocked)) << name << " " << g.value(v).name;
        }
        if (g.value(v).kind == ir::ValueKind::kActivation &&
            g.node(g.value(v).producer).kind == OpKind::Conv) {
          ++convs;
          blocked_convs += layouts[i] != kPlain;
        }
      }
      if (std::string(name) == "bert") {
        EXPECT_EQ(convs, 0u);
      } else if (blocked == TensorLayout::kNhwc) {
        EXPECT_GT(blocked_convs * 10, convs * 9) << name << ": " << blocked_convs << "/" << convs;
      }
    }
  }
}

TEST(CpuLayout, ParsesLayoutNames) {
  for (TensorLayout layout : {kPlain, TensorLayout::kNhwc, TensorLayout::kNChw8c, kBlocked})
    EXPECT_EQ(parse_layout(layout_name(layout)), layout);
  try {
    parse_layout("nchw");
    FAIL() << "expected braid::Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("nchw16c"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace braid::exec::cpu
