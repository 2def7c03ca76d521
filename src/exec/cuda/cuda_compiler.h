// The CUDA executor's compiler: turns the ops of each unit into Ops, closures that enqueue the
// unit's kernels (cuDNN, cuBLAS, cuda_kernels.cu) on a lane's stream over a request's arena. It
// does everything that can be done once per model: BatchNormalization folded into Conv weights,
// cuDNN algorithms chosen and descriptors made, constants uploaded. An Op never allocates, so it
// can run inside a stream capture (CUDA Graphs) as well as eagerly.
//
//   Compiler compiler(graph, weights, memory, options, cudnn);
//   std::vector<Op> ops = compiler.compile_unit(units.unit(u).ops);
//   for (const Op& op : ops) op(lane, arena);   // lane: stream, cuDNN/cuBLAS handles, workspace
//
// One compile_* per op kind, as the CPU executor's build_* (exec/cpu).
#pragma once

#include <array>
#include <functional>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <cublasLt.h>

#include "exec/cuda/conv_layout.h"
#include "exec/cuda/cuda_check.h"
#include "exec/cuda/cuda_executor.h"
#include "exec/cuda/cuda_kernels.h"
#include "exec/cuda/gemm_epilogue.h"
#include "exec/memory_plan.h"
#include "ir/graph.h"
#include "ir/unit_graph.h"
#include "ir/weights.h"
#include "models/element_type.h"
#include "sched/lower.h"
#include "sched/merge.h"

namespace braid::exec::cuda {

// Device memory, freed with its owner.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes) {
    if (bytes > 0) BRAID_CU(cudaMalloc(&ptr_, bytes));
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    return *this;
  }
  ~DeviceBuffer() {
    if (ptr_ != nullptr) cudaFree(ptr_);
  }
  std::byte* get() const { return static_cast<std::byte*>(ptr_); }

 private:
  void* ptr_ = nullptr;
};

// What an Op runs with: one lane's stream, library handles bound to it, and its workspace.
struct LaneContext {
  cudaStream_t stream = nullptr;
  cudnnHandle_t cudnn = nullptr;
  cublasHandle_t cublas = nullptr;
  std::byte* workspace = nullptr;  // cuDNN workspace, then a padded-input or uncropped scratch
  // cuBLAS's workspace (kCublasWorkspace bytes): set on `cublas`, and given to every cuBLASLt
  // matmul on this lane (one stream, so the two never use it at once).
  std::byte* cublas_workspace = nullptr;
};

// One compiled convolution as it runs (Compiler::compile_conv, compile_merge): cuDNN's call,
// with the ReLU fused into it where cuDNN runs that, else the bias and activation after it.
struct ConvLaunch {
  cudnnTensorDescriptor_t x_desc = nullptr, y_desc = nullptr, b_desc = nullptr;
  cudnnFilterDescriptor_t w_desc = nullptr;
  cudnnConvolutionDescriptor_t c_desc = nullptr;
  cudnnConvolutionFwdAlgo_t algo{};
  size_t workspace = 0;
  const std::byte* w_dev = nullptr;
  // One cudnnConvolutionBiasActivationForward: the bias, then act_desc's activation (ReLU, or
  // identity: a bias alone); with add_z, run()'s z (a residual, stored like y) added before it
  // (alpha2 = 1).
  bool fused = false;
  bool add_z = false;
  cudnnActivationDescriptor_t act_desc = nullptr;
  // Fused: the bias in the storage type, for cuDNN. Unfused: FP32 for channel_affine, or null
  // (no bias).
  const std::byte* b_dev = nullptr;
  std::optional<UnaryOp> activation;  // applied by channel_affine when not fused
  Elem elem = Elem::kF32;
  int64_t outer = 0, channels = 0, inner = 0;  // channel_affine's view of y

