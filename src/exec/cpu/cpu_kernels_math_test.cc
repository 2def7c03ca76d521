// CPU kernels against the reference kernels, continued (cpu_kernels_test.cc has the harness's
// description): element-wise ops and their chains, MatMul and Gemm, normalization.
#include <gtest/gtest.h>

#include "exec/cpu/cpu_kernels_test_util.h"

namespace braid::exec::cpu {
namespace {

using namespace kernel_test;  // NOLINT(google-build-using-namespace): the tests' harness

// ---- Element-wise --------------------------------------------------------------------------

// A shape that numpy-broadcasts to `out`: leading dims dropped, some dims set to 1.
Shape broadcastable(Rng& r, const Shape& out) {
  Shape s(out.begin() + r.uniform(0, static_cast<int64_t>(out.size()) - 1), out.end());
  for (int64_t& d : s)
    if (r.coin(0.3)) d = 1;
  return s;
}

TEST(CpuKernelsConformance, Activations) {
  const int kinds = static_cast<int>(std::size(kActivationKinds));
  for (int i = 0; i < kCasesPerOp / 4 * kinds; ++i) {
    const OpKind kind = kActivationKinds[i % kinds];
    const uint64_t seed = seed_of(kind, i);
    Rng r(seed);
    const Shape x = r.shape(r.uniform(1, 4), 1, 9);
    const ir::OpAttrs attrs = random_activation_attrs(kind, r.coin(), r);
    ir::GraphBuilder b("act");
    b.mark_output(b.add_op(kind, attrs, {b.add_input("x", f32(x))}, "act"));
    check_graph(std::move(b).build(), kElementwise,
                "seed=" + std::to_string(seed) + " " + describe(kind, attrs) + " x=" + str(x),
                seed);
  }
}

// ReduceMean over a random non-empty set of axes, with and without keepdims.
TEST(CpuKernelsConformance, ReduceMean) {
  for (int i = 0; i < kCasesPerOp; ++i) {
    const uint64_t seed = seed_of(OpKind::ReduceMean, i);
    Rng r(seed);
    const Shape x = r.shape(r.uniform(1, 4), 1, 9);
    ir::ReduceAttrs a;
    a.keepdims = r.coin();
    for (int64_t d = 0; d < static_cast<int64_t>(x.size()); ++d)
      if (r.coin()) a.axes.push_back(d);
    if (a.axes.empty()) a.axes.push_back(r.uniform(0, static_cast<int64_t>(x.size()) - 1));
    std::ostringstream what;
    what << "seed=" << seed << " ReduceMean x=" << str(x) << " axes=" << str(a.axes)
         << " keepdims=" << a.keepdims;
    ir::GraphBuilder b("reduce");
    b.mark_output(b.add_op(OpKind::ReduceMean, a, {b.add_input("x", f32(x))}, "reduce"));
    check_graph(std::move(b).build(), kReduction, what.str(), seed);
  }
}

TEST(CpuKernelsConformance, Lrn) {
  for (int i = 0; i < kCasesPerOp / 2; ++i) {
    const uint64_t seed = seed_of(OpKind::LRN, i);
    Rng r(seed);
    const Shape x{r.uniform(1, 2), r.pick<int64_t>({3, 8, 16, 24}), r.uniform(1, 6),
                  r.uniform(1, 6)};
    auto real = [&](float lo, float hi) {
      return std::uniform_real_distribution<float>(lo, hi)(r.gen);
    };
    // beta 0.75 (AlexNet's, GoogLeNet's) takes oneDNN's jit kernel, others its reference one.
    const ir::LrnAttrs a{r.pick<int64_t>({1, 3, 5, 7}), real(1e-4f, 0.5f),
                         r.coin() ? 0.75f : real(0.5f, 1.0f), real(1.0f, 2.0f)};
    std::ostringstream what;
    what << "seed=" << seed << " LRN x=" << str(x) << " size=" << a.size << " alpha=" << a.alpha
         << " beta=" << a.beta << " bias=" << a.bias;
    ir::GraphBuilder b("lrn");
    b.mark_output(b.add_op(OpKind::LRN, a, {b.add_input("x", f32(x))}, "lrn"));
    check_graph(std::move(b).build(), kElementwise, what.str(), seed);
  }
}

// oneDNN centres its window; ONNX's is one channel longer above for an even size. Computing
// it anyway would give silently different results.
TEST(CpuKernelsErrors, EvenLrnSizeIsUnsupported) {
  ir::GraphBuilder b("lrn");
  b.mark_output(b.add_op(OpKind::LRN, ir::LrnAttrs{4, 1e-3f, 0.75f, 1.0f},
                         {b.add_input("x", f32({1, 8, 2, 2}))}, "lrn"));
  const ir::Graph g = std::move(b).build();
  const ir::Weights w = ir::Weights::generate(g, 1);
  const std::vector<std::vector<float>> in = random_inputs(g, 1);
  try {
    run_cpu(g, w, in, 1);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("odd sizes"), std::string::npos) << e.what();
  }
}

// A squeeze-and-excitation block as MobileNetV3 exports it: GlobalAveragePool -> Conv 1x1 ->
// Relu -> Conv 1x1 -> HardSigmoid, then Mul of the block's input by the [N, C, 1, 1] scale
// (a broadcast), and the HardSwish after it. Each conv unit fuses its activation.
TEST(CpuKernelsUnits, SqueezeExciteBlock) {
  for (int i = 0; i < 4; ++i) {
    const uint64_t seed = 77 + i;
    const int64_t c = i % 2 == 0 ? 16 : 24;
    ir::GraphBuilder b("se");
    const ValueId x = b.add_input("x", f32({1, c, 5, 5}));
    const ValueId pooled = b.add_op(OpKind::GlobalAveragePool, {}, {x}, "gap");
    ConvProblem squeeze{{1, c, 1, 1}, {}, c / 4, true};
    ValueId s = b.add_op(OpKind::Relu, {}, {add_conv(b, pooled, squeeze, "squeeze.")}, "relu");
    ConvProblem excite{{1, c / 4, 1, 1}, {}, c, true};
    s = b.add_op(OpKind::HardSigmoid, ir::HardSigmoidAttrs{1.0f / 6, 0.5f},
                 {add_conv(b, s, excite, "excite.")}, "hsig");
    const ValueId y = b.add_op(OpKind::Mul, {}, {x, s}, "scale");
    b.mark_output(b.add_op(OpKind::HardSwish, {}, {y}, "hswish"));
    check_graph(std::move(b).build(), kReduction, "SE block seed=" + std::to_string(seed), seed);
  }
}

// oneDNN 2.7 gives every eltwise post-op of one algorithm the first one's alpha and beta: a conv
// fusing Clip(0, 6) then HardSigmoid (linear, then clip to [0, 1]) clipped to 6 (found by the
// CUDA executor's test on an H100, which disagreed with this executor). Such chains must split.
TEST(CpuKernelsUnits, ChainRepeatingAnEltwiseAlgorithmWithOtherParameters) {
  const ConvProblem p{{2, 8, 6, 6}, ir::ConvAttrs{.kernel = {3, 3}, .pads = {1, 1, 1, 1}}, 8, true};
  {
    ir::GraphBuilder b("relu6_hsig_clip");
    ValueId y = add_conv(b, b.add_input("x", f32(p.x)), p);
    y = b.add_op(OpKind::Clip, ir::ClipAttrs{0.0f, 6.0f}, {y}, "relu6");
    y = b.add_op(OpKind::HardSigmoid, ir::HardSigmoidAttrs{0.3f, 0.4f}, {y}, "hsig");
    y = b.add_op(OpKind::HardSwish, {}, {y}, "hswish");
    b.mark_output(b.add_op(OpKind::Clip, ir::ClipAttrs{.max = 0.5f}, {y}, "clip"));
    check_graph(std::move(b).build(), kReduction, "conv relu6 hsig hswish clip", 5);
  }
  {
    ir::GraphBuilder b("hsig_hsig");
    ValueId y = add_conv(b, b.add_input("x", f32(p.x)), p);
    y = b.add_op(OpKind::HardSigmoid, ir::HardSigmoidAttrs{0.3f, 0.4f}, {y}, "hsig1");
    b.mark_output(b.add_op(OpKind::HardSigmoid, ir::HardSigmoidAttrs{0.5f, 0.1f}, {y}, "hsig2"));
    check_graph(std::move(b).build(), kReduction, "conv hsig hsig", 6);
  }
}

TEST(CpuKernelsConformance, AddMul) {
  for (int i = 0; i < 2 * kCasesPerOp; ++i) {
    const OpKind kind = i % 2 == 0 ? OpKind::Add : OpKind::Mul;
    const uint64_t seed = seed_of(kind, i);
    Rng r(seed);
    const Shape out = r.shape(r.uniform(1, 4), 1, 5);
    // Either operand may broadcast; sometimes both do (the plain-loop fallback).
    Shape a = r.coin(0.6) ? out : broadcastable(r, out);
    Shape c = r.coin(0.4) ? out : broadcastable(r, out);
    ir::GraphBuilder b("binary");
    const ValueId x = b.add_input("a", f32(a));
    const bool param = r.coin(0.4);
    const ValueId y =
        param ? b.add_parameter("b", f32(c), ParamInit::normal(1.0f)) : b.add_input("b", f32(c));
    ValueId z = b.add_op(kind, {}, {x, y}, "op");
    const bool relu = r.coin(0.3);
    if (relu) z = b.add_op(OpKind::Relu, {}, {z}, "relu");
    b.mark_output(z);
    check_graph(std::move(b).build(), kElementwise,
                "seed=" + std::to_string(seed) + " " + std::string(ir::to_string(kind)) + " " +
                    str(a) + " , " + str(c) + " param=" + std::to_string(param) +
                    " relu=" + std::to_string(relu),
                seed);
  }
}

TEST(CpuKernelsConformance, Sum) {
  for (int i = 0; i < kCasesPerOp; ++i) {
    const uint64_t seed = seed_of(OpKind::Sum, i);
    Rng r(seed);
    const Shape out = r.shape(r.uniform(1, 4), 1, 5);
    const bool broadcast = r.coin();
    ir::GraphBuilder b("sum");
    std::vector<ValueId> in;
    std::string what = "seed=" + std::to_string(seed);
    for (int64_t k = 0, n = r.uniform(1, 4); k < n; ++k) {
      const Shape s = broadcast && k > 0 ? broadcastable(r, out) : out;
      in.push_back(b.add_input("x" + std::to_string(k), f32(s)));
      what += " " + str(s);
    }
    b.mark_output(b.add_op(OpKind::Sum, {}, in, "sum"));
    check_graph(std::move(b).build(), kElementwise, what, seed);
  }
}

// Element-wise, pooling, normalization and concat ops on 4-D tensors whose channels fill whole
// blocks of 8 or 16 (8, 24, 40: an odd number of 8-blocks; 16, 48), so random_layouts really
// blocks them; the other conformance tests draw few channels and stay mostly plain.
TEST(CpuKernelsConformance, WholeChannelBlocks) {
  const OpKind kinds[] = {OpKind::Add,
                          OpKind::Mul,
                          OpKind::Sum,
                          OpKind::Relu,
                          OpKind::Sigmoid,
                          OpKind::MaxPool,
                          OpKind::AveragePool,
                          OpKind::GlobalAveragePool,
                          OpKind::BatchNormalization,
                          OpKind::Concat};
  for (int i = 0; i < 4 * static_cast<int>(std::size(kinds)); ++i) {
    const OpKind kind = kinds[static_cast<size_t>(i) % std::size(kinds)];
    const uint64_t seed = seed_of(kind, 500 + i);
    Rng r(seed);
    const int64_t channels = r.pick<int64_t>({8, 16, 24, 40, 48});
    const Shape x{r.uniform(1, 2), channels, r.uniform(2, 9), r.uniform(2, 9)};
    const bool relu = r.coin();
    ir::GraphBuilder b("blocks");
    const ValueId a = b.add_input("a", f32(x));
    ValueId y;
    switch (kind) {
      case OpKind::Add:
      case OpKind::Mul:
      case OpKind::Sum:
        y = b.add_op(kind, {}, {a, b.add_input("b", f32(x))}, "op");
        break;
      case OpKind::MaxPool:
      case OpKind::AveragePool:
        y = b.add_op(kind, ir::PoolAttrs{.kernel = {2, 2}, .stride = {1, 2}, .pads = {1, 0, 1, 0}},
                     {a}, "op");
        break;
      case OpKind::BatchNormalization:
        y = add_batch_norm(b, a, channels);
        break;
      case OpKind::Concat:
        y = b.add_op(kind, ir::AxisAttrs{1}, {a, b.add_input("b", f32(x)), a}, "op");
        break;
      default:
        y = b.add_op(kind, {}, {a}, "op");
    }
    if (relu) y = b.add_op(OpKind::Relu, {}, {y}, "relu");  // fused as a post-op where it can
    b.mark_output(y);
    check_graph(std::move(b).build(), kElementwise,
                "seed=" + std::to_string(seed) + " " + std::string(ir::to_string(kind)) +
                    " x=" + str(x) + " relu=" + std::to_string(relu),
                seed);
  }
}

// ---- MatMul and Gemm ---------------------------------------------------------------------

TEST(CpuKernelsConformance, MatMul) {
  for (int i = 0; i < kCasesPerOp; ++i) {
    const uint64_t seed = seed_of(OpKind::MatMul, i);
    Rng r(seed);
    const int64_t m = r.uniform(1, 9), k = r.uniform(1, 17), n = r.uniform(1, 9);
    const Shape batch = r.shape(r.uniform(0, 2), 1, 3);
    Shape a = broadcastable(r, batch.empty() ? Shape{1} : batch);
    Shape c = broadcastable(r, batch.empty() ? Shape{1} : batch);
    if (batch.empty()) a.clear(), c.clear();
    if (r.coin(0.3)) a.clear();
    a.push_back(m), a.push_back(k);
    c.push_back(k), c.push_back(n);
    const bool param = r.coin();
    ir::GraphBuilder b("matmul");
    const ValueId w =
        param ? b.add_parameter("w", f32(c), ParamInit::normal(0.5f)) : b.add_input("w", f32(c));
    b.mark_output(b.add_op(OpKind::MatMul, {}, {b.add_input("a", f32(a)), w}, "matmul"));
    check_graph(std::move(b).build(), kReduction,
                "seed=" + std::to_string(seed) + " " + str(a) + " x " + str(c) +
                    " param=" + std::to_string(param),
                seed);
  }
}

// MatMul -> Add(bias parameter) -> Gelu, as in a transformer MLP: one kernel.
TEST(CpuKernelsConformance, MatMulBiasGeluUnit) {
  for (int i = 0; i < kCasesPerOp / 2; ++i) {
    const uint64_t seed = seed_of(OpKind::MatMul, 100 + i);
    Rng r(seed);
    const int64_t k = r.uniform(1, 33), n = r.uniform(1, 17);
    Shape a = r.shape(r.uniform(0, 2), 1, 4);
    a.push_back(r.uniform(1, 9)), a.push_back(k);
    const Shape bias = r.coin(0.8) ? Shape{n} : Shape{1, n};
    const bool tanh_gelu = r.coin();
    ir::GraphBuilder b("mlp");
    ValueId y = b.add_op(
        OpKind::MatMul, {},
        {b.add_input("a", f32(a)), b.add_parameter("w", f32({k, n}), ParamInit::normal(0.3f))},
        "matmul");
    y = b.add_op(OpKind::Add, {}, {y, b.add_parameter("bias", f32(bias), ParamInit::normal(0.5f))},
                 "add");
    y = b.add_op(OpKind::Gelu, ir::GeluAttrs{tanh_gelu}, {y}, "gelu");
    b.mark_output(y);
    const std::string what = "seed=" + std::to_string(seed) + " a=" + str(a) +
                             " k=" + std::to_string(k) + " n=" + std::to_string(n) +
                             " bias=" + str(bias) + " tanh=" + std::to_string(tanh_gelu);
    EXPECT_EQ(check_graph(std::move(b).build(), kReduction, what, seed), 1u) << what;
  }
}

// MaxViT's attention scores: a rank-5 MatMul, then Add of a relative-position bias [heads, I, J].
// oneDNN's matmul has only ref:any for a bias that is not a row [1, ..., 1, N] (it took 1.8 s of
// MaxViT's 2.6 s), so such an Add runs as its own kernel; a row bias still fuses.
TEST(CpuKernelsUnits, MatMulFusesOnlyARowBias) {
  for (const auto& [bias, num_kernels] : {std::pair<Shape, size_t>{{2, 7, 7}, 2},
                                          {{1, 1, 2, 7, 7}, 2},
                                          {{1}, 2},
                                          {{7}, 1},
                                          {{1, 1, 1, 1, 7}, 1}}) {
    const std::string what = "bias " + str(bias);
    ir::GraphBuilder b("scores");
    const ValueId product = b.add_op(
        OpKind::MatMul, {},
        {b.add_input("q", f32({1, 4, 2, 7, 8})), b.add_input("k", f32({1, 4, 2, 8, 7}))}, "qk");
    b.mark_output(b.add_op(OpKind::Add, {},
                           {product, b.add_parameter("bias", f32(bias), ParamInit::normal(0.5f))},
                           "add"));
    const ir::Graph g = std::move(b).build();
    const std::vector<NodeId> unit = {NodeId{0}, NodeId{1}};
    const ir::Weights w = ir::Weights::generate(g, 5);
    const PlainLayout arena(g);
    Bytes scratch = 0;
    const auto kernels = make_unit_kernels(g, unit, make_locator(g, w, arena),
                                           {dnnl::engine(dnnl::engine::kind::cpu, 0)}, &scratch);
    EXPECT_EQ(kernels.size(), num_kernels) << what;
    for (const auto& kernel : kernels)
      for (const std::string& impl : implementation_names(*kernel))
        EXPECT_FALSE(is_reference_implementation(impl)) << what << ": " << impl;
    EXPECT_EQ(check_graph(g, kReduction, what, 5), num_kernels) << what;
  }
}

// A decomposed LayerNorm's (x - mean) / std broadcasts [1, G, N, C] against [1, G, N, 1]
// (MaxViT's 88 Sub/Div): oneDNN's jit binary takes it once the dims are folded
// (fold_broadcast); unfolded it was ref:any and took most of MaxViT's run. Other broadcasts fold
// too, or keep their dims.
TEST(CpuKernelsUnits, BroadcastingBinaryOpsGetJitKernels) {
  struct Case {
    Shape x, other;
    bool jit;  // a form fold_broadcast folds
  };
  for (const auto& [x, other, jit] :
       {Case{{1, 8, 7, 16}, {1, 8, 7, 1}, true}, Case{{2, 8, 7, 16}, {2, 8, 7, 1}, true},
        Case{{2, 5, 8}, {2, 5, 1}, true}, Case{{1, 49, 64}, {1, 49, 1}, true},
        Case{{3, 4, 5, 6}, {3, 4, 1, 1}, true}, Case{{2, 5, 8}, {1, 1, 8}, true},
        Case{{2, 5, 8}, {8}, true}, Case{{2, 3}, {1}, true}, Case{{2, 5, 8}, {2, 1, 8}, false}}) {
    for (const OpKind kind : {OpKind::Sub, OpKind::Div, OpKind::Add}) {
      const std::string what = std::string(ir::to_string(kind)) + " " + str(x) + " " + str(other);
      ir::GraphBuilder b("binary");
      b.mark_output(
          b.add_op(kind, {}, {b.add_input("x", f32(x)), b.add_input("y", f32(other))}, "op"));
      const ir::Graph g = std::move(b).build();
      const ir::Weights w = ir::Weights::generate(g, 5);
      const PlainLayout arena(g);
      const std::vector<NodeId> unit = {NodeId{0}};
      Bytes scratch = 0;
      const auto kernels = make_unit_kernels(g, unit, make_locator(g, w, arena),
                                             {dnnl::engine(dnnl::engine::kind::cpu, 0)}, &scratch);
      for (const auto& kernel : kernels) {
        for (const std::string& impl : implementation_names(*kernel))
          EXPECT_TRUE(!jit || !is_reference_implementation(impl)) << what << ": " << impl;
      }
      check_graph(g, kElementwise, what, 5);
    }
  }
}

TEST(CpuKernelsConformance, Gemm) {
  for (int i = 0; i < 2 * kCasesPerOp; ++i) {
    const uint64_t seed = seed_of(OpKind::Gemm, i);
    Rng r(seed);
    const int64_t m = r.uniform(1, 8), k = r.uniform(1, 16), n = r.uniform(1, 8);
    ir::GemmAttrs g;
    g.trans_a = r.coin(0.3);
    g.trans_b = r.coin();
    g.alpha = r.pick({1.0f, 1.0f, 0.5f, -2.0f});
    g.beta = r.pick({1.0f, 1.0f, 0.0f, 0.25f, 3.0f});
    const int64_t c_form = r.uniform(0, 5);  // none, [N], [1,N], [M,N], [M,1], [1]
    const Shape c_shape = std::array<Shape, 6>{Shape{}, {n}, {1, n}, {m, n}, {m, 1}, {1}}[c_form];
    const bool b_param = r.coin(0.7), c_param = r.coin(0.6), relu = r.coin(0.3);
    ir::GraphBuilder b("gemm");
    const Shape as = g.trans_a ? Shape{k, m} : Shape{m, k};
    const Shape bs = g.trans_b ? Shape{n, k} : Shape{k, n};
    std::vector<ValueId> in{b.add_input("a", f32(as)),
                            b_param ? b.add_parameter("b", f32(bs), ParamInit::normal(0.5f))
                                    : b.add_input("b", f32(bs))};
    if (c_form > 0)
      in.push_back(c_param ? b.add_parameter("c", f32(c_shape), ParamInit::normal(1.0f))
                           : b.add_input("c", f32(c_shape)));
    ValueId y = b.add_op(OpKind::Gemm, g, in, "gemm");
    if (relu) y = b.add_op(OpKind::Relu, {}, {y}, "relu");
    b.mark_output(y);
    std::ostringstream what;
    what << "seed=" << seed << " m=" << m << " k=" << k << " n=" << n << " transA=" << g.trans_a
         << " transB=" << g.trans_b << " alpha=" << g.alpha << " beta=" << g.beta
         << " C=" << (c_form > 0 ? str(c_shape) : "none") << " b_param=" << b_param
         << " c_param=" << c_param << " relu=" << relu;
    EXPECT_EQ(check_graph(std::move(b).build(), kReduction, what.str(), seed), 1u) << what.str();
  }
}

// ---- Normalization -------------------------------------------------------------------------

TEST(CpuKernelsConformance, BatchNormalization) {
  for (int i = 0; i < kCasesPerOp; ++i) {
    const uint64_t seed = seed_of(OpKind::BatchNormalization, i);
    Rng r(seed);
    const Shape x = r.shape(r.uniform(2, 6), 1, 5);
    const bool relu = r.coin();
    ir::GraphBuilder b("bn");
    ValueId y = add_batch_norm(b, b.add_input("x", f32(x)), x[1]);
    if (relu) y = b.add_op(OpKind::Relu, {}, {y}, "relu");
    b.mark_output(y);
    const std::string what =
        "seed=" + std::to_string(seed) + " x=" + str(x) + " relu=" + std::to_string(relu);
    EXPECT_EQ(check_graph(std::move(b).build(), kElementwise * 4, what, seed), 1u) << what;
  }
}

TEST(CpuKernelsConformance, Softmax) {
  for (int i = 0; i < kCasesPerOp; ++i) {
    const uint64_t seed = seed_of(OpKind::Softmax, i);
    Rng r(seed);
    const int64_t rank = r.uniform(1, 4);
    const Shape x = r.shape(rank, 1, 9);
    const int64_t axis = r.uniform(-rank, rank - 1);
    ir::GraphBuilder b("softmax");
    b.mark_output(b.add_op(OpKind::Softmax, ir::AxisAttrs{axis}, {b.add_input("x", f32(x))}, "sm"));
    check_graph(std::move(b).build(), kElementwise,
                "seed=" + std::to_string(seed) + " x=" + str(x) + " axis=" + std::to_string(axis),
                seed);
  }
}

TEST(CpuKernelsConformance, LayerNormalization) {
  for (int i = 0; i < kCasesPerOp; ++i) {
    const uint64_t seed = seed_of(OpKind::LayerNormalization, i);
    Rng r(seed);
    const int64_t rank = r.uniform(1, 4);
    const Shape x = r.shape(rank, 1, 12);
    const int64_t axis = r.uniform(-rank, rank - 1);
    const Shape norm(x.begin() + (axis < 0 ? axis + rank : axis), x.end());
    const bool bias = r.coin(0.7);
    ir::GraphBuilder b("ln");
    std::vector<ValueId> in{b.add_input("x", f32(x)),
                            b.add_parameter("scale", f32(norm), ParamInit::normal(1.0f))};
    if (bias) in.push_back(b.add_parameter("bias", f32(norm), ParamInit::normal(1.0f)));
    b.mark_output(b.add_op(OpKind::LayerNormalization, ir::LayerNormAttrs{axis, 1e-5f}, in, "ln"));
    check_graph(std::move(b).build(), kReduction,
                "seed=" + std::to_string(seed) + " x=" + str(x) + " axis=" + std::to_string(axis) +
                    " bias=" + std::to_string(bias),
                seed);
  }
}

}  // namespace
}  // namespace braid::exec::cpu
