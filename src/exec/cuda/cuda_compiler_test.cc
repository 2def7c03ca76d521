// What the CUDA compiler decides before it touches a GPU (no device needed: a Compiler without a
// cuDNN handle matches chains, and memory_plan_options plans memory): which ops a convolution
// takes in, and which Concats copy nothing. Their values on a GPU are checked by
// cuda_executor_test's zoo tests.
#include "exec/cuda/cuda_compiler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <string>

#include "cost/roofline.h"
#include "exec/cuda/cuda_executor.h"
#include "exec/cuda/gemm_epilogue.h"
#include "exec/memory_plan.h"
#include "exec/ref/ref_executor.h"
#include "ir/graph.h"
#include "ir/unit_graph.h"
#include "ir/weights.h"
#include "models/loader.h"
#include "sched/lower.h"
#include "sched/registry.h"

namespace braid::exec {
namespace {

// A zoo model's graph and units (no weights) and its sequential plan, lowered.
struct Sequential {
  explicit Sequential(const char* name)
      : model(models::load_model(name, {.with_weights = false})),
        plan(sched::lower(model.units,
                          sched::make_scheduler("sequential", {})
                              ->schedule(model.units, cost::RooflineCostModel(model.units)))) {}
  models::LoadedModel model;
  sched::ExecutionPlan plan;
};

// ResNet-50's units as the compiler fuses them: every Conv unit is one convolution, and the 16
// blocks' `out += identity` with its ReLU are fused into the block's last convolution (cuDNN's z
// input, or one channel_affine after it).
TEST(CudaCompiler, FusesResnetResidualAddsIntoTheirConvolutions) {
  models::LoadedModel m = models::load_model("resnet50", {});
  const MemoryPlan no_memory;
  const cuda::Compiler compiler(*m.graph, m.weights, no_memory, {}, nullptr);
  size_t convs = 0, residuals = 0;
  for (size_t u = 0; u < m.units.num_units(); ++u) {
    const auto ops = m.units.unit(UnitId(u)).ops;
    if (m.graph->node(ops[0]).kind != ir::OpKind::Conv) continue;
    const cuda::Compiler::ConvChain chain = compiler.match_conv(ops);
    ++convs;
    EXPECT_EQ(chain.used, ops.size()) << m.units.unit(UnitId(u)).name;
    if (!chain.residual) continue;
    ++residuals;
    EXPECT_EQ(chain.activation, nullptr);
    ASSERT_NE(chain.after, nullptr);
    EXPECT_EQ(chain.after->kind, ir::OpKind::Relu);
    EXPECT_NE(*chain.residual, m.graph->node(ops[0]).inputs[0]);
  }
  EXPECT_EQ(convs, 53u);
  EXPECT_EQ(residuals, 16u);
}

// A Conv that applies its own ReLU (ConvAttrs::activation) and then a BatchNormalization: the
// BatchNormalization cannot be folded into the convolution's weights (that would normalize
// before the ReLU), so the chain stops at the Conv; without the ReLU it takes both. The CPU
// executor's chain (cpu_kernels_fusion.cc) refuses the same fold.
TEST(CudaCompiler, DoesNotFoldABatchNormalizationAfterAConvsOwnActivation) {
  const auto f32 = [](ir::Shape s) { return ir::TensorType{ir::DType::kFloat32, std::move(s)}; };
  for (const ir::Activation act : {ir::Activation::kRelu, ir::Activation::kNone}) {
    ir::GraphBuilder b("conv_relu_bn");
    const ValueId x = b.add_input("x", f32({1, 3, 8, 8}));
    const ValueId w = b.add_parameter("w", f32({4, 3, 3, 3}));
    std::vector<ValueId> bn{b.add_op(
        ir::OpKind::Conv, ir::ConvAttrs{.kernel = {3, 3}, .pads = {1, 1, 1, 1}, .activation = act},
        {x, w}, "conv")};
    for (const char* p : {"scale", "shift", "mean", "var"})
      bn.push_back(b.add_parameter(p, f32({4})));
    b.mark_output(b.add_op(ir::OpKind::BatchNormalization, ir::BatchNormAttrs{}, bn, "bn"));
    const ir::Graph g = std::move(b).build();
    const MemoryPlan no_memory;
    const ir::Weights no_weights;
    const cuda::Compiler compiler(g, no_weights, no_memory, {}, nullptr);
    const std::vector<NodeId> ops{NodeId(0), NodeId(1)};
    EXPECT_EQ(compiler.match_conv(ops).used, act == ir::Activation::kNone ? 2u : 1u);
  }
}

// On a GPU: the bias epilogues cuBLASLt has an algorithm for are taken. A linear layer with its
// ReLU (RELU_BIAS) and a Gemm whose C is a bias (BIAS), the epilogues PyTorch's addmm relies on,
// each compile to ONE op in every precision; the fallback (the GEMM, then our bias and
// activation kernels) gives the same values, so the value tests cannot tell them apart.
// Attention-shaped batched MatMuls with a bias (one strided-batched call) and the tanh-GELU
// epilogue are printed, not required: what a first GPU run should show.
TEST(CudaCompiler, TakesCublasLtBiasEpiloguesOnAGpu) {
  const auto f32 = [](ir::Shape s) { return ir::TensorType{ir::DType::kFloat32, std::move(s)}; };
  ir::GraphBuilder b("epilogues");
  auto param = [&](const std::string& name, ir::Shape s) {
    return b.add_parameter(name, f32(std::move(s)), ir::ParamInit::uniform(-0.5f, 0.5f));
  };
  const ValueId x = b.add_input("x", f32({2, 16, 64}));
  ValueId y = b.add_op(ir::OpKind::MatMul, {}, {x, param("w1", {64, 128})}, "linear");
  y = b.add_op(ir::OpKind::Add, {}, {y, param("b1", {128})}, "linear/bias");
  y = b.add_op(ir::OpKind::Relu, {}, {y}, "linear/relu");
  const ValueId r =
      b.add_op(ir::OpKind::Reshape, ir::ReshapeAttrs{.shape = {32, 128}}, {y}, "rows");
  b.mark_output(b.add_op(ir::OpKind::Gemm, ir::GemmAttrs{.trans_b = true},
                         {r, param("w2", {64, 128}), param("c2", {64})}, "gemm_bias"));
  const ValueId q = b.add_input("q", f32({2, 4, 16, 32}));
  ValueId s =
      b.add_op(ir::OpKind::MatMul, {}, {q, b.add_input("k", f32({2, 4, 32, 16}))}, "scores");
  b.mark_output(b.add_op(ir::OpKind::Add, {}, {s, param("b3", {16})}, "scores/bias"));
  ValueId t = b.add_op(ir::OpKind::MatMul, {}, {x, param("w4", {64, 32})}, "tanh");
  t = b.add_op(ir::OpKind::Add, {}, {t, param("b4", {32})}, "tanh/bias");
  b.mark_output(
      b.add_op(ir::OpKind::Gelu, ir::GeluAttrs{.tanh_approximation = true}, {t}, "tanh/gelu"));
  const auto graph = std::make_shared<const ir::Graph>(std::move(b).build());
  const ir::UnitGraph units = ir::fuse(graph);
  const ir::Weights weights = ir::Weights::generate(*graph, 3);
  const sched::ExecutionPlan plan = sched::lower(
      units,
      sched::make_scheduler("sequential", {})->schedule(units, cost::RooflineCostModel(units)));
  std::map<std::string, cuda::GemmEpilogue> wanted;
  for (size_t u = 0; u < units.num_units(); ++u) {
    const auto ops = units.unit(UnitId(u)).ops;
    if (graph->node(ops[0]).kind == ir::OpKind::MatMul ||
        graph->node(ops[0]).kind == ir::OpKind::Gemm)
      wanted[graph->node(ops[0]).name] = cuda::match_gemm(*graph, ops).epilogue;
  }
  using E = cuda::GemmEpilogue;
  ASSERT_EQ(wanted, (std::map<std::string, E>{{"linear", E::kReluBias},
                                              {"gemm_bias", E::kBias},
                                              {"scores", E::kBias},
                                              {"tanh", E::kGeluBias}}));
  if (cuda_device_count() == 0) GTEST_SKIP() << cuda_unavailable_reason();
  for (Precision p : {Precision::kFp32, Precision::kTf32, Precision::kFp16, Precision::kBf16}) {
    const MemoryPlan memory =
        plan_memory(*graph, units, plan, cuda::memory_plan_options(*graph, {.precision = p}));
    cuda::Compiler compiler(*graph, weights, memory, {.precision = p}, nullptr);
    for (size_t u = 0; u < units.num_units(); ++u) {
      const auto ops = units.unit(UnitId(u)).ops;
      const std::string& name = graph->node(ops[0]).name;
      if (graph->node(ops[0]).kind != ir::OpKind::MatMul &&
          graph->node(ops[0]).kind != ir::OpKind::Gemm)
        continue;
      const size_t compiled = compiler.compile_unit(ops).size();
      std::printf("[ epilogue ] %s %s: %zu ops compiled to %zu\n",
                  std::string(to_string(p)).c_str(), name.c_str(), ops.size(), compiled);
      if (name == "linear" || name == "gemm_bias") {
        EXPECT_EQ(compiled, 1u) << to_string(p) << " " << name;
      }
    }
  }
}

// SqueezeNet's Fire modules, GoogLeNet's and Inception V3's blocks end in a Concat along
// channels at batch 1. A Concat copies nothing exactly where every window of its output starts
// 256-byte aligned: in SqueezeNet's FP32 plan all 8 (64-channel multiples of whole planes), in
// FP16 only some; with concat_in_place off, none. Each placed input lies at its window's offset
// in the Concat's output, and the arena is no larger.
TEST(CudaCompiler, PlacesConcatInputsInTheirAlignedWindows) {
  for (const char* name : {"squeezenet", "googlenet", "tv_inception_v3"}) {
    SCOPED_TRACE(name);
    const Sequential sq(name);
    const models::LoadedModel& m = sq.model;
    const ir::Graph& g = *m.graph;
    const sched::ExecutionPlan& plan = sq.plan;
    size_t concats = 0;
    for (const ir::Node& n : g.nodes()) concats += n.kind == ir::OpKind::Concat;
    auto plan_for = [&](Precision p, bool in_place) {
      return plan_memory(
          g, m.units, plan,
          cuda::memory_plan_options(g, {.precision = p, .concat_in_place = in_place}));
    };
    for (Precision p : {Precision::kFp32, Precision::kFp16}) {
      SCOPED_TRACE(to_string(p));
      const int64_t elem = p == Precision::kFp32 ? 4 : 2;
      const MemoryPlan placed = plan_for(p, true), copied = plan_for(p, false);
      EXPECT_TRUE(copied.in_place_concats.empty());
      EXPECT_LE(placed.arena_bytes, copied.arena_bytes);
      size_t aligned = 0;
      for (size_t i = 0; i < g.num_nodes(); ++i) {
        const ir::Node& n = g.node(make_id<NodeId>(i));
        if (n.kind != ir::OpKind::Concat) continue;
        const ir::Shape& ys = g.value(n.outputs[0]).type.shape;
        ASSERT_EQ(ys.size(), 4u);
        ASSERT_EQ(ys[0], 1);
        const int64_t plane = ys[2] * ys[3] * elem;
        bool windows_aligned = true;
        int64_t at = 0;
        for (ValueId v : n.inputs) {
          windows_aligned = windows_aligned && at * plane % 256 == 0;
          at += g.value(v).type.shape[1];
        }
        aligned += windows_aligned;
        const bool in_place =
            std::find(placed.in_place_concats.begin(), placed.in_place_concats.end(),
                      make_id<NodeId>(i)) != placed.in_place_concats.end();
        EXPECT_EQ(in_place, windows_aligned) << n.name;
        if (!in_place) continue;
        at = 0;
        for (ValueId v : n.inputs) {
          EXPECT_EQ(placed.offset[index(v)], placed.offset[index(n.outputs[0])] + at * plane)
              << n.name;
          EXPECT_EQ(placed.offset[index(v)] % 256, 0) << n.name;
          at += g.value(v).type.shape[1];
        }
      }
      EXPECT_EQ(placed.in_place_concats.size(), aligned);
      std::printf(
          "[ concat ] %s %s: %zu of %zu Concats in place, arena %lld bytes (copying: "
          "%lld)\n",
          name, to_string(p).c_str(), aligned, concats, static_cast<long long>(placed.arena_bytes),
          static_cast<long long>(copied.arena_bytes));
      if (std::string(name) == "squeezenet") {
        EXPECT_EQ(concats, 8u);
        if (p == Precision::kFp32) {
          EXPECT_EQ(aligned, 8u);
        } else {  // both kinds present: the alignment rule decides
          EXPECT_GT(aligned, 0u);
          EXPECT_LT(aligned, 8u);
        }
      }
    }
  }
}

// torchvision's Inception V3 exports avg_pool2d(padding=1) as Pad then AveragePool: each such
// unit compiles to one pool (compile_padded_pool), where it used to be a pad kernel and a pool.
// Compiling pools touches no GPU (their Ops only run there); CudaExecutorZoo checks the values.
TEST(CudaCompiler, FusesAZeroPadIntoTheAveragePoolAfterIt) {
  for (const char* name : {"tv_inception_v3", "inception_v3"}) {
    SCOPED_TRACE(name);
    const Sequential sq(name);
    const models::LoadedModel& m = sq.model;
    const ir::Graph& g = *m.graph;
    const sched::ExecutionPlan& plan = sq.plan;
    const MemoryPlan memory = plan_memory(g, m.units, plan, cuda::memory_plan_options(g, {}));
    const ir::Weights no_weights;
    cuda::Compiler compiler(g, no_weights, memory, {}, nullptr);
    size_t padded_pools = 0;
    for (size_t u = 0; u < m.units.num_units(); ++u) {
      const auto ops = m.units.unit(UnitId(u)).ops;
      if (ops.size() != 2 || g.node(ops[0]).kind != ir::OpKind::Pad ||
          g.node(ops[1]).kind != ir::OpKind::AveragePool)
        continue;
      ++padded_pools;
      EXPECT_EQ(compiler.compile_unit(ops).size(), 1u) << m.units.unit(UnitId(u)).name;
    }
    std::printf("[ pad+pool ] %s: %zu Pad+AveragePool units\n", name, padded_pools);
    if (std::string(name) == "tv_inception_v3") {
      EXPECT_EQ(padded_pools, 9u);
    }
  }
}

// The rule compile_padded_pool rests on, by the reference executor (the oracle; the CUDA pool
// kernel follows the same ONNX semantics): a zero Pad of H and W then an AveragePool equals one
// AveragePool over the unpadded input with the pads added to its own and count_include_pad set,
// where the pool has no pads of its own or counts them and the sums stay below the kernel (ONNX's
// bound); with strides, ceil mode and asymmetric pads. And it is not the same pool when the pool's
// own pads are not counted (why that case is left unfused).
TEST(CudaCompiler, PadThenAveragePoolIsOnePoolCountingThePads) {
  struct Case {
    std::array<int64_t, 4> pad;  // top, left, bottom, right
    std::array<int64_t, 4> own;
    bool count_include_pad, ceil_mode;
    int64_t stride;
  };
  const Case cases[] = {{{1, 1, 1, 1}, {0, 0, 0, 0}, false, false, 1},
                        {{1, 0, 2, 1}, {0, 0, 0, 0}, false, false, 2},
                        {{1, 1, 1, 1}, {1, 1, 1, 1}, true, false, 1},
                        {{1, 1, 0, 1}, {1, 0, 1, 0}, true, true, 2},
                        {{0, 1, 1, 0}, {0, 0, 0, 0}, true, true, 2}};
  const auto f32 = [](ir::Shape s) { return ir::TensorType{ir::DType::kFloat32, std::move(s)}; };
  std::vector<float> x(2 * 3 * 9 * 9);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float((i * 37) % 17) - 8.0f;
  auto run = [&](bool padded, const Case& c, bool count) {
    ir::GraphBuilder b("pad_pool");
    ValueId v = b.add_input("x", f32({2, 3, 9, 9}));
    ir::PoolAttrs pool{.kernel = {3, 3}, .stride = {c.stride, c.stride}, .ceil_mode = c.ceil_mode};
    if (padded) {
      v = b.add_op(ir::OpKind::Pad,
                   ir::PadAttrs{.pads = {0, 0, c.pad[0], c.pad[1], 0, 0, c.pad[2], c.pad[3]}}, {v},
                   "pad");
      pool.pads = c.own;
      pool.count_include_pad = c.count_include_pad;
    } else {
      for (size_t d = 0; d < 4; ++d) pool.pads[d] = c.pad[d] + c.own[d];
      pool.count_include_pad = count;
    }
    b.mark_output(b.add_op(ir::OpKind::AveragePool, pool, {v}, "pool"));
    const ir::Graph g = std::move(b).build();
    const std::vector<std::vector<float>> inputs{x};
    return ref::run_reference(g, ir::Weights::generate(g, 1), inputs)[0];
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message() << "pads " << c.pad[0] << c.pad[1] << c.pad[2] << c.pad[3]
                                      << " own " << c.own[0] << c.own[1] << c.own[2] << c.own[3]
                                      << " stride " << c.stride << " ceil " << c.ceil_mode);
    const std::vector<float> want = run(true, c, false), got = run(false, c, true);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-5) << i;
  }
  // Own pads not counted: the fused pool (which must count the Pad's zeros) differs.
  const Case uncounted{{1, 1, 1, 1}, {1, 1, 1, 1}, false, false, 1};
  EXPECT_NE(run(true, uncounted, false), run(false, uncounted, true));
}

}  // namespace
}  // namespace braid::exec
