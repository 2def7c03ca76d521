#include "sim/kernels.h"

#include <fmt/core.h>
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "base/error.h"
#include "ir/op_cost.h"
#include "sched/merge.h"

namespace braid::sim {
namespace {

constexpr double kFloatBytes = 4;

// CUTLASS-like SIMT thread-block tiles (double-buffered K-tile of 8). The efficiencies are the
// fraction of FP32 peak such a tile's inner loop sustains at full occupancy; larger tiles reuse
// each loaded operand more and reach more. Their ratios are CUTLASS's (0.70 : 0.65 : 0.60 : 0.50
// : 0.40); their scale, 0.7, is the fit to the calibration rows of devices/published/
// published.json (sim_published_split_test).
constexpr double kTileScale = 0.7;
constexpr GemmTileSpec kTiles[] = {
    {128, 128, 256, 128, (128 + 128) * 8 * 4 * 2, 0.70 * kTileScale},
    {128, 64, 128, 128, (128 + 64) * 8 * 4 * 2, 0.65 * kTileScale},
    {64, 64, 128, 80, (64 + 64) * 8 * 4 * 2, 0.60 * kTileScale},
    {64, 32, 64, 80, (64 + 32) * 8 * 4 * 2, 0.50 * kTileScale},
    {32, 32, 64, 64, (32 + 32) * 8 * 4 * 2, 0.40 * kTileScale},
};
constexpr int kSplitK[] = {1, 2, 4};
constexpr int64_t kMinSliceK = 32;  // a split-K slice keeps at least this much of K

// Element-wise style kernels: 256 threads, KernelModel::elements_per_thread each.
constexpr int kElementwiseThreads = 256;
// Layout conversions (TensorCoreModel): elements per 256-thread transpose block (a 32x32 tile).
constexpr int64_t kTransposeTile = 32 * 32;
// MatMul/Gemm with at most this many rows run as a GEMV (per-op kernels).
constexpr int64_t kGemvRows = 8;

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

Kernel elementwise(std::string name, UnitId unit, int64_t elements, double flops, double bytes,
                   const DeviceSpec& spec) {
  Kernel k{.name = std::move(name), .unit = unit};
  const int64_t per_block = int64_t(kElementwiseThreads) * spec.kernel_model.elements_per_thread;
  k.blocks = std::max<int64_t>(1, ceil_div(elements, per_block));
  k.threads = kElementwiseThreads;
  k.registers = 32;
  k.efficiency = 0.5;
  k.flops = flops / k.blocks;
  k.dram_bytes = k.uncached_bytes = bytes * spec.element_bytes_scale() / k.blocks;
  k.working_set = 0;  // streams through once: nothing to reuse
  return k;
}

// A (batched) GEMM C[M,N] = A[M,K] B[K,N], `batch` independent ones (conv groups).
struct GemmProblem {
  int64_t batch = 1, m = 0, n = 0, k = 0;
  double a_bytes = 0, b_bytes = 0, c_bytes = 0;  // whole tensors, all batches
  double epilogue_flops = 0;                     // fused ops after the GEMM, in total
  double epilogue_bytes = 0;                     // their extra inputs
};

std::vector<Kernel> gemm_kernels(const std::string& name, UnitId unit, const GemmProblem& p,
                                 const DeviceSpec& spec) {
  std::vector<Kernel> best;
  double best_us = 0;
  const KernelModel& model = spec.kernel_model;
  const std::span<const GemmTileSpec> tiles =
      model.gemm_tiles.empty() ? std::span<const GemmTileSpec>(kTiles) : model.gemm_tiles;
  const std::span<const int> splits =
      model.split_k.empty() ? std::span<const int>(kSplitK) : model.split_k;
  for (const GemmTileSpec& tile : tiles) {
    for (int split : splits) {
      if (split > 1 && p.k / split < kMinSliceK) break;
      const int64_t slice = ceil_div(p.k, split);
      const int64_t tiles = ceil_div(p.m, tile.m) * ceil_div(p.n, tile.n);
      Kernel main{
          .name = split == 1 ? fmt::format("{} igemm {}x{}", name, tile.m, tile.n)
                             : fmt::format("{} igemm {}x{} splitk {}", name, tile.m, tile.n, split),
          .unit = unit};
      main.blocks = p.batch * tiles * split;
      main.threads = tile.threads;
      main.registers = tile.registers;
      main.shared_memory = tile.shared_memory;
      main.efficiency = tile.efficiency;
      if (spec.precision != Precision::kFp32 && model.tensor_cores.efficiency > 0)
        main.efficiency = model.tensor_cores.efficiency;
      main.gemm = true;
      main.library_call = true;
      // Edge tiles compute their padding too: the FLOPs are the tiles', not the problem's.
      main.flops =
          2.0 * tile.m * tile.n * slice + (split == 1 ? p.epilogue_flops / main.blocks : 0);
      const double partials = split == 1 ? p.c_bytes + p.epilogue_bytes : p.c_bytes * split;
      main.dram_bytes = (p.a_bytes + p.b_bytes + partials) / main.blocks;
      main.uncached_bytes = std::max(
          main.dram_bytes,
          kFloatBytes * (double(tile.m) * slice + double(slice) * tile.n) + partials / main.blocks);
      main.working_set = p.a_bytes + p.b_bytes + partials;  // write-back L2: outputs too
      // In TF32/FP16/BF16: tensor-core work and the precision's bytes (DeviceSpec::precision).
      main.flops *= spec.gemm_flop_scale();
      main.dram_bytes *= spec.element_bytes_scale();
      main.uncached_bytes *= spec.element_bytes_scale();
      main.working_set *= spec.element_bytes_scale();
      if (main.blocks_per_sm(spec) == 0) continue;
      std::vector<Kernel> candidate{main};
      double us = idle_kernel_us(main, spec);
      if (split > 1) {
        const int64_t outputs = p.batch * p.m * p.n;
        candidate.push_back(elementwise(name + " splitk reduce", unit, outputs,
                                        double(split) * outputs + p.epilogue_flops,
                                        p.c_bytes * (split + 1) + p.epilogue_bytes, spec));
        us += idle_kernel_us(candidate.back(), spec) + spec.host.launch_us;
      }
      // Ties (within 1%) keep the earlier candidate: the larger tile, the fewer kernels.
      if (best.empty() || us < best_us * 0.99) {
        best = std::move(candidate);
        best_us = us;
      }
    }
  }
  BRAID_CHECK(!best.empty(), ErrorCode::kUnsupported, "sim: no GEMM tile of '", name,
              "' fits an SM of ", spec.name);
  return best;
}

bool is_epilogue_op(ir::OpKind kind) {
  switch (kind) {
    case ir::OpKind::Relu:
    case ir::OpKind::Sigmoid:
    case ir::OpKind::Tanh:
    case ir::OpKind::Gelu:
    case ir::OpKind::Clip:
    case ir::OpKind::HardSigmoid:
    case ir::OpKind::HardSwish:
    case ir::OpKind::BatchNormalization:
    case ir::OpKind::Add:
    case ir::OpKind::Mul:
      return true;
    default:
      return false;
  }
}

bool launches_nothing(ir::OpKind kind) {
  return kind == ir::OpKind::Reshape || kind == ir::OpKind::Flatten || kind == ir::OpKind::Identity;
}

double value_bytes(const ir::Graph& g, ValueId v) {
  return double(g.value(v).type.bytes());
}

const ir::Shape& shape_of(const ir::Graph& g, ValueId v) {
  return g.value(v).type.shape;
}

GemmProblem conv_problem(const ir::Graph& g, const ir::Node& n) {
  const auto& attrs = std::get<ir::ConvAttrs>(n.attrs);
  const ir::Shape& x = shape_of(g, n.inputs[0]);
  const ir::Shape& w = shape_of(g, n.inputs[1]);
  const ir::Shape& y = shape_of(g, n.outputs[0]);
  GemmProblem p;
  p.batch = attrs.groups;
  p.m = y[0] * y[2] * y[3];
  p.n = w[0] / attrs.groups;
  p.k = x[1] / attrs.groups * w[2] * w[3];
  p.a_bytes = value_bytes(g, n.inputs[0]);
  p.b_bytes = value_bytes(g, n.inputs[1]) + (n.inputs.size() > 2 ? value_bytes(g, n.inputs[2]) : 0);
  p.c_bytes = value_bytes(g, n.outputs[0]);
  return p;
}

// ConvTranspose as cuDNN runs it: the data gradient of the Conv from its output to its input,
// an implicit GEMM with M = N*IH*IW, N = IC/groups, K = OC/groups*KH*KW per group (the same
// FLOPs as ir::op_flops counts: each input element feeds OC/groups * KH * KW outputs).
GemmProblem conv_transpose_problem(const ir::Graph& g, const ir::Node& n) {
  const auto& attrs = std::get<ir::ConvTransposeAttrs>(n.attrs);
  const ir::Shape& x = shape_of(g, n.inputs[0]);
  const ir::Shape& w = shape_of(g, n.inputs[1]);  // [IC, OC/groups, KH, KW]
  GemmProblem p;
  p.batch = attrs.groups;
  p.m = x[0] * x[2] * x[3];
  p.n = w[0] / attrs.groups;
  p.k = w[1] * w[2] * w[3];
  p.a_bytes = value_bytes(g, n.inputs[0]);
  p.b_bytes = value_bytes(g, n.inputs[1]) + (n.inputs.size() > 2 ? value_bytes(g, n.inputs[2]) : 0);
  p.c_bytes = value_bytes(g, n.outputs[0]);
  return p;
}

// Whether the CUDA executor runs a ConvTranspose straight into its output, or into an uncropped
// scratch copied out by a crop kernel (cuda_compiler.cc compile_conv_transpose).
bool conv_transpose_crops(const ir::Graph& g, const ir::Node& n) {
  const auto& a = std::get<ir::ConvTransposeAttrs>(n.attrs);
  const ir::Shape& x = shape_of(g, n.inputs[0]);
  const ir::Shape& y = shape_of(g, n.outputs[0]);
  if (a.pads[0] != a.pads[2] || a.pads[1] != a.pads[3]) return true;
  for (int i = 0; i < 2; ++i) {
    const int64_t padded = y[2 + i] + 2 * a.pads[i] - a.dilation[i] * (a.kernel[i] - 1) - 1;
    if (padded < 0 || padded / a.stride[i] + 1 != x[2 + i]) return true;
  }
  return false;
}

GemmProblem matmul_problem(const ir::Graph& g, const ir::Node& n) {
  const ir::Shape& a = shape_of(g, n.inputs[0]);
  const ir::Shape& y = shape_of(g, n.outputs[0]);
  GemmProblem p;
  const bool trans_a = n.kind == ir::OpKind::Gemm && std::get<ir::GemmAttrs>(n.attrs).trans_a;
  p.k = trans_a ? a[a.size() - 2] : a.back();
  p.n = y.back();
  p.m = 1;
  for (size_t i = 0; i + 1 < y.size(); ++i) p.m *= y[i];
  for (ValueId v : n.inputs) (v == n.inputs[0] ? p.a_bytes : p.b_bytes) += value_bytes(g, v);
  p.c_bytes = value_bytes(g, n.outputs[0]);
  return p;
}

bool is_depthwise(const ir::Graph& g, const ir::Node& n) {
  const auto& attrs = std::get<ir::ConvAttrs>(n.attrs);
  return attrs.groups > 1 && attrs.groups == shape_of(g, n.inputs[0])[1];
}

// The kernel(s) of one op that launches work.
std::vector<Kernel> op_kernels(const ir::Graph& g, NodeId id, UnitId unit, double epilogue_flops,
                               double epilogue_bytes, const DeviceSpec& spec) {
  const ir::Node& n = g.node(id);
  const double flops = double(ir::op_flops(g, id)) + epilogue_flops;
  const double bytes = double(ir::op_bytes(g, id)) + epilogue_bytes;
  const int64_t out_elements = g.value(n.outputs[0]).type.elements();
  const bool conv_gemm = n.kind == ir::OpKind::Conv && !is_depthwise(g, n);
  if (conv_gemm || n.kind == ir::OpKind::ConvTranspose || n.kind == ir::OpKind::MatMul ||
      n.kind == ir::OpKind::Gemm) {
    GemmProblem p = conv_gemm                             ? conv_problem(g, n)
                    : n.kind == ir::OpKind::ConvTranspose ? conv_transpose_problem(g, n)
                                                          : matmul_problem(g, n);
    // The op's own bias and activation run in the epilogue with the fused ops.
    const double gemm_flops = 2.0 * p.batch * p.m * p.n * p.k;
    p.epilogue_flops = epilogue_flops + std::max(0.0, double(ir::op_flops(g, id)) - gemm_flops);
    p.epilogue_bytes = epilogue_bytes;
    return gemm_kernels(n.name, unit, p, spec);
  }
  int64_t elements = out_elements;
  if (n.kind == ir::OpKind::GlobalAveragePool || n.kind == ir::OpKind::Softmax ||
      n.kind == ir::OpKind::LayerNormalization || n.kind == ir::OpKind::ReduceMean) {
    // Reductions: a warp per row; count input elements, 8 per thread.
    elements = std::max(out_elements, g.value(n.inputs[0]).type.elements() / 8);
  }
  return {elementwise(fmt::format("{} {}", n.name, ir::to_string(n.kind)), unit, elements, flops,
                      bytes, spec)};
}

bool is_unary_activation(ir::OpKind kind) {
  return ir::is_activation(kind);
}

// A kernel that reads and writes `elements` floats once per input/output.
Kernel copy_kernel(std::string name, UnitId unit, int64_t elements, int tensors,
                   const DeviceSpec& spec) {
  return elementwise(std::move(name), unit, elements, double(elements) * (tensors - 1),
                     kFloatBytes * double(elements) * tensors, spec);
}

// The layout conversions cuDNN runs around a tensor-core convolution of NCHW tensors
// (TensorCoreModel): the input and filter transposed before the GEMM, the output after it.
// Nothing in FP32, whose kernels read NCHW.
std::vector<Kernel> layout_conversions(const ir::Graph& g, const ir::Node& conv, UnitId unit,
                                       const DeviceSpec& spec, bool before) {
  const TensorCoreModel& tc = spec.kernel_model.tensor_cores;
  std::vector<Kernel> out;
  if (spec.precision == Precision::kFp32) return out;
  // A tiled transpose (CUDA's transpose sample): a 32x32 tile through shared memory per
  // 256-thread block, four elements per thread, each element read and written once.
  auto convert = [&](ValueId v, const char* what) {
    const int64_t elements = g.value(v).type.elements();
    Kernel k{.name = fmt::format("{} {} layout", conv.name, what), .unit = unit};
    k.blocks = std::max<int64_t>(1, ceil_div(elements, kTransposeTile));
    k.threads = kElementwiseThreads;
    k.registers = 32;
    k.shared_memory = int(kTransposeTile * kFloatBytes);
    k.efficiency = 0.5;
    k.flops = 0;
    k.dram_bytes = k.uncached_bytes =
        2 * kFloatBytes * spec.element_bytes_scale() * double(elements) / double(k.blocks);
    out.push_back(k);
  };
  if (before && tc.convert_input) convert(conv.inputs[0], "input");
  if (before && tc.convert_filter) convert(conv.inputs[1], "filter");
  if (!before && tc.convert_output) convert(conv.outputs[0], "output");
  return out;
}

void append(std::vector<Kernel>& to, std::vector<Kernel> from) {
  for (Kernel& k : from) to.push_back(std::move(k));
}

// The kernels braid's CUDA executor launches for one unit (cuda_executor.cc compile_unit):
// KernelModel::per_op_kernels.
std::vector<Kernel> per_op_unit_kernels(const ir::UnitGraph& units, UnitId unit,
                                        const DeviceSpec& spec) {
  const ir::Graph& g = *units.graph();
  const std::vector<NodeId>& ops = units.unit(unit).ops;
  std::vector<Kernel> kernels;
  auto elements = [&](ValueId v) { return g.value(v).type.elements(); };
  auto single_consumer = [&](ValueId v) { return g.value(v).consumers.size() == 1; };
  for (size_t i = 0; i < ops.size(); ++i) {
    const ir::Node& n = g.node(ops[i]);
    const std::string name = fmt::format("{} {}", n.name, ir::to_string(n.kind));
    if (launches_nothing(n.kind)) continue;
    if (n.kind == ir::OpKind::Conv && !is_depthwise(g, n)) {
      // Conv [BatchNormalization] [activation]: the BN is folded into the weights; a ReLU
      // fuses into cudnnConvolutionBiasActivationForward, anything else is a channel_affine.
      const auto& attrs = std::get<ir::ConvAttrs>(n.attrs);
      ValueId y = n.outputs[0];
      size_t used = 1;
      bool bias = n.inputs.size() > 2;
      if (i + used < ops.size() && single_consumer(y) &&
          g.node(ops[i + used]).kind == ir::OpKind::BatchNormalization &&
          g.node(ops[i + used]).inputs[0] == y) {
        y = g.node(ops[i + used]).outputs[0];
        ++used;
        bias = true;
      }
      std::optional<ir::OpKind> activation;
      if (attrs.activation != ir::Activation::kNone)
        activation = ir::activation_op(attrs.activation);
      if (!activation && i + used < ops.size() && single_consumer(y) &&
          is_unary_activation(g.node(ops[i + used]).kind) && g.node(ops[i + used]).inputs[0] == y) {
        activation = g.node(ops[i + used]).kind;
        y = g.node(ops[i + used]).outputs[0];
        ++used;
      }
      if (attrs.pads[0] != attrs.pads[2] || attrs.pads[1] != attrs.pads[3])
        kernels.push_back(copy_kernel(name + " pad", unit, elements(n.inputs[0]), 2, spec));
      GemmProblem p = conv_problem(g, n);
      const bool fused = activation == ir::OpKind::Relu;
      if (fused) p.epilogue_flops = 2.0 * double(elements(y));
      append(kernels, layout_conversions(g, n, unit, spec, /*before=*/true));
      append(kernels, gemm_kernels(n.name, unit, p, spec));
      append(kernels, layout_conversions(g, n, unit, spec, /*before=*/false));
      if (!fused && (bias || activation))
        kernels.push_back(copy_kernel(name + " channel_affine", unit, elements(y), 2, spec));
      i += used - 1;
      continue;
    }
    switch (n.kind) {
      case ir::OpKind::Concat:
        for (ValueId v : n.inputs)
          kernels.push_back(copy_kernel(name + " copy", unit, elements(v), 2, spec));
        break;
      case ir::OpKind::Split:
        for (ValueId v : n.outputs)
          kernels.push_back(copy_kernel(name + " copy", unit, elements(v), 2, spec));
        break;
      case ir::OpKind::Add:
      case ir::OpKind::Mul:
      case ir::OpKind::Sum:
        // One binary kernel per extra input (a Sum of one input is a copy).
        for (size_t k = 1; k < std::max<size_t>(2, n.inputs.size()); ++k)
          kernels.push_back(
              copy_kernel(name, unit, elements(n.outputs[0]), n.inputs.size() > 1 ? 3 : 2, spec));
        break;
      case ir::OpKind::ConvTranspose: {
        // cudnnConvolutionBackwardData, [a crop out of scratch], [a channel_affine for the bias].
        for (Kernel& k : gemm_kernels(n.name, unit, conv_transpose_problem(g, n), spec))
          kernels.push_back(std::move(k));
        if (conv_transpose_crops(g, n))
          kernels.push_back(copy_kernel(name + " crop", unit, elements(n.outputs[0]), 2, spec));
        if (n.inputs.size() > 2)
          kernels.push_back(
              copy_kernel(name + " channel_affine", unit, elements(n.outputs[0]), 2, spec));
        break;
      }
      case ir::OpKind::MatMul:
      case ir::OpKind::Gemm: {
        // Gemm's bias is copied into the output first (cuBLAS then accumulates with beta 1).
        if (n.kind == ir::OpKind::Gemm && n.inputs.size() > 2)
          kernels.push_back(copy_kernel(name + " bias", unit, elements(n.outputs[0]), 2, spec));
        const GemmProblem p = matmul_problem(g, n);
        if (p.m > kGemvRows) {
          for (Kernel& k : gemm_kernels(n.name, unit, p, spec)) kernels.push_back(std::move(k));
          break;
        }
        // A few rows: cuBLAS's GEMV, 128 threads per 4 outputs, streaming the weights once.
        Kernel gemv{.name = name + " gemv", .unit = unit};
        gemv.blocks = std::max<int64_t>(1, ceil_div(p.n, 4));
        gemv.threads = 128;
        gemv.registers = 32;
        gemv.efficiency = 0.5;
        gemv.flops = 2.0 * p.m * p.n * p.k / double(gemv.blocks);
        gemv.dram_bytes = gemv.uncached_bytes =
            (p.a_bytes + p.b_bytes + p.c_bytes) * spec.element_bytes_scale() / gemv.blocks;
        gemv.library_call = true;
        kernels.push_back(gemv);
        break;
      }
      default:
        for (Kernel& k : op_kernels(g, ops[i], unit, 0, 0, spec)) kernels.push_back(std::move(k));
        break;
    }
  }
  return kernels;
}

}  // namespace

std::span<const GemmTileSpec> builtin_gemm_tiles() {
  return kTiles;
}

int Kernel::blocks_per_sm(const DeviceSpec& spec) const {
  const SmLimits& sm = spec.per_sm;
  int n = sm.max_blocks;
  n = std::min(n, sm.max_threads / threads);
  n = std::min(n, sm.max_warps / warps());
  n = std::min(n, sm.registers / std::max(1, threads * registers));
  if (shared_memory > 0) n = std::min(n, sm.shared_memory_bytes / shared_memory);
  return std::max(n, 0);
}

double idle_kernel_us(const Kernel& k, const DeviceSpec& spec) {
  const int resident = k.blocks_per_sm(spec);
  if (resident == 0) return std::numeric_limits<double>::infinity();
  const int64_t per_sm = std::min<int64_t>(resident, ceil_div(k.blocks, spec.sms));
  const int64_t active_sms = std::min<int64_t>(spec.sms, k.blocks);
  const double warps = double(per_sm * k.warps());
  const double sm_flops = spec.sustained_fp32_flops() / spec.sms * k.efficiency *
                          std::min(1.0, warps / SmModel::kWarpsForPeakCompute);
  const double sm_bandwidth =
      std::min(spec.dram_bytes_per_s() / spec.sms * SmModel::kSmBandwidthShare *
                   std::min(1.0, warps / SmModel::kWarpsForPeakMemory),
               spec.dram_bytes_per_s() / active_sms);
  const double block_s =
      std::max(k.flops * per_sm / sm_flops, k.dram_bytes * per_sm / sm_bandwidth);
  if (block_s == 0) return 0;  // no work: no block latency either (the engine's rule)
  const int64_t waves = ceil_div(k.blocks, per_sm * spec.sms);
  return waves * (block_s * 1e6 + spec.kernel_model.block_latency_us);
}

std::vector<Kernel> unit_kernels(const ir::UnitGraph& units, UnitId unit, const DeviceSpec& spec) {
  const ir::Unit& u = units.unit(unit);
  const ir::Graph* g = units.graph();
  if (g == nullptr || u.ops.empty()) {
    // A weighted-DAG unit: one full-device kernel that takes the given latency on an idle
    // device (16 warps per SM reach the peak issue rate).
    Kernel k{.name = u.name, .unit = unit};
    k.blocks = spec.sms;
    k.threads = 512;
    k.registers = 32;
    k.efficiency = 1;
    const double latency_us = u.latency ? u.latency->count() : 0;
    k.flops = latency_us * 1e-6 * spec.sustained_fp32_flops() / spec.sms;
    return {k};
  }
  if (spec.kernel_model.per_op_kernels) return per_op_unit_kernels(units, unit, spec);
  std::vector<Kernel> kernels;
  auto produced_inside = [&](ValueId v) {
    const ir::Value& value = g->value(v);
    return value.kind == ir::ValueKind::kActivation && units.unit_of(value.producer) == unit;
  };
  for (size_t i = 0; i < u.ops.size(); ++i) {
    const ir::Node& n = g->node(u.ops[i]);
    if (launches_nothing(n.kind)) continue;
    if (n.kind == ir::OpKind::Pad && i + 1 < u.ops.size()) continue;  // the consumer pads
    // Epilogue ops after this one, up to the next op that launches work.
    double epilogue_flops = 0, epilogue_bytes = 0;
    size_t j = i + 1;
    for (; j < u.ops.size(); ++j) {
      const ir::Node& e = g->node(u.ops[j]);
      if (launches_nothing(e.kind)) continue;
      if (!is_epilogue_op(e.kind)) break;
      epilogue_flops += double(ir::op_flops(*g, u.ops[j]));
      for (ValueId v : e.inputs)
        if (!produced_inside(v)) epilogue_bytes += value_bytes(*g, v);
    }
    for (Kernel& k : op_kernels(*g, u.ops[i], unit, epilogue_flops, epilogue_bytes, spec))
      kernels.push_back(std::move(k));
    i = j - 1;
  }
  return kernels;
}

std::vector<Kernel> merged_kernels(const ir::UnitGraph& units, std::span<const UnitId> merge,
                                   const DeviceSpec& spec) {
  BRAID_ASSERT(!merge.empty(), "an empty merge");
  const ir::Graph& g = *units.graph();
  GemmProblem p;
  std::string name = "merge";
  int64_t kh = 0, kw = 0;
  double outputs = 0;
  for (UnitId u : merge) {
    std::string why;
    auto conv = sched::mergeable_conv(units, u, &why);
    BRAID_ASSERT(conv.has_value(), "merged_kernels: ", why);
    kh = std::max(kh, conv->attrs->kernel[0]);
    kw = std::max(kw, conv->attrs->kernel[1]);
  }
  for (UnitId u : merge) {
    std::string why;
    auto conv = sched::mergeable_conv(units, u, &why);
    const GemmProblem one = conv_problem(g, *conv->conv);
    const ir::Shape& x = shape_of(g, conv->conv->inputs[0]);
    p.m = one.m;
    p.n += one.n;
    p.k = x[1] * kh * kw;  // every kernel zero-padded to the largest
    p.a_bytes = one.a_bytes;
    p.b_bytes +=
        one.b_bytes * double(kh * kw) / double(conv->attrs->kernel[0] * conv->attrs->kernel[1]);
    p.c_bytes += one.c_bytes;
    outputs += one.c_bytes;
    name += " " + units.unit(u).name;
  }
  std::vector<Kernel> kernels = gemm_kernels(name, merge.front(), p, spec);
  // The split: each conv's channels copied out of the merged output.
  kernels.push_back(elementwise(name + " split", merge.front(), int64_t(outputs / kFloatBytes), 0,
                                2 * outputs, spec));
  return kernels;
}

}  // namespace braid::sim
