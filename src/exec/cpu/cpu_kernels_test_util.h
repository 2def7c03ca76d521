// The harness of the CPU kernel tests (cpu_kernels_test.cc, cpu_kernels_math_test.cc): tiny
// graphs run by the CPU kernels on a guarded, NaN-filled arena in plain or blocked layouts, checked
// against the reference kernels; seeded random problems (Rng, ConvProblem) and the builders the
// tests share.
#pragma once

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

namespace braid::exec::cpu::kernel_test {

using ir::OpKind;
using ir::ParamInit;
using ir::Shape;

constexpr int kCasesPerOp = 40;
constexpr size_t kAlignment = 64;
constexpr double kExact = 0.0;
constexpr double kElementwise = 2e-6;  // oneDNN's exp/erf/tanh approximations
constexpr double kReduction = 1e-4;    // conv/matmul: different summation order and blocking

inline ir::TensorType f32(Shape shape) {
  return {ir::DType::kFloat32, std::move(shape)};
}

inline std::string str(const Shape& s) {
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
inline TensorLocator make_locator(const ir::Graph& g, const ir::Weights& w,
                                  const PlainLayout& layout,
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

inline std::string str(TensorLayout layout) {
  return std::string(layout_name(layout));
}

// A tensor of shape `s` in `layout`, as oneDNN describes it.
inline dnnl::memory::desc layout_desc(const Shape& s, TensorLayout layout) {
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
inline void convert(const Shape& s, TensorLayout from, const float* src, TensorLayout to,
                    float* dst) {
  const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  dnnl::memory in(layout_desc(s, from), engine, const_cast<float*>(src));
  dnnl::memory out(layout_desc(s, to), engine, dst);
  dnnl::reorder(in, out).execute(stream, in, out);
  stream.wait();
}

// Each value the kernels can take in `layout` (graph inputs and outputs too: run_cpu converts
// them) gets it with probability 1/2, so every plain/blocked boundary of every op shows up.
inline std::vector<TensorLayout> random_layouts(const ir::Graph& g, TensorLayout layout,
                                                uint64_t seed) {
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
inline CpuRun run_cpu(const ir::Graph& g, const ir::Weights& w,
                      std::span<const std::vector<float>> in, int threads,
                      std::vector<std::vector<NodeId>> units = {},
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

inline std::vector<std::vector<float>> random_inputs(const ir::Graph& g, uint64_t seed) {
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
inline void expect_close(const std::vector<std::vector<float>>& got,
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
inline size_t check_graph(const ir::Graph& g, double tolerance, const std::string& what,
                          uint64_t seed) {
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

inline uint64_t seed_of(OpKind kind, int i) {
  return 1000 * (static_cast<uint64_t>(kind) + 1) + i;
}

// ---- Conv and its fused units --------------------------------------------------------------

struct ConvProblem {
  Shape x;
  ir::ConvAttrs attrs;
  int64_t oc = 1;
  bool bias = false;
};

inline ConvProblem random_conv(Rng& r) {
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

inline std::string describe(const ConvProblem& p) {
  const auto& a = p.attrs;
  std::ostringstream out;
  out << "conv x=" << str(p.x) << " oc=" << p.oc << " k=" << a.kernel[0] << "x" << a.kernel[1]
      << " s=" << a.stride[0] << "," << a.stride[1] << " d=" << a.dilation[0] << ","
      << a.dilation[1] << " pads=" << a.pads[0] << "," << a.pads[1] << "," << a.pads[2] << ","
      << a.pads[3] << " g=" << a.groups << " bias=" << p.bias
      << " act=" << ir::to_string(a.activation);
  return out.str();
}

inline ir::OpAttrs activation_attrs(OpKind kind, bool tanh_gelu) {
  return kind == OpKind::Gelu ? ir::OpAttrs{ir::GeluAttrs{tanh_gelu}} : ir::OpAttrs{};
}

// Attributes for any activation op: Gelu's form from `tanh_gelu`, Clip's bounds and
// HardSigmoid's line drawn from `r` (bounds sometimes infinite, as an exporter leaves them).
inline ir::OpAttrs random_activation_attrs(OpKind kind, bool tanh_gelu, Rng& r) {
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

inline std::string describe(OpKind kind, const ir::OpAttrs& attrs) {
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
inline ValueId add_conv(ir::GraphBuilder& b, ValueId x, const ConvProblem& p,
                        const std::string& prefix = "") {
  const int64_t c = p.x[1];
  std::vector<ValueId> in{
      x, b.add_parameter(prefix + "w",
                         f32({p.oc, c / p.attrs.groups, p.attrs.kernel[0], p.attrs.kernel[1]}),
                         ParamInit::normal(0.5f))};
  if (p.bias) in.push_back(b.add_parameter(prefix + "b", f32({p.oc}), ParamInit::normal(0.5f)));
  return b.add_op(OpKind::Conv, p.attrs, in, prefix + "conv");
}

inline ValueId add_batch_norm(ir::GraphBuilder& b, ValueId x, int64_t channels) {
  const Shape s{channels};
  return b.add_op(OpKind::BatchNormalization, ir::BatchNormAttrs{1e-3f},
                  {x, b.add_parameter("scale", f32(s), ParamInit::uniform(0.5f, 1.5f)),
                   b.add_parameter("shift", f32(s), ParamInit::normal(0.5f)),
                   b.add_parameter("mean", f32(s), ParamInit::normal(0.5f)),
                   b.add_parameter("var", f32(s), ParamInit::uniform(0.2f, 2.0f))},
                  "bn");
}

}  // namespace braid::exec::cpu::kernel_test