  void run(const LaneContext& lane, const void* x, void* y, const void* z = nullptr) const {
    const float one = 1.0f, zero = 0.0f;
    if (fused) {
      BRAID_CU(cudnnConvolutionBiasActivationForward(
          lane.cudnn, &one, x_desc, x, w_desc, w_dev, c_desc, algo, lane.workspace, workspace,
          add_z ? &one : &zero, y_desc, add_z ? z : y, b_desc, b_dev, act_desc, y_desc, y));
      return;
    }
    BRAID_CU(cudnnConvolutionForward(lane.cudnn, &one, x_desc, x, w_desc, w_dev, c_desc, algo,
                                     lane.workspace, workspace, &zero, y_desc, y));
    if (b_dev != nullptr || activation)
      channel_affine(elem, y, y, nullptr, reinterpret_cast<const float*>(b_dev), outer, channels,
                     inner, activation.value_or(Unary::kCopy), activation.has_value(), lane.stream);
  }
};

// cuBLAS's own workspace per lane, set explicitly so that graph capture never allocates: 32 MiB,
// what cuBLAS's documentation recommends for Hopper (cublasSetWorkspace; 4 MiB before it, which
// kept the split-K and stream-K algorithms that need more out of cuBLASLt's heuristic).
constexpr int64_t kCublasWorkspace = 32 << 20;

// One op of a unit, compiled: runs on a lane with the request's arena.
using Op = std::function<void(const LaneContext&, std::byte* arena)>;
// Where a value lies at run time: parameters in the weights, the rest in the arena. Every value
// a Locator finds is stored as the compiler's elem() (FP32, FP16 or BF16).
using Locator = std::function<std::byte*(std::byte* arena)>;

// How a precision stores tensors, and the cuDNN/CUDA names of that type.
Elem elem_of(Precision p);
// How a tensor of `dtype` is stored when float32 values are stored as `floats`: int64 as kI64,
// bool as kBool.
Elem storage_elem(ir::DType dtype, Elem floats);
cudnnDataType_t cudnn_type(Elem e);
cudaDataType_t cuda_type(Elem e);
// The host-side type of a storage type: models::store_floats / load_floats convert floats to and
// from its bytes (16-bit ones rounded to nearest, ties to even).
models::ElementType element_type(Elem e);
// The elementwise op an activation node (kCopy for other kinds) or a fused attribute runs.
UnaryOp unary_of(ir::OpKind kind, const ir::OpAttrs& attrs);
std::optional<UnaryOp> unary_of(ir::Activation a);

// Compiles the ops of a graph into Ops: owns the uploaded constants and the cuDNN descriptors.
class Compiler {
 public:
  Compiler(const ir::Graph& graph, const ir::Weights& weights, const MemoryPlan& memory,
           const CudaExecutorOptions& options, cudnnHandle_t cudnn);
  ~Compiler();
  Compiler(const Compiler&) = delete;
  Compiler& operator=(const Compiler&) = delete;

