// CPU kernels against the reference kernels: for every OpKind, seeded random configurations
// built as tiny graphs, run on a plain arena laid out here, at 1 and 2 OpenMP threads. Fused
// units (Conv-Relu, Conv-BN-Relu, MatMul-Add-Gelu, ...) are checked the same way. A failure
// prints the seed and the configuration; rerun one with --gtest_filter and that seed.
#include "exec/cpu/cpu_kernels.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <new>
#include <random>
#include <sstream>
#include <thread>

#include "base/error.h"
#include "exec/cpu/layout.h"
#include "exec/ref/ref_executor.h"
#include "ir/shape_inference.h"
#include "ir/unit_graph.h"
#include "ir/weights.h"
#include "models/zoo.h"

namespace braid::exec::cpu {
namespace {

using ir::OpKind;
using ir::ParamInit;
using ir::Shape;

constexpr int kCasesPerOp = 40;
constexpr size_t kAlignment = 64;
constexpr double kExact = 0.0;
constexpr double kElementwise = 2e-6;  // oneDNN's exp/erf/tanh approximations
constexpr double kReduction = 1e-4;    // conv/matmul: different summation order and blocking

ir::TensorType f32(Shape shape) {
  return {ir::DType::kFloat32, std::move(shape)};
}

std::string str(const Shape& s) {
  return ir::to_string(s);
}

// Aligned bytes for the arena and the scratchpad.
struct Buffer {
  explicit Buffer(size_t bytes)
      : data(static_cast<std::byte*>(
            ::operator new(std::max<size_t>(bytes, 1), std::align_val_t(kAlignment)))) {}
  ~Buffer() { ::operator delete(data, std::align_val_t(kAlignment)); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  std::byte* data;
};

// Bytes after every arena slot that no kernel may write: a kernel writing past its tensor
// (oneDNN 2.6.3's binary on nChw8c data did, by up to 4 KiB) corrupts the next tensor or the
// heap in the executor, and fails the test here.
constexpr int64_t kGuardBytes = 4096;
constexpr std::byte kGuardByte{0xA5};

// Every input and activation gets its own 64-byte aligned slot, followed by a guard;
// parameters stay in `weights`.
struct PlainLayout {
  std::vector<int64_t> offsets;
  std::vector<int64_t> guards;  // offsets of the guards
  int64_t bytes = 0;

