// CPU kernels against the reference kernels: for every OpKind, seeded random configurations
// built as tiny graphs, run on a guarded arena (cpu_kernels_test_util.h), at 1 and 2 OpenMP
// threads, in plain and blocked layouts. Fused units (Conv-Relu, Conv-BN-Relu, MatMul-Add-Gelu,
// ...) are checked the same way. A failure prints the seed and the configuration; rerun one with
// --gtest_filter and that seed. Here: Conv, pooling, data movement and multi-kernel units; the
// element-wise, MatMul/Gemm and normalization cases are in cpu_kernels_math_test.cc.
#include "exec/cpu/cpu_kernels_test_util.h"

#include <gtest/gtest.h>

namespace braid::exec::cpu {
namespace {

using namespace kernel_test;  // NOLINT(google-build-using-namespace): the tests' harness

TEST(CpuKernelsConformance, Conv) {
  for (int i = 0; i < kCasesPerOp; ++i) {
    const uint64_t seed = seed_of(OpKind::Conv, i);
    Rng r(seed);
    const ConvProblem p = random_conv(r);
    ir::GraphBuilder b("conv");
    b.mark_output(add_conv(b, b.add_input("x", f32(p.x)), p));
    check_graph(std::move(b).build(), kReduction,
                "seed=" + std::to_string(seed) + " " + describe(p), seed);
  }
}

// Conv [-> BN] [-> activation ops]: one kernel whatever the chain (BN folded, post-ops).
TEST(CpuKernelsConformance, ConvFusedUnits) {
  for (int i = 0; i < kCasesPerOp; ++i) {
    const uint64_t seed = seed_of(OpKind::Conv, 100 + i);
    Rng r(seed);
    ConvProblem p = random_conv(r);
    const bool bn = r.coin(0.7);
    if (bn) p.attrs.activation = ir::Activation::kNone;
    const int64_t activations = r.uniform(0, 2);
    ir::GraphBuilder b("conv_unit");
    ValueId y = add_conv(b, b.add_input("x", f32(p.x)), p);
    std::string what = "seed=" + std::to_string(seed) + " " + describe(p);
    if (bn) y = add_batch_norm(b, y, p.oc), what += " +BN";
    for (int64_t k = 0; k < activations; ++k) {
      const OpKind act = kActivationKinds[r.uniform(0, std::size(kActivationKinds) - 1)];
      const ir::OpAttrs attrs = random_activation_attrs(act, r.coin(), r);
      y = b.add_op(act, attrs, {y}, "act" + std::to_string(k));
      what += " +" + describe(act, attrs);
    }
    b.mark_output(y);
    const size_t kernels = check_graph(std::move(b).build(), kReduction, what, seed);
    EXPECT_EQ(kernels, 1u) << what << ": the unit should fuse into one kernel";
  }
}

// A residual connection: Conv [-> BN] [-> activation] -> Add(the other path) [-> activation],
// the other path a 1x1 conv of a second input (so it is an activation with a layout of its
// own). ir::fuse puts the Add in the conv's unit; in a blocked layout both share, the conv adds
// it as a binary post-op (one kernel), otherwise the Add runs as its own kernel in the unit.
TEST(CpuKernelsConformance, ConvResidualUnits) {
  for (int i = 0; i < kCasesPerOp; ++i) {
    const uint64_t seed = seed_of(OpKind::Add, 200 + i);
    Rng r(seed);
    ConvProblem p = random_conv(r);
    const bool bn = r.coin(0.5);
    if (bn) p.attrs.activation = ir::Activation::kNone;
    ir::GraphBuilder b("residual_unit");
    ValueId y = add_conv(b, b.add_input("x", f32(p.x)), p);
    std::string what = "seed=" + std::to_string(seed) + " " + describe(p);
    if (bn) y = add_batch_norm(b, y, p.oc), what += " +BN";
    if (r.coin(0.3)) y = b.add_op(OpKind::Relu, {}, {y}, "relu_before"), what += " +Relu";
    const Shape ys = b.type(y).shape;
    ConvProblem q;
    q.x = {ys[0], 3, ys[2], ys[3]};
    q.oc = ys[1];
    const ValueId identity = add_conv(b, b.add_input("z", f32(q.x)), q, "identity_");
    const bool first = r.coin();
    y = b.add_op(OpKind::Add, {}, first ? std::vector{y, identity} : std::vector{identity, y},
                 "residual");
    what += first ? " +Add(y, identity)" : " +Add(identity, y)";
    if (r.coin(0.7)) y = b.add_op(OpKind::Relu, {}, {y}, "relu_after"), what += " +Relu";
    b.mark_output(y);
    auto g = std::make_shared<const ir::Graph>(std::move(b).build());
    check_graph(*g, kReduction, what, seed);

    const ir::UnitGraph units = ir::fuse(g);
    ASSERT_EQ(units.num_units(), 2u) << what << ": the Add should join the conv's unit";
    std::vector<std::vector<NodeId>> ops;
    for (const ir::Unit& u : units.units()) ops.push_back(u.ops);
    EXPECT_EQ(ir::fuse(g, {.residual = false}).num_units(), 3u) << what;
    const ir::Weights w = ir::Weights::generate(*g, seed);
    const auto inputs = random_inputs(*g, seed);
    const auto want = ref::run_reference(*g, w, inputs);
    for (TensorLayout layout : kBlockedLayouts) {
      const auto layouts = choose_layouts(*g, {.blocked = layout});
      const CpuRun run = run_cpu(*g, w, inputs, 1 + i % 2, ops, layouts);
      expect_close(run.outputs, want, kReduction, what + " " + str(layout));
      const bool shared = layouts[index(identity)] == layouts[index(y)] &&
                          layouts[index(y)] != TensorLayout::kPlain;
      if (shared) {
        EXPECT_EQ(run.num_kernels, 2u) << what << " " << str(layout) << ": the Add should fuse";
      }
    }
  }
}

// A SiLU after a convolution, x * Sigmoid(x) (EfficientNet, YOLO): ir::fuse puts the Sigmoid
// and the Mul in the conv's unit, and the conv computes them as one eltwise_swish post-op.
TEST(CpuKernelsConformance, ConvSiluUnits) {
  for (int i = 0; i < kCasesPerOp; ++i) {
    const uint64_t seed = seed_of(OpKind::Mul, 300 + i);
    Rng r(seed);
    ConvProblem p = random_conv(r);
    p.attrs.activation = ir::Activation::kNone;
    const bool bn = r.coin(0.5);
    ir::GraphBuilder b("silu_unit");
    ValueId y = add_conv(b, b.add_input("x", f32(p.x)), p);
    std::string what = "seed=" + std::to_string(seed) + " " + describe(p);
    if (bn) y = add_batch_norm(b, y, p.oc), what += " +BN";
    const ValueId s = b.add_op(OpKind::Sigmoid, {}, {y}, "sigmoid");
    y = b.add_op(OpKind::Mul, {}, r.coin() ? std::vector{y, s} : std::vector{s, y}, "silu");
    what += " +SiLU";
    if (r.coin(0.3)) y = b.add_op(OpKind::Relu, {}, {y}, "relu"), what += " +Relu";
    b.mark_output(y);
    auto g = std::make_shared<const ir::Graph>(std::move(b).build());
    const ir::UnitGraph units = ir::fuse(g);
    ASSERT_EQ(units.num_units(), 1u) << what << ": the SiLU should join the conv's unit";
    EXPECT_GT(ir::fuse(g, {.silu = false}).num_units(), 1u) << what;
    const size_t kernels = check_graph(*g, kReduction, what, seed);
    EXPECT_EQ(kernels, 1u) << what << ": the SiLU should be the conv's post-op";
  }
}

// ---- Pooling ---------------------------------------------------------------------------------

TEST(CpuKernelsConformance, Pool) {
  for (int i = 0; i < 2 * kCasesPerOp; ++i) {
    const OpKind kind = i % 2 == 0 ? OpKind::MaxPool : OpKind::AveragePool;
    const uint64_t seed = seed_of(kind, i);
    Rng r(seed);
    ir::PoolAttrs a;
    Shape x;
    for (;;) {
      x = {r.uniform(1, 2), r.uniform(1, 5), r.uniform(2, 11), r.uniform(2, 11)};
      a.kernel = {r.uniform(1, 4), r.uniform(1, 4)};
      a.stride = {r.uniform(1, 3), r.uniform(1, 3)};
      a.pads = {r.uniform(0, a.kernel[0] - 1), r.uniform(0, a.kernel[1] - 1),
                r.uniform(0, a.kernel[0] - 1), r.uniform(0, a.kernel[1] - 1)};
      a.ceil_mode = r.coin();
      a.count_include_pad = kind == OpKind::AveragePool && r.coin();
      if (a.kernel[0] <= x[2] + a.pads[0] + a.pads[2] &&
          a.kernel[1] <= x[3] + a.pads[1] + a.pads[3])
        break;
    }
    std::ostringstream what;
    what << "seed=" << seed << " " << ir::to_string(kind) << " x=" << str(x) << " k=" << a.kernel[0]
         << "x" << a.kernel[1] << " s=" << a.stride[0] << "," << a.stride[1]
         << " pads=" << a.pads[0] << "," << a.pads[1] << "," << a.pads[2] << "," << a.pads[3]
         << " ceil=" << a.ceil_mode << " include_pad=" << a.count_include_pad;
    ir::GraphBuilder b("pool");
    b.mark_output(b.add_op(kind, a, {b.add_input("x", f32(x))}, "pool"));
    check_graph(std::move(b).build(), kElementwise, what.str(), seed);
  }
}

TEST(CpuKernelsConformance, GlobalAveragePool) {
  for (int i = 0; i < kCasesPerOp / 2; ++i) {
    const uint64_t seed = seed_of(OpKind::GlobalAveragePool, i);
    Rng r(seed);
    const Shape x{r.uniform(1, 2), r.uniform(1, 8), r.uniform(1, 13), r.uniform(1, 13)};
    ir::GraphBuilder b("gap");
    b.mark_output(b.add_op(OpKind::GlobalAveragePool, {}, {b.add_input("x", f32(x))}, "gap"));
    check_graph(std::move(b).build(), kElementwise, "seed=" + std::to_string(seed) + " x=" + str(x),
                seed);
  }
}

// ---- Data movement -------------------------------------------------------------------------

TEST(CpuKernelsConformance, Concat) {
  for (int i = 0; i < kCasesPerOp; ++i) {
    const uint64_t seed = seed_of(OpKind::Concat, i);
    Rng r(seed);
    const int64_t rank = r.uniform(1, 5);
    const int64_t axis = r.uniform(-rank, rank - 1);
    const Shape base = r.shape(rank, 1, 5);
    ir::GraphBuilder b("concat");
    std::vector<ValueId> in;
    std::string what = "seed=" + std::to_string(seed) + " axis=" + std::to_string(axis);
    for (int64_t k = 0, n = r.uniform(1, 4); k < n; ++k) {
      Shape s = base;
      s[axis < 0 ? axis + rank : axis] = r.uniform(1, 6);
      what += " " + str(s);
      // A parameter operand exercises fixed sources too.
      in.push_back(k == 1 && r.coin(0.3) ? b.add_parameter("p", f32(s), ParamInit::normal(1.0f))
                                         : b.add_input("x" + std::to_string(k), f32(s)));
    }
    b.mark_output(b.add_op(OpKind::Concat, ir::AxisAttrs{axis}, in, "concat"));
    check_graph(std::move(b).build(), kExact, what, seed);
  }
}

TEST(CpuKernelsConformance, Transpose) {
  for (int i = 0; i < kCasesPerOp; ++i) {
    const uint64_t seed = seed_of(OpKind::Transpose, i);
    Rng r(seed);
    const int64_t rank = r.uniform(1, 5);
    const Shape x = r.shape(rank, 1, 6);
    std::vector<int64_t> perm(rank);
    for (int64_t d = 0; d < rank; ++d) perm[d] = d;
    std::shuffle(perm.begin(), perm.end(), r.gen);
    if (r.coin(0.2)) perm.clear();  // empty: reverse
    std::string what = "seed=" + std::to_string(seed) + " x=" + str(x) + " perm=" + str(perm);
    ir::GraphBuilder b("transpose");
    b.mark_output(
        b.add_op(OpKind::Transpose, ir::TransposeAttrs{perm}, {b.add_input("x", f32(x))}, "t"));
    check_graph(std::move(b).build(), kExact, what, seed);
  }
}

TEST(CpuKernelsConformance, Split) {
  for (int i = 0; i < kCasesPerOp; ++i) {
    const uint64_t seed = seed_of(OpKind::Split, i);
    Rng r(seed);
    const int64_t rank = r.uniform(1, 4);
    const int64_t axis = r.uniform(-rank, rank - 1);
    const int64_t n = r.uniform(1, 4);
    std::vector<int64_t> sizes;
    for (int64_t k = 0; k < n; ++k) sizes.push_back(r.uniform(1, 4));
    Shape x = r.shape(rank, 1, 5);
    x[axis < 0 ? axis + rank : axis] = 0;
    for (int64_t s : sizes) x[axis < 0 ? axis + rank : axis] += s;
    std::string what = "seed=" + std::to_string(seed) + " x=" + str(x) +
                       " axis=" + std::to_string(axis) + " sizes=" + str(sizes);
    ir::GraphBuilder b("split");
    const NodeId s = b.add_node(OpKind::Split, ir::SplitAttrs{axis, sizes},
                                {b.add_input("x", f32(x))}, "split", static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k) b.mark_output(b.output(s, k));
    check_graph(std::move(b).build(), kExact, what, seed);
  }
}

TEST(CpuKernelsConformance, Pad) {
  for (int i = 0; i < kCasesPerOp; ++i) {
    const uint64_t seed = seed_of(OpKind::Pad, i);
    Rng r(seed);
    const int64_t rank = r.uniform(1, 4);
    const Shape x = r.shape(rank, 1, 5);
    ir::PadAttrs a;
    for (int64_t d = 0; d < 2 * rank; ++d) a.pads.push_back(r.uniform(0, 2));
    a.value = r.coin() ? 0.0f : -1.5f;
    std::string what = "seed=" + std::to_string(seed) + " x=" + str(x) + " pads=" + str(a.pads);
    ir::GraphBuilder b("pad");
    b.mark_output(b.add_op(OpKind::Pad, a, {b.add_input("x", f32(x))}, "pad"));
    check_graph(std::move(b).build(), kExact, what, seed);
  }
}

TEST(CpuKernelsConformance, Views) {
  for (int i = 0; i < kCasesPerOp; ++i) {
    const OpKind kind = i % 3 == 0   ? OpKind::Reshape
                        : i % 3 == 1 ? OpKind::Flatten
                                     : OpKind::Identity;
    const uint64_t seed = seed_of(kind, i);
    Rng r(seed);
    const int64_t rank = r.uniform(1, 4);
    const Shape x = r.shape(rank, 1, 5);
    ir::OpAttrs attrs;
    if (kind == OpKind::Reshape) attrs = ir::ReshapeAttrs{{-1}};
    if (kind == OpKind::Flatten) attrs = ir::AxisAttrs{r.uniform(0, rank)};
    ir::GraphBuilder b("view");
    b.mark_output(b.add_op(kind, attrs, {b.add_input("x", f32(x))}, "view"));
    check_graph(std::move(b).build(), kExact, "seed=" + std::to_string(seed) + " x=" + str(x),
                seed);
  }
}

// The executor may alias a view's output to its input: then there is nothing to run.
TEST(CpuKernelsConformance, AliasedViewHasNoKernel) {
  ir::GraphBuilder b("alias");
  const ValueId x = b.add_input("x", f32({2, 3}));
  const ValueId y = b.add_op(OpKind::Reshape, ir::ReshapeAttrs{{3, 2}}, {x}, "reshape");
  b.mark_output(y);
  const ir::Graph g = std::move(b).build();
  const TensorLocator same = [&](ValueId v) { return TensorRef{0, nullptr, g.value(v).type}; };
  const KernelBuildContext build{dnnl::engine(dnnl::engine::kind::cpu, 0)};
  const NodeId reshape = make_id<NodeId>(0);
  Bytes scratch = -1;
  EXPECT_TRUE(make_unit_kernels(g, {&reshape, 1}, same, build, &scratch).empty());
  EXPECT_EQ(scratch, 0);
}

// ---- Units of several kernels, threads, errors --------------------------------------------

// A small residual block built as several units: every kernel boundary and fusion rule at once.
ir::Graph residual_block() {
  ir::GraphBuilder b("residual");
  const ValueId x = b.add_input("x", f32({1, 8, 9, 9}));
  ConvProblem p{{1, 8, 9, 9}, {.kernel = {3, 3}, .pads = {1, 1, 1, 1}}, 8, false};
  ValueId y = add_batch_norm(b, add_conv(b, x, p), 8);
  y = b.add_op(OpKind::Relu, {}, {y}, "relu1");
  y = b.add_op(OpKind::Add, {}, {y, x}, "residual");
  y = b.add_op(OpKind::Relu, {}, {y}, "relu2");
  y = b.add_op(OpKind::GlobalAveragePool, {}, {y}, "gap");
  y = b.add_op(OpKind::Flatten, ir::AxisAttrs{1}, {y}, "flatten");
  y = b.add_op(OpKind::Gemm, ir::GemmAttrs{.trans_b = true},
               {y, b.add_parameter("fc.w", f32({5, 8}), ParamInit::normal(0.3f)),
                b.add_parameter("fc.b", f32({5}), ParamInit::normal(0.3f))},
               "fc");
  b.mark_output(b.add_op(OpKind::Softmax, ir::AxisAttrs{-1}, {y}, "softmax"));
  return std::move(b).build();
}

TEST(CpuKernelsUnits, ResidualBlockFusesPerUnit) {
  const ir::Graph g = residual_block();
  const ir::Weights w = ir::Weights::generate(g, 7);
  const auto inputs = random_inputs(g, 7);
  const auto want = ref::run_reference(g, w, inputs);
  auto ids = [](std::initializer_list<size_t> l) {
    std::vector<NodeId> v;
    for (size_t i : l) v.push_back(make_id<NodeId>(i));
    return v;
  };
  // conv-bn-relu | add-relu | gap-flatten | gemm-softmax
  const std::vector<std::vector<NodeId>> units{ids({0, 1, 2}), ids({3, 4}), ids({5, 6}),
                                               ids({7, 8})};
  for (int threads : {1, 2}) {
    const CpuRun run = run_cpu(g, w, inputs, threads, units);
    expect_close(run.outputs, want, kReduction, "residual threads=" + std::to_string(threads));
    EXPECT_EQ(run.num_kernels, 6u);  // conv+bn+relu, add+relu, gap, flatten, gemm, softmax
  }
  // One op per unit: nothing fuses, every intermediate is written.
  std::vector<std::vector<NodeId>> singles;
  for (size_t n = 0; n < g.num_nodes(); ++n) singles.push_back(ids({n}));
  const CpuRun run = run_cpu(g, w, inputs, 1, singles);
  expect_close(run.outputs, want, kReduction, "residual one op per unit");
  EXPECT_EQ(run.num_kernels, g.num_nodes());
}

// Kernels built on one thread run on others with their own scratchpads (ecosystem.md §2.5 B),
// as the executor's lanes do: two lanes, each with its own kernels and request arena, at once.
TEST(CpuKernelsUnits, KernelsRunOnOtherThreads) {
  const ir::Graph g = residual_block();
  const ir::Weights w = ir::Weights::generate(g, 11);
  const auto inputs = random_inputs(g, 11);
  const auto want = ref::run_reference(g, w, inputs);
  const PlainLayout layout(g);
  const TensorLocator locate = make_locator(g, w, layout);
  const KernelBuildContext build{dnnl::engine(dnnl::engine::kind::cpu, 0)};
  std::vector<NodeId> all;
  for (size_t n = 0; n < g.num_nodes(); ++n) all.push_back(make_id<NodeId>(n));
  const int saved_threads = omp_get_max_threads();
  for (int threads : {1, 2}) {
    omp_set_num_threads(threads);
    Bytes scratch[2] = {0, 0};
    const std::vector<std::unique_ptr<Kernel>> kernels[2] = {
        make_unit_kernels(g, all, locate, build, &scratch[0]),
        make_unit_kernels(g, all, locate, build, &scratch[1])};
    std::vector<std::vector<float>> got[2];
    auto lane = [&](int id) {
      omp_set_num_threads(threads);  // a per-thread ICV: must match the build's value
      Buffer arena(static_cast<size_t>(layout.bytes)), pad(static_cast<size_t>(scratch[id]));
      std::copy(inputs[0].begin(), inputs[0].end(),
                reinterpret_cast<float*>(arena.data + layout.offsets[index(g.inputs()[0])]));
      LaneState state{dnnl::stream(build.engine), pad.data};
      for (int repeat = 0; repeat < 20; ++repeat)
        for (const auto& k : kernels[id]) k->execute({.arena = arena.data, .lane_state = &state});
      const ValueId out = g.outputs()[0];
      const float* p = reinterpret_cast<const float*>(arena.data + layout.offsets[index(out)]);
      got[id].emplace_back(p, p + g.value(out).type.elements());
    };
    std::thread lane0(lane, 0), lane1(lane, 1);
    lane0.join();
    lane1.join();
    for (const auto& out : got)
      expect_close(out, want, kReduction, "threads=" + std::to_string(threads));
  }
  omp_set_num_threads(saved_threads);
}

// A grouped conv of 8 channels per group (RegNet's) has only oneDNN's reference kernel for some
// layouts, where it ran 100-1000x slower than the jit kernel of another layout: reading nhwc
// and writing plain (RegNetY's SE block keeps that output plain; oneDNN resolves its `any` dst
// to ref:any, 83 ms against 0.13 ms here), and in nChw16c (blocks straddle groups). In every
// arena layout the kernel must run a real implementation (reordering through the scratchpad if
// need be), and be right.
TEST(CpuKernelsUnits, GroupedConvNeverRunsTheReferenceKernel) {
  constexpr int64_t kGroupWidth = 8;
  for (const auto& [channels, plain_output] :
       {std::pair<int64_t, bool>{104, true}, {64, true}, {64, false}}) {
    ir::GraphBuilder b("grouped");
    const ValueId x = b.add_input("x", f32({1, channels, 14, 14}));
    auto conv = [&](ValueId in, ir::ConvAttrs attrs, const std::string& name) {
      return b.add_op(OpKind::Conv, attrs,
                      {in, b.add_parameter(name + ".w",
                                           f32({channels, channels / attrs.groups, attrs.kernel[0],
                                                attrs.kernel[1]}),
                                           ParamInit::normal(0.2f))},
                      name);
    };
    const ValueId a = conv(x, {}, "a");
    const ValueId grouped = conv(a,
                                 {.kernel = {3, 3},
                                  .pads = {1, 1, 1, 1},
                                  .groups = channels / kGroupWidth,
                                  .activation = ir::Activation::kRelu},
                                 "grouped");
    b.mark_output(plain_output ? grouped : conv(grouped, {}, "c"));  // outputs are plain
    const ir::Graph g = std::move(b).build();
    const ir::Weights w = ir::Weights::generate(g, 3);
    const auto inputs = random_inputs(g, 3);
    const auto want = ref::run_reference(g, w, inputs);
    const NodeId grouped_node = g.value(grouped).producer;
    for (TensorLayout layout : {TensorLayout::kPlain, TensorLayout::kNhwc, TensorLayout::kNChw8c,
                                TensorLayout::kNChw16c}) {
      const std::string what = std::to_string(channels) + " channels, " + str(layout) +
                               (plain_output ? " to plain" : "");
      const auto layouts = choose_layouts(g, {.blocked = layout});
      if (channels % channel_block(layout) != 0) continue;  // 104 channels: no nChw16c
      ASSERT_EQ(layouts[index(a)], layout) << what;         // the conv reads and writes this layout
      ASSERT_EQ(layouts[index(grouped)], plain_output ? TensorLayout::kPlain : layout) << what;
      const PlainLayout arena(g);
      Bytes scratch = 0;
      const auto kernels =
          make_unit_kernels(g, {&grouped_node, 1}, make_locator(g, w, arena, layouts),
                            {dnnl::engine(dnnl::engine::kind::cpu, 0)}, &scratch);
      ASSERT_EQ(kernels.size(), 1u);
      const auto impls = implementation_names(*kernels[0]);
      ASSERT_FALSE(impls.empty());
      for (const std::string& impl : impls)
        EXPECT_FALSE(is_reference_implementation(impl)) << what << ": " << impl;
      expect_close(run_cpu(g, w, inputs, 1, {}, layouts).outputs, want, kReduction, what);
    }
  }
}

// Zoo models (small inputs), fused by the IR's own pass: every unit shape the executor will see.
TEST(CpuKernelsUnits, ZooModelsMatchReference) {
  for (const char* name : {"squeezenet", "tv_squeezenet1_0", "googlenet", "resnet50", "bert"}) {
    auto g = std::make_shared<const ir::Graph>(models::build_zoo_model(
        name, {.batch = 1, .image_size = 64, .layers = 1, .seq_len = 16, .hidden = 128}));
    const ir::UnitGraph units = ir::fuse(g);
    std::vector<std::vector<NodeId>> ops;
    for (const ir::Unit& u : units.units()) ops.push_back(u.ops);
    const ir::Weights w = ir::Weights::generate(*g, 5);
    const auto inputs = random_inputs(*g, 5);
    const auto want = ref::run_reference(*g, w, inputs);
    for (int threads : {1, 2})
      expect_close(run_cpu(*g, w, inputs, threads, ops).outputs, want, kReduction,
                   std::string(name) + " threads=" + std::to_string(threads));
    // The layouts the executor would choose, for each blocked layout.
    for (TensorLayout layout : kBlockedLayouts) {
      const auto layouts = choose_layouts(*g, {.blocked = layout});
      expect_close(run_cpu(*g, w, inputs, 1, ops, layouts).outputs, want, kReduction,
                   std::string(name) + " " + str(layout));
    }
  }
}

// Rejection: oneDNN describes tensors of at most DNNL_MAX_NDIMS dims; a larger one would
// overrun its dims arrays. (int64 and bool tensors reach only the ops that take them: shape
// inference refuses them elsewhere.)
TEST(CpuKernelsErrors, TensorBeyondOneDnnRankIsUnsupported) {
  ir::GraphBuilder b("int");
  const ValueId x = b.add_input("x", {ir::DType::kInt64, Shape(DNNL_MAX_NDIMS + 1, 1)});
  b.mark_output(b.add_op(OpKind::Identity, {}, {x}, "id"));
  const ir::Graph g = std::move(b).build();
  const NodeId id = make_id<NodeId>(0);
  EXPECT_FALSE(supports(g, id));
  const TensorLocator locate = [&](ValueId v) {
    return TensorRef{v == x ? 0 : 64, nullptr, g.value(v).type};
  };
  const KernelBuildContext build{dnnl::engine(dnnl::engine::kind::cpu, 0)};
  Bytes scratch = 0;
  try {
    make_unit_kernels(g, {&id, 1}, locate, build, &scratch);
    FAIL() << "expected braid::Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("node 'id' (Identity)"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace braid::exec::cpu