  // Chooses each convolution's layout (conv_layout.h): in 16-bit plans each is timed NCHW and
  // NHWC here. Called once, with every unit, before compile_unit; without it every convolution
  // runs NCHW.
  void choose_conv_layouts(const ir::UnitGraph& units);
  // The ops of one unit, in order (fusing a Conv with its BatchNormalization and activation).
  std::vector<Op> compile_unit(std::span<const NodeId> ops);
  // Operator merge (ios.txt §4.2; cuda_merge.cc): the units of one merge stage, each one Conv
  // chain (Conv [BatchNormalization] [activation], as compile_unit fuses it) reading one input
  // with one stride and dilation, groups 1, symmetric pads and kernels that centre
  // (sched/merge.h), as ONE cuDNN convolution over their weights centred in the largest kernel
  // and concatenated along output channels (exec/merged_conv.h), written into the lane's
  // scratch; then each unit's channel window is copied into its own output. One Op, which
  // writes every unit's output; empty, with `why`, when the units cannot be one convolution.
  std::vector<Op> compile_merge(std::span<const std::vector<NodeId>> unit_ops, std::string* why);
  // Why compile_merge would refuse these units (empty: it would not); its checks alone, which
  // need no GPU (nor a cuDNN handle: a Compiler made with none answers).
  std::string merge_refusal(std::span<const std::vector<NodeId>> unit_ops) const {
    return merge_refusal(unit_ops, nullptr);
  }
  // Conv [BatchNormalization] [activation] [residual Add] [activation] at the start of `ops`
  // (compile_conv folds and fuses what this matches): how many ops the fused convolution takes,
  // the value it writes, and the ops fused after the BatchNormalization. The residual Add (a
  // ResNet block's `out += identity`, put into the conv's unit by ir::fuse) adds `residual`, an
  // activation of y's shape, after `activation` and before `after`.
  struct ConvChain {
    size_t used = 1;
    ValueId y{};
    const ir::Node* activation = nullptr;  // null: the Conv's own attribute, if any
    std::optional<ValueId> residual;
    const ir::Node* after = nullptr;  // the activation after the residual Add
  };
  ConvChain match_conv(std::span<const NodeId> ops) const;
  // Every convolution as fused, with its measured times, and the layouts chosen for them
  // (empty before choose_conv_layouts, and in FP32/TF32 plans).
  const std::vector<ConvSite>& conv_sites() const { return conv_sites_; }
  const ConvLayouts& conv_layouts() const { return conv_layouts_; }
  Locator locate(ValueId v);
  // How the plan's float values are stored (its precision's type).
  Elem elem() const { return elem_; }
  // How `v` is stored: elem() for a float value, kI64 / kBool for int64 and bool ones.
  Elem storage_of(ValueId v) const;
  // The largest per-lane scratch any Op needs (cuDNN workspace + padded input, or + a
  // ConvTranspose's uncropped output).
  int64_t scratch_bytes() const { return scratch_bytes_; }

 private:
  std::byte* constant(ValueId v);
  std::byte* keep(DeviceBuffer b, std::optional<size_t> key = std::nullopt);
  // Host FP32 data uploaded once in `as` (converted on the device), kept by the compiler (as
  // the constant of `key` when given).
  std::byte* keep_as(std::span<const float> data, Elem as, std::optional<size_t> key = {});
  float* keep_f32(std::span<const float> data) {
    return reinterpret_cast<float*>(keep_as(data, Elem::kF32));
  }
  const ir::Shape& shape(ValueId v) const { return g_.value(v).type.shape; }
  std::span<const float> host(ValueId v, const char* what) const;
  bool single_consumer(ValueId v) const;
  cudnnTensorDescriptor_t tensor4(int64_t n, int64_t c, int64_t h, int64_t w,
                                  cudnnTensorFormat_t format = CUDNN_TENSOR_NCHW);
  // A filter of `ws` ([K, C/groups, R, S]) in elem() and a cross-correlation of these pads (top,
  // left), strides, dilations and groups accumulating in FP32 (FMA math for kFp32, tensor cores
  // otherwise); both owned by the compiler.
  // `format` NHWC: the filter's data is [K, R, S, C/groups].
  std::pair<cudnnFilterDescriptor_t, cudnnConvolutionDescriptor_t> conv_descriptors(
      const ir::Shape& ws, int64_t pad_h, int64_t pad_w, const std::array<int64_t, 2>& stride,
      const std::array<int64_t, 2>& dilation, int64_t groups,
      cudnnTensorFormat_t format = CUDNN_TENSOR_NCHW);

  // --cudnn-benchmark (CudaExecutorOptions::measure_conv_algos): a convolution's cache key and
  // its fastest algorithm by measurement (cached per process; the winner's math type set on
  // c_desc).
  // The cuBLASLt handle GEMMs are planned and run with (cuda_compiler.cc's GemmCall), made on
  // first use and shared by every lane and request: cuBLASLt keeps no stream or workspace in a
  // handle (both are given per call), and cuBLAS's functions are thread-safe on one handle.
  std::shared_ptr<cublasLtContext> cublas_lt();
  // The largest power of two up to 256 dividing every address `v` has at run time (the arena
  // and constants come from cudaMalloc, 256-aligned): what cuBLASLt may assume of a pointer.
  int64_t alignment_of(ValueId v);