  explicit PlainLayout(const ir::Graph& g) : offsets(g.num_values(), -1) {
    for (size_t v = 0; v < g.num_values(); ++v) {
      if (g.values()[v].kind == ir::ValueKind::kParameter) continue;
      offsets[v] = bytes;
      bytes += (g.values()[v].type.bytes() + kAlignment - 1) / kAlignment * kAlignment;
      guards.push_back(bytes);
      bytes += kGuardBytes;
    }
  }
  void fill_guards(std::byte* arena) const {
    for (int64_t g : guards) std::fill_n(arena + g, kGuardBytes, kGuardByte);
  }
  // The number of guard bytes some kernel overwrote.
  int64_t damaged_guard_bytes(const std::byte* arena) const {
    int64_t n = 0;
    for (int64_t g : guards)
      n += kGuardBytes - std::count(arena + g, arena + g + kGuardBytes, kGuardByte);
    return n;
  }
};

// `layouts` (per ValueId; empty: all plain) orders the elements of each arena slot.
TensorLocator make_locator(const ir::Graph& g, const ir::Weights& w, const PlainLayout& layout,
                           std::span<const TensorLayout> layouts = {}) {
  return [&g, &w, &layout, layouts](ValueId v) {
    TensorRef ref;
    ref.type = g.value(v).type;
    if (!layouts.empty()) ref.layout = layouts[index(v)];
    if (layout.offsets[index(v)] >= 0)
      ref.arena_offset = layout.offsets[index(v)];
    else
      ref.fixed = w.data(v).data();
    return ref;
  };
}

constexpr TensorLayout kBlockedLayouts[] = {TensorLayout::kNhwc, TensorLayout::kNChw8c,
                                            TensorLayout::kNChw16c};

std::string str(TensorLayout layout) {
  return std::string(layout_name(layout));
}

// A tensor of shape `s` in `layout`, as oneDNN describes it.
dnnl::memory::desc layout_desc(const Shape& s, TensorLayout layout) {
  using tag = dnnl::memory::format_tag;
  dnnl::memory::dims dims{1};
  if (!s.empty()) dims.assign(s.begin(), s.end());
  switch (layout) {
    case TensorLayout::kPlain: {
      dnnl::memory::dims strides(dims.size(), 1);
      for (size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * dims[i];
      return {dims, dnnl::memory::data_type::f32, strides};
    }
    case TensorLayout::kNhwc:
      return {dims, dnnl::memory::data_type::f32, tag::nhwc};
    case TensorLayout::kNChw8c:
      return {dims, dnnl::memory::data_type::f32, tag::nChw8c};
    case TensorLayout::kNChw16c:
      return {dims, dnnl::memory::data_type::f32, tag::nChw16c};
  }
  return {};
}

// Copies a tensor of shape `s` from layout `from` to layout `to`.
void convert(const Shape& s, TensorLayout from, const float* src, TensorLayout to, float* dst) {
  const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  dnnl::memory in(layout_desc(s, from), engine, const_cast<float*>(src));
  dnnl::memory out(layout_desc(s, to), engine, dst);
  dnnl::reorder(in, out).execute(stream, in, out);
  stream.wait();
}

// Each value the kernels can take in `layout` (graph inputs and outputs too: run_cpu converts
// them) gets it with probability 1/2, so every plain/blocked boundary of every op shows up.
std::vector<TensorLayout> random_layouts(const ir::Graph& g, TensorLayout layout, uint64_t seed) {
  std::mt19937 gen(static_cast<uint32_t>(seed * 31 + static_cast<uint64_t>(layout)));
  std::vector<TensorLayout> layouts(g.num_values(), TensorLayout::kPlain);
  for (size_t v = 0; v < g.num_values(); ++v)
    if (can_be_blocked(g, make_id<ValueId>(v), layout) && gen() % 2 == 0) layouts[v] = layout;
  return layouts;
}

struct CpuRun {
  std::vector<std::vector<float>> outputs;
  size_t num_kernels = 0;
};

// Builds `units` (default: all nodes as one unit) under `threads` OpenMP threads and runs them
// on a NaN-filled arena, so a kernel that skips an output or reads garbage shows up. Tensors
// are laid out as `layouts` says (default: all plain); inputs and outputs are converted.
CpuRun run_cpu(const ir::Graph& g, const ir::Weights& w, std::span<const std::vector<float>> in,
               int threads, std::vector<std::vector<NodeId>> units = {},
               std::span<const TensorLayout> layouts = {}) {
  auto layout_of = [&](ValueId v) {
    return layouts.empty() ? TensorLayout::kPlain : layouts[index(v)];
  };
  if (units.empty()) {
    units.emplace_back();
    for (size_t n = 0; n < g.num_nodes(); ++n) units[0].push_back(make_id<NodeId>(n));
  }
  const int saved_threads = omp_get_max_threads();
  omp_set_num_threads(threads);
  const PlainLayout layout(g);
  const TensorLocator locate = make_locator(g, w, layout, layouts);
  const KernelBuildContext build{dnnl::engine(dnnl::engine::kind::cpu, 0)};
  std::vector<std::unique_ptr<Kernel>> kernels;
  Bytes scratch = 0;
  for (const auto& unit : units) {
    Bytes unit_scratch = 0;
    for (auto& k : make_unit_kernels(g, unit, locate, build, &unit_scratch))
      kernels.push_back(std::move(k));
    scratch = std::max(scratch, unit_scratch);
  }
  Buffer arena(static_cast<size_t>(layout.bytes));
  Buffer scratchpad(static_cast<size_t>(scratch));
  std::fill_n(reinterpret_cast<float*>(arena.data), layout.bytes / 4,
              std::numeric_limits<float>::quiet_NaN());
  layout.fill_guards(arena.data);
  for (size_t i = 0; i < in.size(); ++i) {
    const ValueId v = g.inputs()[i];
    convert(g.value(v).type.shape, TensorLayout::kPlain, in[i].data(), layout_of(v),
            reinterpret_cast<float*>(arena.data + layout.offsets[index(v)]));
  }
  LaneState lane{dnnl::stream(build.engine), scratchpad.data};
  for (const auto& k : kernels) k->execute({.arena = arena.data, .lane_state = &lane});
  EXPECT_EQ(layout.damaged_guard_bytes(arena.data), 0) << "a kernel wrote past its tensor";
  CpuRun run;
  run.num_kernels = kernels.size();
  for (ValueId v : g.outputs()) {
    const float* p = reinterpret_cast<const float*>(arena.data + layout.offsets[index(v)]);
    run.outputs.emplace_back(g.value(v).type.elements());
    convert(g.value(v).type.shape, layout_of(v), p, TensorLayout::kPlain,
            run.outputs.back().data());
  }
  omp_set_num_threads(saved_threads);
  return run;
}

std::vector<std::vector<float>> random_inputs(const ir::Graph& g, uint64_t seed) {
  std::mt19937 gen(static_cast<uint32_t>(seed * 7919 + 1));
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  std::vector<std::vector<float>> inputs;
  for (ValueId v : g.inputs()) {
    inputs.emplace_back(g.value(v).type.elements());
    for (float& x : inputs.back()) x = dist(gen);
  }
  return inputs;
}

// max |got - want| <= tolerance * max(1, max |want|), and no NaN anywhere.
void expect_close(const std::vector<std::vector<float>>& got,
                  const std::vector<std::vector<float>>& want, double tolerance,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].size(), want[i].size()) << what;
    double max_ref = 1.0, max_err = 0.0;
    size_t worst = 0;
    for (size_t j = 0; j < got[i].size(); ++j) {
      ASSERT_FALSE(std::isnan(got[i][j])) << what << ": output " << i << " [" << j << "] is NaN";
      max_ref = std::max(max_ref, std::abs(static_cast<double>(want[i][j])));
      const double err = std::abs(static_cast<double>(got[i][j]) - want[i][j]);
      if (err > max_err) max_err = err, worst = j;
    }
    EXPECT_LE(max_err, tolerance * max_ref) << what << ": output " << i << " [" << worst << "] got "
                                            << got[i][worst] << " want " << want[i][worst];
  }
}

// The whole check: reference vs CPU kernels at 1 and 2 threads on plain tensors, then on random
// mixes of plain and each blocked layout (at 1 or 2 threads, by seed). Returns the kernel count
// of the plain run.
size_t check_graph(const ir::Graph& g, double tolerance, const std::string& what, uint64_t seed) {
  const ir::Weights w = ir::Weights::generate(g, seed);
  const auto inputs = random_inputs(g, seed);
  const auto want = ref::run_reference(g, w, inputs);
  size_t kernels = 0;
  for (int threads : {1, 2}) {
    const CpuRun run = run_cpu(g, w, inputs, threads);
    expect_close(run.outputs, want, tolerance, what + " threads=" + std::to_string(threads));
    kernels = run.num_kernels;
  }
  for (TensorLayout layout : kBlockedLayouts) {
    const auto layouts = random_layouts(g, layout, seed);
    if (std::all_of(layouts.begin(), layouts.end(),
                    [](TensorLayout l) { return l == TensorLayout::kPlain; }))
      continue;
    const int threads = 1 + static_cast<int>((seed + static_cast<uint64_t>(layout)) % 2);
    expect_close(run_cpu(g, w, inputs, threads, {}, layouts).outputs, want, tolerance,
                 what + " " + str(layout) + " threads=" + std::to_string(threads));
  }
  return kernels;
}

struct Rng {
  explicit Rng(uint64_t seed) : gen(static_cast<uint32_t>(seed)) {}
  int64_t uniform(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(gen);
  }
  bool coin(double p = 0.5) { return std::bernoulli_distribution(p)(gen); }
  template <typename T>
  T pick(std::initializer_list<T> values) {
    return *(values.begin() + uniform(0, static_cast<int64_t>(values.size()) - 1));
  }
  Shape shape(int64_t rank, int64_t lo, int64_t hi) {
    Shape s;
    for (int64_t i = 0; i < rank; ++i) s.push_back(uniform(lo, hi));
    return s;
  }
  std::mt19937 gen;
};

uint64_t seed_of(OpKind kind, int i) {
  return 1000 * (static_cast<uint64_t>(kind) + 1) + i;
}

// ---- Conv and its fused units --------------------------------------------------------------

struct ConvProblem {
  Shape x;
  ir::ConvAttrs attrs;
  int64_t oc = 1;
  bool bias = false;
};

ConvProblem random_conv(Rng& r) {
  for (;;) {
    ConvProblem p;
    auto& a = p.attrs;
    // dense, grouped, depthwise, or dense 1x1 with many channels (kept on plain nchw)
    const int64_t kind = r.uniform(0, 3);
    a.groups = kind == 1 ? r.uniform(2, 3) : kind == 2 ? r.uniform(2, 6) : 1;
    const int64_t c = kind == 3   ? r.uniform(32, 40)
                      : kind == 2 ? a.groups
                                  : a.groups * r.uniform(1, 4);
    p.oc = kind == 2 ? a.groups * r.uniform(1, 2) : a.groups * r.uniform(1, 4);
    p.x = {r.uniform(1, 2), c, r.uniform(3, 12), r.uniform(3, 12)};
    a.kernel = kind == 3 ? std::array<int64_t, 2>{1, 1}
                         : std::array<int64_t, 2>{r.uniform(1, 3), r.uniform(1, 3)};
    a.stride = {r.uniform(1, 3), r.uniform(1, 3)};
    a.dilation = {r.uniform(1, 2), r.uniform(1, 2)};
    a.pads = {r.uniform(0, 2), r.uniform(0, 2), r.uniform(0, 2), r.uniform(0, 2)};
    a.activation = r.pick({ir::Activation::kNone, ir::Activation::kRelu, ir::Activation::kSigmoid,
                           ir::Activation::kTanh, ir::Activation::kGelu});
    p.bias = r.coin();
    bool fits = true;
    for (int i = 0; i < 2; ++i)
      fits = fits && ir::window_output_size(p.x[2 + i], a.kernel[i], a.stride[i], a.pads[i],
                                            a.pads[2 + i], a.dilation[i], false) > 0;
    if (fits) return p;
  }
}

std::string describe(const ConvProblem& p) {
  const auto& a = p.attrs;
  std::ostringstream out;
  out << "conv x=" << str(p.x) << " oc=" << p.oc << " k=" << a.kernel[0] << "x" << a.kernel[1]
      << " s=" << a.stride[0] << "," << a.stride[1] << " d=" << a.dilation[0] << ","
      << a.dilation[1] << " pads=" << a.pads[0] << "," << a.pads[1] << "," << a.pads[2] << ","
      << a.pads[3] << " g=" << a.groups << " bias=" << p.bias
      << " act=" << ir::to_string(a.activation);
  return out.str();
}

ir::OpAttrs activation_attrs(OpKind kind, bool tanh_gelu) {
  return kind == OpKind::Gelu ? ir::OpAttrs{ir::GeluAttrs{tanh_gelu}} : ir::OpAttrs{};
}

// Attributes for any activation op: Gelu's form from `tanh_gelu`, Clip's bounds and
// HardSigmoid's line drawn from `r` (bounds sometimes infinite, as an exporter leaves them).
ir::OpAttrs random_activation_attrs(OpKind kind, bool tanh_gelu, Rng& r) {
  auto real = [&](float lo, float hi) {
    return std::uniform_real_distribution<float>(lo, hi)(r.gen);
  };
  switch (kind) {
    case OpKind::Clip: {
      ir::ClipAttrs a;
      if (r.coin(0.8)) a.min = real(-1.5f, 0.5f);
      if (r.coin(0.8)) a.max = std::max(a.min, 0.0f) + real(0.0f, 1.5f);
      if (r.coin(0.1) && !std::isinf(a.min) && !std::isinf(a.max))
        std::swap(a.min, a.max);  // min > max: ONNX gives max everywhere
      return a;
    }
    case OpKind::HardSigmoid:
      return ir::HardSigmoidAttrs{real(0.1f, 0.6f), real(0.2f, 0.8f)};
    default:
      return activation_attrs(kind, tanh_gelu);
  }
}

constexpr OpKind kActivationKinds[] = {OpKind::Relu,     OpKind::Sigmoid, OpKind::Tanh,
                                       OpKind::Gelu,     OpKind::Clip,    OpKind::HardSigmoid,
                                       OpKind::HardSwish};

std::string describe(OpKind kind, const ir::OpAttrs& attrs) {
  std::ostringstream out;
  out << ir::to_string(kind);
  if (const auto* c = std::get_if<ir::ClipAttrs>(&attrs))
    out << "(" << c->min << "," << c->max << ")";
  if (const auto* h = std::get_if<ir::HardSigmoidAttrs>(&attrs))
    out << "(" << h->alpha << "," << h->beta << ")";
  if (const auto* g = std::get_if<ir::GeluAttrs>(&attrs))
    out << "(tanh=" << g->tanh_approximation << ")";
  return out.str();
}

// `prefix` names the conv and its parameters apart when a graph has several.
ValueId add_conv(ir::GraphBuilder& b, ValueId x, const ConvProblem& p,
                 const std::string& prefix = "") {
  const int64_t c = p.x[1];
  std::vector<ValueId> in{
      x, b.add_parameter(prefix + "w",
                         f32({p.oc, c / p.attrs.groups, p.attrs.kernel[0], p.attrs.kernel[1]}),
                         ParamInit::normal(0.5f))};
  if (p.bias) in.push_back(b.add_parameter(prefix + "b", f32({p.oc}), ParamInit::normal(0.5f)));
  return b.add_op(OpKind::Conv, p.attrs, in, prefix + "conv");
}

ValueId add_batch_norm(ir::GraphBuilder& b, ValueId x, int64_t channels) {
  const Shape s{channels};
  return b.add_op(OpKind::BatchNormalization, ir::BatchNormAttrs{1e-3f},
                  {x, b.add_parameter("scale", f32(s), ParamInit::uniform(0.5f, 1.5f)),
                   b.add_parameter("shift", f32(s), ParamInit::normal(0.5f)),
                   b.add_parameter("mean", f32(s), ParamInit::normal(0.5f)),
                   b.add_parameter("var", f32(s), ParamInit::uniform(0.2f, 2.0f))},
                  "bn");
}

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