  std::string conv_key(const ir::Shape& x, const ir::Shape& w, const ir::ConvAttrs& a,
                       ConvLayout layout) const;
  // The algorithm, its workspace and its measured time.
  struct ConvAlgo {
    cudnnConvolutionFwdAlgo_t algo;
    size_t workspace;
    double us;
  };
  std::optional<ConvAlgo> measured_conv_algo(const std::string& key, cudnnTensorDescriptor_t x_desc,
                                             cudnnFilterDescriptor_t w_desc, const std::byte* w_dev,
                                             cudnnConvolutionDescriptor_t c_desc,
                                             cudnnTensorDescriptor_t y_desc, const ir::Shape& xs,
                                             const ir::Shape& ys);
  // One unit of a merge as compile_merge checked it: its chain, its conv as sched/merge.h sees
  // it, and the activation it runs.
  struct MergeUnit {
    std::span<const NodeId> ops;
    ConvChain chain;
    sched::MergeableConv conv;
    std::optional<UnaryOp> activation;
  };
  std::string merge_refusal(std::span<const std::vector<NodeId>> unit_ops,
                            std::vector<MergeUnit>* units) const;
  // The Conv at ops[0]'s weights [K, C/g, R, S] and K biases, with the BatchNormalization at
  // ops[1] folded in when the chain's `used` ops include it.
  std::pair<std::vector<float>, std::vector<float>> folded_conv(std::span<const NodeId> ops,
                                                                size_t used) const;
  // [K, C/g, R, S] -> [K, R, S, C/g]: a filter as an NHWC convolution takes it.
  static std::vector<float> to_krsc(std::span<const float> w, const ir::Shape& ws);
  // The algorithm a convolution runs and its workspace: measured where 16-bit layouts were
  // timed or --cudnn-benchmark asks, else the heuristic's first that fits the workspace.
  std::pair<cudnnConvolutionFwdAlgo_t, size_t> conv_algo(
      const std::string& key, cudnnTensorDescriptor_t x_desc, cudnnFilterDescriptor_t w_desc,
      const std::byte* w_dev, cudnnConvolutionDescriptor_t c_desc, cudnnTensorDescriptor_t y_desc,
      const ir::Shape& xs, const ir::Shape& ys, const std::string& name);
  // A cuDNN activation descriptor of `mode` (ReLU or identity), owned by the compiler.
  cudnnActivationDescriptor_t activation_descriptor(cudnnActivationMode_t mode);
  // Whether cudnnConvolutionBiasActivationForward runs this convolution right: assumed for an
  // FP32 ReLU without z (as the H100 ran it); refused for an identity activation with another
  // algorithm than IMPLICIT_PRECOMP_GEMM (cuDNN documents no other); otherwise tried once on
  // inputs whose result is known and its every output checked (cuDNN may refuse a 16-bit
  // configuration or a z, or compute another function).
  bool fused_call_runs(cudnnTensorDescriptor_t x_desc, cudnnFilterDescriptor_t w_desc,
                       const std::byte* w_dev, cudnnConvolutionDescriptor_t c_desc,
                       cudnnConvolutionFwdAlgo_t algo, size_t workspace,
                       cudnnTensorDescriptor_t y_desc, cudnnTensorDescriptor_t b_desc,
                       cudnnActivationDescriptor_t act_desc, bool relu, const ir::Shape& xs,
                       const ir::Shape& ys, bool add_z = false);
  // Whether `v` lies in the arena as NHWC (conv_layout.h); never before choose_conv_layouts.
  bool stored_nhwc(ValueId v) const {
    return !conv_layouts_.nhwc_value.empty() && conv_layouts_.stored_nhwc(v);
  }
  // choose_conv_layouts' measurements: the fastest algorithm of `conv` in `layout` (nullopt when
  // cuDNN has none within the workspace), and a cudnnTransformTensor between NCHW and NHWC of a
  // tensor of `shape`, in microseconds (cached per process).
  std::optional<double> conv_us(const ir::Node& conv, ConvLayout layout);
  double transform_us(const ir::Shape& shape);

  // Each returns after appending its Ops to `out`; compile_conv returns how many ops it fused.
  size_t compile_conv(std::span<const NodeId> ops, std::vector<Op>& out);
  void compile_op(const ir::Node& n, std::vector<Op>& out);
  void compile_conv_transpose(const ir::Node& n, std::vector<Op>& out);
  void compile_resize(const ir::Node& n, std::vector<Op>& out);
  void compile_unary(const ir::Node& n, std::vector<Op>& out);
  void compile_reduce_mean(const ir::Node& n, std::vector<Op>& out);
  void compile_binary(const ir::Node& n, std::vector<Op>& out);
  // A pooling node's parameters over its input as it stands (compile_padded_pool widens them).
  cuda::Pool2d pool_of(const ir::Node& n) const;
  void compile_pool(const cuda::Pool2d& p, ValueId from, ValueId to, std::vector<Op>& out);
  // Pad then AveragePool at the start of `ops` as one pool (cuda_compile_ops.cc): 2, or 0 when
  // they do not fuse.
  size_t compile_padded_pool(std::span<const NodeId> ops, std::vector<Op>& out);
  void compile_lrn(const ir::Node& n, std::vector<Op>& out);
  void compile_global_average_pool(const ir::Node& n, std::vector<Op>& out);
  void compile_concat(const ir::Node& n, std::vector<Op>& out);
  void compile_split(const ir::Node& n, std::vector<Op>& out);
  void compile_transpose(const ir::Node& n, std::vector<Op>& out);
  void compile_pad(const ir::Node& n, std::vector<Op>& out);
  void compile_batch_norm(const ir::Node& n, std::vector<Op>& out);
  void compile_layer_norm(const ir::Node& n, std::vector<Op>& out);
  void compile_softmax(const ir::Node& n, std::vector<Op>& out);
  void compile_matmul(const ir::Node& n, std::vector<Op>& out);
  void compile_gemm(const ir::Node& n, std::vector<Op>& out);
  // The MatMul or Gemm at ops[0] with what match_gemm (gemm_epilogue.h) fuses after it, as one
  // cuBLASLt matmul with that epilogue where the heuristic offers an algorithm for it; else
  // compile_matmul / compile_gemm alone. Returns how many ops it took.
  size_t compile_gemm_chain(std::span<const NodeId> ops, std::vector<Op>& out);
  // The GEMM calls of MatMul or Gemm `n` (gemm_plan.h) writing `y` (n's output, or the last op
  // its epilogue takes in), C accumulated with `beta` (a Gemm's C, already in y). With an
  // epilogue (`bias` D's vector), nullopt where cuBLASLt has no algorithm for it.
  std::optional<Op> gemm_op(const ir::Node& n, ValueId y, float beta,
                            GemmEpilogue epilogue = GemmEpilogue::kNone,
                            const std::byte* bias = nullptr);
  void compile_copy(ValueId from, ValueId to, std::vector<Op>& out);
  // int64/bool tensors and index ops (issue 29).
  void compile_gather(const ir::Node& n, std::vector<Op>& out);
  void compile_where(const ir::Node& n, std::vector<Op>& out);
  void compile_equal(const ir::Node& n, std::vector<Op>& out);
  void compile_not(const ir::Node& n, std::vector<Op>& out);
  void compile_cast(const ir::Node& n, std::vector<Op>& out);
  void compile_expand(const ir::Node& n, std::vector<Op>& out);
  void compile_slice(const ir::Node& n, std::vector<Op>& out);

  const ir::Graph& g_;
  const ir::Weights& weights_;
  const MemoryPlan& memory_;
  CudaExecutorOptions options_;
  cudnnHandle_t cudnn_;
  std::vector<DeviceBuffer> constants_;
  std::unordered_map<size_t, std::byte*> uploaded_;
  Elem elem_ = Elem::kF32;
  int64_t esize_ = 4;  // elem_bytes(elem_)
  std::vector<cudnnTensorDescriptor_t> tensor_descs_;
  std::vector<cudnnFilterDescriptor_t> filter_descs_;
  std::vector<cudnnConvolutionDescriptor_t> conv_descs_;
  std::vector<cudnnActivationDescriptor_t> activation_descs_;
  int64_t scratch_bytes_ = 0;
  std::shared_ptr<cublasLtContext> cublas_lt_;
  std::vector<ConvSite> conv_sites_;
  ConvLayouts conv_layouts_;
  std::unordered_map<size_t, size_t> site_of_conv_;  // node index -> conv_sites_ index
};

// The memory plan's options for a CUDA plan of `graph` (what CompiledModel plans with): `base`
// with every slot sized by how its value is stored (2 bytes an element for float32 values in
// FP16/BF16 plans, 8 for int64, 1 for bool), every offset 256-byte aligned (cuDNN's and
// cuBLASLt's preferred alignment), and, with options.concat_in_place, a Concat's inputs placed
// in their windows of its output where each window starts 256-byte aligned.
MemoryPlanOptions memory_plan_options(const ir::Graph& graph, const CudaExecutorOptions& options,
                                      MemoryPlanOptions base = {});

// A model compiled once for a device: its memory plan and every unit's Ops. Shared by the
// executor's prepared model and the stage timer. Not movable: the compiler refers to `memory`.
// The memory plan is the lowered plan's lifetimes under memory_plan_options.
// Graph captures against device-wide synchronization across threads: synchronizing a device
// while any of its streams is capturing invalidates that capture, whatever the capture mode
// (CUDA Programming Guide, "Prohibited and Unhandled Operations"), and cudaDeviceSynchronize,
// cudnnDestroy and cudaFree may. A request's capture holds this shared; what may synchronize
// the device while other models serve (compiling a model, making or freeing a request or a
// compiled model: a server loading models in explicit mode) holds it exclusively. One for the
// process: those are rare, and captures only once per request and block range.
std::shared_mutex& device_sync_mutex();

struct CompiledModel {
  CompiledModel(const ir::Graph& graph, const ir::Weights& weights, const ir::UnitGraph& units,
                const sched::ExecutionPlan& plan, const CudaExecutorOptions& options,
                const MemoryPlanOptions& memory_options = {});
  ~CompiledModel();
  CompiledModel(const CompiledModel&) = delete;
  CompiledModel& operator=(const CompiledModel&) = delete;

  MemoryPlan memory;
  // The cuDNN handle the compiler chooses algorithms and probes with: it lives as long as the
  // compiler, which compile_merge still uses after prepare (the stage timer's time_merge).
  cudnnHandle_t cudnn = nullptr;
  std::unique_ptr<Compiler> compiler;
  std::vector<std::vector<Op>> unit_ops;  // by UnitId
  // By plan.merges index: the merge as one convolution (Compiler::compile_merge), which the
  // merge's first unit runs in place of its own ops while the others run nothing; empty where
  // the units could not be merged (a warning says why) and run one after another.
  std::vector<std::vector<Op>> merge_ops;
  // Whether `unit` is the one that runs its merge's op (ops_of_launch gives what to run).
  const std::vector<Op>& ops_of_launch(const sched::LaunchStep& launch,
                                       const sched::ExecutionPlan& plan) const;
};

}  // namespace braid::exec::cuda
