#include "exec/cuda/cuda_compiler.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "exec/cuda/cuda_kernels.h"
#include "ir/resize.h"
#include "ir/shape_inference.h"

namespace braid::exec::cuda {
namespace {

Strided row_major(const ir::Shape& shape) {
  Strided s;
  s.rank = int(shape.size());
  BRAID_CHECK(s.rank <= cuda::kMaxRank, ErrorCode::kUnsupported, "cuda: rank ", s.rank,
              " tensors (at most ", cuda::kMaxRank, ")");
  int64_t stride = 1;
  for (int d = s.rank - 1; d >= 0; --d) {
    s.dims[d] = shape[d];
    s.strides[d] = stride;
    stride *= shape[d];
  }
  if (s.rank == 0) {  // a scalar: one element
    s.rank = 1;
    s.dims[0] = 1;
    s.strides[0] = 1;
  }
  return s;
}

// `shape` read over `out`'s dims with numpy broadcasting (size-1 and missing dims stride 0).
Strided broadcast_to(const ir::Shape& shape, const ir::Shape& out) {
  Strided s = row_major(out);
  const Strided own = row_major(shape);
  const int shift = int(out.size()) - int(shape.size());
  for (int d = 0; d < s.rank; ++d) {
    const int from = d - shift;
    s.strides[d] = from < 0 || shape.empty() || shape[from] == 1 ? 0 : own.strides[from];
  }
  return s;
}

}  // namespace

cuda::UnaryOp unary_of(ir::OpKind kind, const ir::OpAttrs& attrs) {
  switch (kind) {
    case ir::OpKind::Relu:
      return cuda::Unary::kRelu;
    case ir::OpKind::Sigmoid:
      return cuda::Unary::kSigmoid;
    case ir::OpKind::Tanh:
      return cuda::Unary::kTanh;
    case ir::OpKind::Gelu:
      return std::get<ir::GeluAttrs>(attrs).tanh_approximation ? cuda::Unary::kGeluTanh
                                                               : cuda::Unary::kGelu;
    case ir::OpKind::Clip: {
      const auto& a = std::get<ir::ClipAttrs>(attrs);
      return {cuda::Unary::kClip, a.min, a.max};
    }
    case ir::OpKind::HardSigmoid: {
      const auto& a = std::get<ir::HardSigmoidAttrs>(attrs);
      return {cuda::Unary::kHardSigmoid, a.alpha, a.beta};
    }
    case ir::OpKind::HardSwish:
      return cuda::Unary::kHardSwish;
    case ir::OpKind::Erf:
      return cuda::Unary::kErf;
    case ir::OpKind::Sqrt:
      return cuda::Unary::kSqrt;
    default:
      return cuda::Unary::kCopy;
  }
}

std::optional<cuda::UnaryOp> unary_of(ir::Activation a) {
  switch (a) {
    case ir::Activation::kNone:
      return std::nullopt;
    case ir::Activation::kRelu:
      return cuda::Unary::kRelu;
    case ir::Activation::kSigmoid:
      return cuda::Unary::kSigmoid;
    case ir::Activation::kTanh:
      return cuda::Unary::kTanh;
    case ir::Activation::kGelu:
      return cuda::Unary::kGelu;
  }
  return std::nullopt;
}

namespace {

int64_t normalize(int64_t axis, size_t rank) {
  return axis < 0 ? axis + int64_t(rank) : axis;
}

// A constant tensor uploaded once (weights, folded weights, biases).
DeviceBuffer upload(std::span<const float> data) {
  DeviceBuffer b(data.size_bytes());
  if (!data.empty())
    BRAID_CU(cudaMemcpy(b.get(), data.data(), data.size_bytes(), cudaMemcpyHostToDevice));
  return b;
}
template <typename T>
DeviceBuffer upload_array(const std::vector<T>& data) {
  DeviceBuffer b(data.size() * sizeof(T));
  if (!data.empty())
    BRAID_CU(cudaMemcpy(b.get(), data.data(), data.size() * sizeof(T), cudaMemcpyHostToDevice));
  return b;
}

// Column-major C[m,n] = alpha op(A) op(B) + beta C through cuBLAS: SGEMM in FP32 (the handle's
// math mode says whether TF32 tensor cores may be used), GemmEx with FP32 accumulation for
// 16-bit storage. GemmCall's fallback.
void gemm(cublasHandle_t h, Elem e, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
          float alpha, const std::byte* a, int64_t lda, const std::byte* b, int64_t ldb, float beta,
          std::byte* c, int64_t ldc) {
  const cublasOperation_t ta = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t tb = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  if (e == Elem::kF32) {
    BRAID_CU(cublasSgemm(
        h, ta, tb, int(m), int(n), int(k), &alpha, reinterpret_cast<const float*>(a), int(lda),
        reinterpret_cast<const float*>(b), int(ldb), &beta, reinterpret_cast<float*>(c), int(ldc)));
    return;
  }
  const cudaDataType_t t = cuda_type(e);
  BRAID_CU(cublasGemmEx(h, ta, tb, int(m), int(n), int(k), &alpha, a, t, int(lda), b, t, int(ldb),
                        &beta, c, t, int(ldc), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

// One line per model, precision and outcome, once per process (auto prepares a model many
// times): how many of its 16-bit convolutions run NHWC. Each one's choice is a debug line.
void log_layout_summary(const std::string& model, const std::string& precision, size_t nhwc,
                        size_t convs) {
  static std::mutex mutex;
  static std::set<std::string> logged;
  if (convs == 0) return;
  const std::string line =
      fmt::format("cuda: {} {} convolutions by measured layout: {} NHWC, {} NCHW", model, precision,
                  nhwc, convs - nhwc);
  std::lock_guard lock(mutex);
  if (logged.insert(line).second) spdlog::info("{}", line);
}

// A cuDNN algorithm is chosen once, at compile time: the fastest by cuDNN's heuristics that
// fits the workspace limit.
template <typename Perf, typename Algo>
std::optional<std::pair<Algo, size_t>> first_fitting(const Perf* perf, int found,
                                                     int64_t workspace_limit) {
  for (int i = 0; i < found; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS && int64_t(perf[i].memory) <= workspace_limit)
      return std::pair<Algo, size_t>{perf[i].algo, perf[i].memory};
  return std::nullopt;
}

// The memory plan's options with every slot sized by its value's storage type (CompiledModel).
MemoryPlanOptions sized_by_storage(const ir::Graph& g, const CudaExecutorOptions& options,
                                   MemoryPlanOptions memory) {
  const Elem floats = elem_of(options.precision);
  memory.value_bytes = [&g, floats](ValueId v) {
    const ir::TensorType& t = g.value(v).type;
    return t.elements() * Bytes(elem_bytes(storage_elem(t.dtype, floats)));
  };
  memory.alignment = 256;
  return memory;
}

int64_t power_of_two_alignment(uint64_t address) {
  return address == 0 ? 256 : std::min<int64_t>(256, int64_t(address & (~address + 1)));
}

// The shape of a column-major GEMM, C[m,n] = alpha op(A) op(B) + beta C, as cuBLAS takes it:
// op(A) is m x k (A stored k x m when transposed), op(B) k x n (B stored n x k when transposed),
// each with its leading dimension.
struct GemmShape {
  bool trans_a = false, trans_b = false;
  int64_t m = 0, n = 0, k = 0, lda = 0, ldb = 0, ldc = 0;
};

// cuBLASLt's matmul for one GEMM of the plan, its algorithm chosen once here: the first that
// cublasLtMatmulAlgoGetHeuristic ranks for these shapes, the storage type, FP32 accumulation
// and scale (CUBLAS_COMPUTE_32F; _FAST_TF32 under kTf32), the lane's cuBLAS workspace and the
// pointers' alignment. Where the heuristic offers none, the call is cuBLAS's gemm() above.
class GemmCall {
 public:
  GemmCall(std::shared_ptr<cublasLtContext> lt, Elem e, Precision precision, const GemmShape& s,
           int64_t alignment)
      : lt_(std::move(lt)), e_(e), s_(s) {
    try {
      describe(precision, alignment);
    } catch (...) {
      release();
      throw;
    }
  }
  ~GemmCall() { release(); }
  GemmCall(const GemmCall&) = delete;
  GemmCall& operator=(const GemmCall&) = delete;

  void run(const LaneContext& lane, float alpha, const std::byte* a, const std::byte* b, float beta,
           std::byte* c) const {
    if (!has_algo_) {
      gemm(lane.cublas, e_, s_.trans_a, s_.trans_b, s_.m, s_.n, s_.k, alpha, a, s_.lda, b, s_.ldb,
           beta, c, s_.ldc);
      return;
    }
    BRAID_CU(cublasLtMatmul(lt_.get(), op_, &alpha, a, a_, b, b_, &beta, c, c_, c, c_, &algo_,
                            lane.cublas_workspace, size_t(kCublasWorkspace), lane.stream));
  }

 private:
  void describe(Precision precision, int64_t alignment) {
    const cublasComputeType_t compute =
        precision == Precision::kTf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    BRAID_CU(cublasLtMatmulDescCreate(&op_, compute, CUDA_R_32F));
    const cublasOperation_t ta = s_.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t tb = s_.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    BRAID_CU(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
    BRAID_CU(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
    // Layouts as stored (rows, columns, leading dimension), in the storage type; C is D.
    const cudaDataType_t t = cuda_type(e_);
    BRAID_CU(cublasLtMatrixLayoutCreate(&a_, t, uint64_t(s_.trans_a ? s_.k : s_.m),
                                        uint64_t(s_.trans_a ? s_.m : s_.k), s_.lda));
    BRAID_CU(cublasLtMatrixLayoutCreate(&b_, t, uint64_t(s_.trans_b ? s_.n : s_.k),
                                        uint64_t(s_.trans_b ? s_.k : s_.n), s_.ldb));
    BRAID_CU(cublasLtMatrixLayoutCreate(&c_, t, uint64_t(s_.m), uint64_t(s_.n), s_.ldc));
    BRAID_CU(cublasLtMatmulPreferenceCreate(&preference_));
    const uint64_t workspace = uint64_t(kCublasWorkspace);
    BRAID_CU(cublasLtMatmulPreferenceSetAttribute(
        preference_, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof(workspace)));
    // The default assumes 256-byte pointers; arena offsets and batch strides may give less.
    const uint32_t align = uint32_t(alignment);
    for (auto attribute :
         {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
          CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
      BRAID_CU(cublasLtMatmulPreferenceSetAttribute(preference_, attribute, &align, sizeof(align)));
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(lt_.get(), op_, a_, b_, c_, c_,
                                                                 preference_, 1, &result, &found);
    has_algo_ = status == CUBLAS_STATUS_SUCCESS && found > 0 &&
                result.state == CUBLAS_STATUS_SUCCESS &&
                result.workspaceSize <= size_t(kCublasWorkspace);
    if (has_algo_) algo_ = result.algo;
  }
  void release() {
    if (preference_ != nullptr) cublasLtMatmulPreferenceDestroy(preference_);
    if (c_ != nullptr) cublasLtMatrixLayoutDestroy(c_);
    if (b_ != nullptr) cublasLtMatrixLayoutDestroy(b_);
    if (a_ != nullptr) cublasLtMatrixLayoutDestroy(a_);
    if (op_ != nullptr) cublasLtMatmulDescDestroy(op_);
    preference_ = nullptr;
    a_ = b_ = c_ = nullptr;
    op_ = nullptr;
  }

  std::shared_ptr<cublasLtContext> lt_;
  Elem e_;
  GemmShape s_;
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, c_ = nullptr;
  cublasLtMatmulPreference_t preference_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
  bool has_algo_ = false;
};

}  // namespace

// Measured algorithm choices, process-wide (PyTorch's benchmark cache): a convolution of the
// same shapes, parameters, storage, math and device is timed once per process, not once per
// prepare (auto prepares several plans of a model).
std::mutex conv_algo_mutex;
struct MeasuredAlgo {
  cudnnConvolutionFwdAlgo_t algo;
  size_t workspace;
  cudnnMathType_t math;
  double us;  // cuDNN's measured time
};
std::unordered_map<std::string, MeasuredAlgo> conv_algo_cache;
// Measured layout transforms (Compiler::transform_us), by shape and storage, under the same lock.
std::unordered_map<std::string, double> transform_us_cache;

Elem elem_of(Precision p) {
  switch (p) {
    case Precision::kFp16:
      return Elem::kF16;
    case Precision::kBf16:
      return Elem::kBF16;
    case Precision::kFp32:
    case Precision::kTf32:
      return Elem::kF32;
  }
  return Elem::kF32;
}
cudnnDataType_t cudnn_type(Elem e) {
  return e == Elem::kF16    ? CUDNN_DATA_HALF
         : e == Elem::kBF16 ? CUDNN_DATA_BFLOAT16
                            : CUDNN_DATA_FLOAT;
}
cudaDataType_t cuda_type(Elem e) {
  return e == Elem::kF16 ? CUDA_R_16F : e == Elem::kBF16 ? CUDA_R_16BF : CUDA_R_32F;
}

Compiler::Compiler(const ir::Graph& graph, const ir::Weights& weights, const MemoryPlan& memory,
                   const CudaExecutorOptions& options, cudnnHandle_t cudnn)
    : g_(graph),
      weights_(weights),
      memory_(memory),
      options_(options),
      cudnn_(cudnn),
      elem_(elem_of(options.precision)),
      esize_(elem_bytes(elem_)) {}
Compiler::~Compiler() {
  for (auto d : tensor_descs_) cudnnDestroyTensorDescriptor(d);
  for (auto d : filter_descs_) cudnnDestroyFilterDescriptor(d);
  for (auto d : conv_descs_) cudnnDestroyConvolutionDescriptor(d);
  for (auto d : activation_descs_) cudnnDestroyActivationDescriptor(d);
}

// The ops of one unit, in order (fusing a Conv with its BatchNormalization and ReLU).
std::vector<Op> Compiler::compile_unit(std::span<const NodeId> ops) {
  std::vector<Op> out;
  for (size_t i = 0; i < ops.size(); ++i) {
    const ir::Node& n = g_.node(ops[i]);
    if (n.kind == ir::OpKind::Conv) {
      i += compile_conv(ops.subspan(i), out) - 1;
      continue;
    }
    compile_op(n, out);
  }
  return out;
}

// Pointer to `v` at run time: parameters in the weights buffer, the rest in the arena.
Locator Compiler::locate(ValueId v) {
  if (g_.value(v).kind == ir::ValueKind::kParameter) {
    std::byte* p = constant(v);
    return [p](std::byte*) { return p; };
  }
  const int64_t offset = memory_.offset[index(v)];
  BRAID_ASSERT(offset >= 0, "cuda: value without arena storage");
  return [offset](std::byte* arena) { return arena + offset; };
}

std::byte* Compiler::constant(ValueId v) {
  if (auto it = uploaded_.find(index(v)); it != uploaded_.end()) return it->second;
  BRAID_CHECK(weights_.has(v), ErrorCode::kInvalidModel, "cuda: parameter '", g_.value(v).name,
              "' has no data");
  return keep_as(weights_.data(v), storage_of(v), index(v));
}
std::shared_ptr<cublasLtContext> Compiler::cublas_lt() {
  if (!cublas_lt_) {
    cublasLtHandle_t h = nullptr;
    BRAID_CU(cublasLtCreate(&h));
    cublas_lt_ =
        std::shared_ptr<cublasLtContext>(h, [](cublasLtHandle_t p) { cublasLtDestroy(p); });
  }
  return cublas_lt_;
}

int64_t Compiler::alignment_of(ValueId v) {
  if (g_.value(v).kind == ir::ValueKind::kParameter)
    return power_of_two_alignment(reinterpret_cast<uintptr_t>(constant(v)));
  return power_of_two_alignment(uint64_t(memory_.offset[index(v)]));
}

std::string Compiler::conv_key(const ir::Shape& x, const ir::Shape& w, const ir::ConvAttrs& a,
                               ConvLayout layout) const {
  std::string key = "x";
  for (int64_t d : x) key += " " + std::to_string(d);
  key += " w";
  for (int64_t d : w) key += " " + std::to_string(d);
  for (int64_t v : {a.pads[0], a.pads[1], a.pads[2], a.pads[3], a.stride[0], a.stride[1],
                    a.dilation[0], a.dilation[1], a.groups})
    key += " " + std::to_string(v);
  return key + " p" + std::to_string(int(options_.precision)) + " d" +
         std::to_string(options_.device) + " ws" + std::to_string(options_.workspace_bytes) + " " +
         std::string(to_string(layout));
}

// Every algorithm timed on scratch tensors, fastest first (cudnnFindConvolutionForwardAlgorithmEx,
// as PyTorch's cudnn.benchmark). FP32 keeps only FMA-math results (tensor-op ones would be TF32);
// the other precisions take any math and set the winner's on the descriptor. nullopt when the
// search fails or nothing fits: the caller falls back to the heuristic.
std::optional<Compiler::ConvAlgo> Compiler::measured_conv_algo(
    const std::string& key, cudnnTensorDescriptor_t x_desc, cudnnFilterDescriptor_t w_desc,
    const std::byte* w_dev, cudnnConvolutionDescriptor_t c_desc, cudnnTensorDescriptor_t y_desc,
    const ir::Shape& xs, const ir::Shape& ys) {
  std::lock_guard lock(conv_algo_mutex);
  if (auto it = conv_algo_cache.find(key); it != conv_algo_cache.end()) {
    BRAID_CU(cudnnSetConvolutionMathType(c_desc, it->second.math));
    return ConvAlgo{it->second.algo, it->second.workspace, it->second.us};
  }
  cudnnMathType_t math;
  BRAID_CU(cudnnGetConvolutionMathType(c_desc, &math));
  const int64_t x_elements = ir::num_elements(xs);
  DeviceBuffer fx(size_t(x_elements * esize_)), fy(size_t(ir::num_elements(ys) * esize_)),
      fws(size_t(options_.workspace_bytes));
  BRAID_CU(cudaMemset(fx.get(), 0, size_t(x_elements * esize_)));
  cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  int found = 0;
  if (cudnnFindConvolutionForwardAlgorithmEx(
          cudnn_, x_desc, fx.get(), w_desc, w_dev, c_desc, y_desc, fy.get(),
          CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &found, perf, fws.get(),
          size_t(options_.workspace_bytes)) != CUDNN_STATUS_SUCCESS) {
    cudaGetLastError();  // the search's failure is not the run's
    return std::nullopt;
  }
  int kept = 0;
  for (int i = 0; i < found; ++i)
    if (math != CUDNN_FMA_MATH || perf[i].mathType == CUDNN_FMA_MATH) perf[kept++] = perf[i];
  for (int i = 0; i < kept; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS &&
        int64_t(perf[i].memory) <= options_.workspace_bytes) {
      BRAID_CU(cudnnSetConvolutionMathType(c_desc, perf[i].mathType));
      const double us = double(perf[i].time) * 1e3;
      conv_algo_cache.emplace(key,
                              MeasuredAlgo{perf[i].algo, perf[i].memory, perf[i].mathType, us});
      return ConvAlgo{perf[i].algo, perf[i].memory, us};
    }
  return std::nullopt;
}

Compiler::ConvChain Compiler::match_conv(std::span<const NodeId> ops) const {
  const ir::Node& conv = g_.node(ops[0]);
  ConvChain chain{.used = 1, .y = conv.outputs[0]};
  auto fused = [&](bool (*fits)(ir::OpKind)) {
    if (chain.used >= ops.size() || !single_consumer(chain.y)) return false;
    const ir::Node& next = g_.node(ops[chain.used]);
    if (!fits(next.kind) || next.inputs[0] != chain.y) return false;
    chain.y = next.outputs[0];
    ++chain.used;
    return true;
  };
  fused([](ir::OpKind k) { return k == ir::OpKind::BatchNormalization; });
  if (!unary_of(std::get<ir::ConvAttrs>(conv.attrs).activation)) fused(ir::is_activation);
  return chain;
}

std::optional<double> Compiler::conv_us(const ir::Node& conv, ConvLayout layout) {
  const auto& a = std::get<ir::ConvAttrs>(conv.attrs);
  const ir::Shape& xs = shape(conv.inputs[0]);
  const ir::Shape& ws = shape(conv.inputs[1]);
  const ir::Shape& ys = shape(conv.outputs[0]);
  const cudnnTensorFormat_t f = layout == ConvLayout::kNhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  const auto [w_desc, c_desc] =
      conv_descriptors(ws, a.pads[0], a.pads[1], a.stride, a.dilation, a.groups, f);
  const size_t w_bytes = size_t(ir::num_elements(ws) * esize_);
  DeviceBuffer w(w_bytes);  // the time does not depend on the values
  BRAID_CU(cudaMemset(w.get(), 0, w_bytes));
  const auto algo =
      measured_conv_algo(conv_key(xs, ws, a, layout), tensor4(xs[0], xs[1], xs[2], xs[3], f),
                         w_desc, w.get(), c_desc, tensor4(ys[0], ys[1], ys[2], ys[3], f), xs, ys);
  if (!algo) return std::nullopt;
  return algo->us;
}

double Compiler::transform_us(const ir::Shape& s) {
  std::string key = "t" + std::to_string(int(elem_)) + " d" + std::to_string(options_.device);
  for (int64_t d : s) key += " " + std::to_string(d);
  std::lock_guard lock(conv_algo_mutex);
  if (auto it = transform_us_cache.find(key); it != transform_us_cache.end()) return it->second;
  const size_t bytes = size_t(ir::num_elements(s) * esize_);
  DeviceBuffer from(bytes), to(bytes);
  BRAID_CU(cudaMemset(from.get(), 0, bytes));
  cudnnTensorDescriptor_t nchw = tensor4(s[0], s[1], s[2], s[3]),
                          nhwc = tensor4(s[0], s[1], s[2], s[3], CUDNN_TENSOR_NHWC);
  cudaEvent_t begin, end;
  BRAID_CU(cudaEventCreate(&begin));
  BRAID_CU(cudaEventCreate(&end));
  constexpr int kRuns = 10;
  const float one = 1.0f, zero = 0.0f;
  cudaStream_t stream = nullptr;
  BRAID_CU(cudnnGetStream(cudnn_, &stream));
  cudnnStatus_t st = cudnnTransformTensor(cudnn_, &one, nchw, from.get(), &zero, nhwc, to.get());
  BRAID_CU(cudaEventRecord(begin, stream));
  for (int i = 0; i < kRuns && st == CUDNN_STATUS_SUCCESS; ++i)
    st = cudnnTransformTensor(cudnn_, &one, nchw, from.get(), &zero, nhwc, to.get());
  BRAID_CU(cudaEventRecord(end, stream));
  BRAID_CU(cudaEventSynchronize(end));
  float ms = 0;
  BRAID_CU(cudaEventElapsedTime(&ms, begin, end));
  cudaEventDestroy(begin);
  cudaEventDestroy(end);
  BRAID_CU(st);
  const double us = double(ms) * 1e3 / kRuns;
  transform_us_cache.emplace(key, us);
  return us;
}

void Compiler::choose_conv_layouts(const ir::UnitGraph& units) {
  conv_sites_.clear();
  site_of_conv_.clear();
  if (elem_ == Elem::kF32) return;  // FP32 and TF32: NCHW, as before
  for (size_t u = 0; u < units.num_units(); ++u) {
    const std::span<const NodeId> ops = units.unit(UnitId(u)).ops;
    for (size_t i = 0; i < ops.size(); ++i) {
      const ir::Node& n = g_.node(ops[i]);
      if (n.kind != ir::OpKind::Conv) continue;
      const ConvChain chain = match_conv(ops.subspan(i));
      ConvSite site{.conv = ops[i], .x = n.inputs[0], .y = chain.y};
      const auto& a = std::get<ir::ConvAttrs>(n.attrs);
      const bool symmetric = a.pads[0] == a.pads[2] && a.pads[1] == a.pads[3];
      if (shape(n.inputs[0]).size() == 4 && symmetric &&
          options_.conv_layout != ConvLayoutMode::kNchw) {
        const std::optional<double> nhwc = conv_us(n, ConvLayout::kNhwc);
        site.nhwc_ok = nhwc.has_value();
        if (site.nhwc_ok && options_.conv_layout == ConvLayoutMode::kMeasure) {
          site.nhwc_us = *nhwc;
          site.nchw_us =
              conv_us(n, ConvLayout::kNchw).value_or(std::numeric_limits<double>::infinity());
          site.x_transform_us = transform_us(shape(site.x));
          site.y_transform_us = transform_us(shape(site.y));
        }
      }
      site_of_conv_[index(ops[i])] = conv_sites_.size();
      conv_sites_.push_back(site);
      i += chain.used - 1;
    }
  }
  conv_layouts_ = cuda::choose_conv_layouts(g_, conv_sites_, options_.conv_layout);
  size_t nhwc = 0;
  for (size_t i = 0; i < conv_sites_.size(); ++i) {
    const ConvSite& c = conv_sites_[i];
    nhwc += conv_layouts_.layout[i] == ConvLayout::kNhwc;
    spdlog::debug(
        "cuda: Conv '{}' runs {} (measured NCHW {:.1f} us, NHWC {:.1f} us, transforms "
        "{:.1f} + {:.1f} us)",
        g_.node(c.conv).name, to_string(conv_layouts_.layout[i]), c.nchw_us, c.nhwc_us,
        c.x_transform_us, c.y_transform_us);
  }
  log_layout_summary(g_.name(), to_string(options_.precision), nhwc, conv_sites_.size());
}

Elem storage_elem(ir::DType dtype, Elem floats) {
  switch (dtype) {
    case ir::DType::kInt64:
      return Elem::kI64;
    case ir::DType::kBool:
      return Elem::kBool;
    case ir::DType::kFloat32:
      break;
  }
  return floats;
}
Elem Compiler::storage_of(ValueId v) const {
  return storage_elem(g_.value(v).type.dtype, elem_);
}
std::byte* Compiler::keep(DeviceBuffer b, std::optional<size_t> key) {
  std::byte* p = b.get();
  constants_.push_back(std::move(b));
  if (key) uploaded_[*key] = p;
  return p;
}
std::byte* Compiler::keep_as(std::span<const float> data, Elem as, std::optional<size_t> key) {
  if (as == Elem::kF32) return keep(upload(data), key);
  DeviceBuffer f32 = upload(data);
  DeviceBuffer converted(data.size() * size_t(elem_bytes(as)));
  cuda::convert(Elem::kF32, f32.get(), as, converted.get(), int64_t(data.size()), nullptr);
  BRAID_CU(cudaStreamSynchronize(nullptr));  // before f32 is freed
  return keep(std::move(converted), key);
}
std::span<const float> Compiler::host(ValueId v, const char* what) const {
  BRAID_CHECK(g_.value(v).kind == ir::ValueKind::kParameter && weights_.has(v),
              ErrorCode::kUnsupported, "cuda: ", what, " '", g_.value(v).name,
              "' must be a parameter with data");
  return weights_.data(v);
}
bool Compiler::single_consumer(ValueId v) const {
  return g_.value(v).consumers.size() == 1 && !g_.is_output(v);
}

std::pair<cudnnFilterDescriptor_t, cudnnConvolutionDescriptor_t> Compiler::conv_descriptors(
    const ir::Shape& ws, int64_t pad_h, int64_t pad_w, const std::array<int64_t, 2>& stride,
    const std::array<int64_t, 2>& dilation, int64_t groups, cudnnTensorFormat_t format) {
  cudnnFilterDescriptor_t w_desc;
  BRAID_CU(cudnnCreateFilterDescriptor(&w_desc));
  filter_descs_.push_back(w_desc);
  BRAID_CU(cudnnSetFilter4dDescriptor(w_desc, cudnn_type(elem_), format, int(ws[0]), int(ws[1]),
                                      int(ws[2]), int(ws[3])));
  cudnnConvolutionDescriptor_t c_desc;
  BRAID_CU(cudnnCreateConvolutionDescriptor(&c_desc));
  conv_descs_.push_back(c_desc);
  BRAID_CU(cudnnSetConvolution2dDescriptor(c_desc, int(pad_h), int(pad_w), int(stride[0]),
                                           int(stride[1]), int(dilation[0]), int(dilation[1]),
                                           CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  BRAID_CU(cudnnSetConvolutionGroupCount(c_desc, int(groups)));
  // FP32 FMA unless asked otherwise: outputs stay comparable with the CPU executor. The
  // accumulation stays FP32 in every precision (cuDNN's PSEUDO_HALF/PSEUDO_BFLOAT16 configs).
  const cudnnMathType_t math = options_.precision == Precision::kFp32   ? CUDNN_FMA_MATH
                               : options_.precision == Precision::kTf32 ? CUDNN_DEFAULT_MATH
                                                                        : CUDNN_TENSOR_OP_MATH;
  BRAID_CU(cudnnSetConvolutionMathType(c_desc, math));
  return {w_desc, c_desc};
}

cudnnTensorDescriptor_t Compiler::tensor4(int64_t n, int64_t c, int64_t h, int64_t w,
                                          cudnnTensorFormat_t format) {
  cudnnTensorDescriptor_t d;
  BRAID_CU(cudnnCreateTensorDescriptor(&d));
  tensor_descs_.push_back(d);
  BRAID_CU(
      cudnnSetTensor4dDescriptor(d, format, cudnn_type(elem_), int(n), int(c), int(h), int(w)));
  return d;
}

std::pair<cudnnConvolutionFwdAlgo_t, size_t> Compiler::conv_algo(
    const std::string& key, cudnnTensorDescriptor_t x_desc, cudnnFilterDescriptor_t w_desc,
    const std::byte* w_dev, cudnnConvolutionDescriptor_t c_desc, cudnnTensorDescriptor_t y_desc,
    const ir::Shape& xs, const ir::Shape& ys, const std::string& name) {
  std::optional<std::pair<cudnnConvolutionFwdAlgo_t, size_t>> algo;
  // 16-bit convolutions were timed for their layout: they run the measured algorithm.
  if (options_.measure_conv_algos || !conv_sites_.empty())
    if (const auto m = measured_conv_algo(key, x_desc, w_desc, w_dev, c_desc, y_desc, xs, ys))
      algo = std::pair{m->algo, m->workspace};
  if (!algo) {  // the heuristic's first that fits
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int found = 0;
    BRAID_CU(cudnnGetConvolutionForwardAlgorithm_v7(
        cudnn_, x_desc, w_desc, c_desc, y_desc, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &found, perf));
    algo = first_fitting<cudnnConvolutionFwdAlgoPerf_t, cudnnConvolutionFwdAlgo_t>(
        perf, found, options_.workspace_bytes);
  }
  BRAID_CHECK(algo.has_value(), ErrorCode::kUnsupported, "cuda: no cuDNN algorithm for Conv '",
              name, "' within ", options_.workspace_bytes, " bytes of workspace");
  return *algo;
}

cudnnActivationDescriptor_t Compiler::relu_descriptor() {
  cudnnActivationDescriptor_t act_desc = nullptr;
  BRAID_CU(cudnnCreateActivationDescriptor(&act_desc));
  activation_descs_.push_back(act_desc);
  BRAID_CU(cudnnSetActivationDescriptor(act_desc, CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0.0));
  return act_desc;
}

// The fused call takes its bias in the output's type. In 16-bit storage cuDNN may refuse a
// configuration at run time, so it is tried once here on zeros; refused, the conv runs as
// Forward + our bias/activation kernel.
bool Compiler::fused_relu_runs(cudnnTensorDescriptor_t x_desc, cudnnFilterDescriptor_t w_desc,
                               const std::byte* w_dev, cudnnConvolutionDescriptor_t c_desc,
                               cudnnConvolutionFwdAlgo_t algo, size_t workspace,
                               cudnnTensorDescriptor_t y_desc, cudnnTensorDescriptor_t b_desc,
                               cudnnActivationDescriptor_t act_desc, const ir::Shape& xs,
                               const ir::Shape& ys) {
  if (elem_ == Elem::kF32) return true;
  const size_t x_bytes = size_t(ir::num_elements(xs) * esize_), b_bytes = size_t(ys[1] * esize_);
  DeviceBuffer px(x_bytes), py(size_t(ir::num_elements(ys) * esize_)), pb(b_bytes),
      pws(std::max<size_t>(workspace, 256));
  BRAID_CU(cudaMemset(px.get(), 0, x_bytes));
  BRAID_CU(cudaMemset(pb.get(), 0, b_bytes));
  const float one = 1.0f, zero = 0.0f;
  const cudnnStatus_t st = cudnnConvolutionBiasActivationForward(
      cudnn_, &one, x_desc, px.get(), w_desc, w_dev, c_desc, algo, pws.get(), workspace, &zero,
      y_desc, py.get(), b_desc, pb.get(), act_desc, y_desc, py.get());
  BRAID_CU(cudaDeviceSynchronize());
  return st == CUDNN_STATUS_SUCCESS;
}

std::pair<std::vector<float>, std::vector<float>> Compiler::folded_conv(std::span<const NodeId> ops,
                                                                        size_t used) const {
  const ir::Node& conv = g_.node(ops[0]);
  const int64_t oc = shape(conv.inputs[1])[0];
  const auto given_w = host(conv.inputs[1], "Conv weight");
  std::vector<float> w(given_w.begin(), given_w.end());
  std::vector<float> bias(size_t(oc), 0.0f);
  if (conv.inputs.size() > 2) {
    auto b = host(conv.inputs[2], "Conv bias");
    std::copy(b.begin(), b.end(), bias.begin());
  }
  if (used > 1 && g_.node(ops[1]).kind == ir::OpKind::BatchNormalization) {
    const ir::Node& bn = g_.node(ops[1]);
    const float eps = std::get<ir::BatchNormAttrs>(bn.attrs).epsilon;
    auto scale = host(bn.inputs[1], "BatchNormalization scale");
    auto shift = host(bn.inputs[2], "BatchNormalization bias");
    auto mean = host(bn.inputs[3], "BatchNormalization mean");
    auto var = host(bn.inputs[4], "BatchNormalization variance");
    const int64_t per_oc = int64_t(w.size()) / oc;
    for (int64_t c = 0; c < oc; ++c) {
      const float k = scale[c] / std::sqrt(var[c] + eps);
      for (int64_t i = 0; i < per_oc; ++i) w[c * per_oc + i] *= k;
      bias[c] = (bias[c] - mean[c]) * k + shift[c];
    }
  }
  return {std::move(w), std::move(bias)};
}

std::vector<float> Compiler::to_krsc(std::span<const float> w, const ir::Shape& ws) {
  const int64_t oc = ws[0], c = ws[1], rs = ws[2] * ws[3];
  std::vector<float> krsc(w.size());
  for (int64_t k = 0; k < oc; ++k)
    for (int64_t ci = 0; ci < c; ++ci)
      for (int64_t p = 0; p < rs; ++p) krsc[(k * rs + p) * c + ci] = w[(k * c + ci) * rs + p];
  return krsc;
}

// Conv [BatchNormalization] [activation (ir::is_activation)]: returns how many ops it consumed.
// In the layout choose_conv_layouts chose: NHWC reads x and writes y through scratch where they
// are stored NCHW (cudnnTransformTensor), and takes its filter as [K, R, S, C/groups].
size_t Compiler::compile_conv(std::span<const NodeId> ops, std::vector<Op>& out) {
  const ir::Node& conv = g_.node(ops[0]);
  const auto& a = std::get<ir::ConvAttrs>(conv.attrs);
  const ir::Shape& xs = shape(conv.inputs[0]);
  const ir::Shape& ws = shape(conv.inputs[1]);
  BRAID_CHECK(xs.size() == 4, ErrorCode::kUnsupported, "cuda: Conv '", conv.name, "' is not 2-D");
  const ConvChain chain = match_conv(ops);
  const size_t used = chain.used;
  const ValueId y = chain.y;
  const int64_t oc = ws[0];
  auto [w, bias] = folded_conv(ops, used);
  const size_t next = used > 1 && g_.node(ops[1]).kind == ir::OpKind::BatchNormalization ? 2 : 1;
  std::optional<cuda::UnaryOp> activation = unary_of(a.activation);
  if (next < used) {
    const ir::Node& act = g_.node(ops[next]);
    activation = unary_of(act.kind, act.attrs);
  }
  const ir::Shape& ys = shape(y);
  const bool has_bias = conv.inputs.size() > 2 || used > 1;

  const auto site = site_of_conv_.find(index(ops[0]));
  const bool nhwc =
      site != site_of_conv_.end() && conv_layouts_.layout[site->second] == ConvLayout::kNhwc;
  const ConvLayout layout = nhwc ? ConvLayout::kNhwc : ConvLayout::kNchw;
  const bool x_nhwc = nhwc && conv_layouts_.stored_nhwc(conv.inputs[0]);
  const bool y_nhwc = nhwc && conv_layouts_.stored_nhwc(y);
  const cudnnTensorFormat_t format = nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  if (nhwc) w = to_krsc(w, ws);

  // cuDNN pads symmetrically: asymmetric pads go through an explicit Pad into scratch (NCHW
  // only: choose_conv_layouts keeps those convolutions NCHW).
  const bool symmetric = a.pads[0] == a.pads[2] && a.pads[1] == a.pads[3];
  ir::Shape padded = xs;
  if (!symmetric) {
    padded[2] += a.pads[0] + a.pads[2];
    padded[3] += a.pads[1] + a.pads[3];
  }
  cudnnTensorDescriptor_t x_desc = tensor4(padded[0], padded[1], padded[2], padded[3], format);
  cudnnTensorDescriptor_t y_desc = tensor4(ys[0], ys[1], ys[2], ys[3], format);
  cudnnTensorDescriptor_t b_desc = tensor4(1, oc, 1, 1, format);
  // The NCHW views of an NHWC convolution's x and y where those are stored NCHW.
  cudnnTensorDescriptor_t x_nchw = nhwc && !x_nhwc ? tensor4(xs[0], xs[1], xs[2], xs[3]) : nullptr;
  cudnnTensorDescriptor_t y_nchw = nhwc && !y_nhwc ? tensor4(ys[0], ys[1], ys[2], ys[3]) : nullptr;
  const auto [w_desc, c_desc] =
      conv_descriptors(ws, symmetric ? a.pads[0] : 0, symmetric ? a.pads[1] : 0, a.stride,
                       a.dilation, a.groups, format);
  int n = 0, c = 0, h = 0, wd = 0;
  BRAID_CU(cudnnGetConvolution2dForwardOutputDim(c_desc, x_desc, w_desc, &n, &c, &h, &wd));
  BRAID_CHECK(n == ys[0] && c == ys[1] && h == ys[2] && wd == ys[3], ErrorCode::kInternal,
              "cuda: cuDNN's output shape of Conv '", conv.name, "' differs from the graph's");

  bool fuse_relu = activation && activation->kind == cuda::Unary::kRelu;
  std::byte* w_dev = keep_as(w, elem_);
  const auto algo = conv_algo(conv_key(padded, ws, a, layout), x_desc, w_desc, w_dev, c_desc,
                              y_desc, padded, ys, conv.name);
  const cudnnConvolutionFwdAlgo_t chosen = algo.first;
  const size_t workspace = algo.second;
  // Scratch after the workspace: the padded input (NCHW), or an NHWC convolution's x and y
  // where those are stored NCHW.
  const int64_t workspace_aligned = (int64_t(workspace) + 255) / 256 * 256;
  const int64_t x_scratch_bytes =
      (symmetric && !x_nchw ? 0 : ir::num_elements(padded) * esize_ + 255) / 256 * 256;
  const int64_t y_scratch_bytes = y_nchw ? ir::num_elements(ys) * esize_ : 0;
  scratch_bytes_ = std::max(scratch_bytes_, workspace_aligned + x_scratch_bytes + y_scratch_bytes);

  cudnnActivationDescriptor_t act_desc = fuse_relu ? relu_descriptor() : nullptr;
  if (fuse_relu)
    fuse_relu = fused_relu_runs(x_desc, w_desc, w_dev, c_desc, chosen, workspace, y_desc, b_desc,
                                act_desc, padded, ys);
  // Fused: the bias in elem() for cuDNN; otherwise FP32 for channel_affine.
  std::byte* b_dev = fuse_relu ? keep_as(bias, elem_) : keep_as(bias, Elem::kF32);
  const Elem e = elem_;
  auto x = locate(conv.inputs[0]);
  auto out_ptr = locate(y);
  Strided x_layout = row_major(xs), padded_layout = row_major(padded);
  std::array<int64_t, 4> pads_begin{0, 0, a.pads[0], a.pads[1]};
  const ConvLaunch launch{.x_desc = x_desc,
                          .y_desc = y_desc,
                          .b_desc = b_desc,
                          .w_desc = w_desc,
                          .c_desc = c_desc,
                          .algo = chosen,
                          .workspace = workspace,
                          .w_dev = w_dev,
                          .fuse_relu = fuse_relu,
                          .act_desc = act_desc,
                          .b_dev = fuse_relu || has_bias ? b_dev : nullptr,
                          .activation = activation,
                          .elem = e,
                          // channel_affine's view: [N][C][H*W], or [N*H*W][C][1] in NHWC.
                          .outer = nhwc ? ys[0] * ys[2] * ys[3] : ys[0],
                          .channels = ys[1],
                          .inner = nhwc ? 1 : ys[2] * ys[3]};
  out.push_back([=](const LaneContext& lane, std::byte* arena) {
    const float one = 1.0f, zero = 0.0f;
    const std::byte* src = x(arena);
    std::byte* x_scratch = lane.workspace + workspace_aligned;
    if (!symmetric) {
      cuda::pad(e, x_scratch, padded_layout, src, x_layout, pads_begin.data(), 0.0f, lane.stream);
      src = x_scratch;
    } else if (x_nchw != nullptr) {
      BRAID_CU(cudnnTransformTensor(lane.cudnn, &one, x_nchw, src, &zero, x_desc, x_scratch));
      src = x_scratch;
    }
    std::byte* stored = out_ptr(arena);
    std::byte* dst = y_nchw != nullptr ? x_scratch + x_scratch_bytes : stored;
    launch.run(lane, src, dst);
    if (y_nchw != nullptr)
      BRAID_CU(cudnnTransformTensor(lane.cudnn, &one, y_desc, dst, &zero, y_nchw, stored));
  });
  return used;
}

void Compiler::compile_op(const ir::Node& n, std::vector<Op>& out) {
  switch (n.kind) {
    case ir::OpKind::Conv:
      BRAID_ASSERT(false, "convs are compiled by compile_conv");
      return;
    case ir::OpKind::Relu:
    case ir::OpKind::Sigmoid:
    case ir::OpKind::Tanh:
    case ir::OpKind::Gelu:
    case ir::OpKind::Clip:
    case ir::OpKind::HardSigmoid:
    case ir::OpKind::HardSwish:
      return compile_unary(n, out);
    case ir::OpKind::ReduceMean:
      return compile_reduce_mean(n, out);
    case ir::OpKind::LRN:
      return compile_lrn(n, out);
    case ir::OpKind::Add:
    case ir::OpKind::Mul:
    case ir::OpKind::Sum:
      return compile_binary(n, out);
    case ir::OpKind::MaxPool:
    case ir::OpKind::AveragePool:
      return compile_pool(n, out);
    case ir::OpKind::GlobalAveragePool:
      return compile_global_average_pool(n, out);
    case ir::OpKind::Concat:
      return compile_concat(n, out);
    case ir::OpKind::Split:
      return compile_split(n, out);
    case ir::OpKind::Transpose:
      return compile_transpose(n, out);
    case ir::OpKind::Pad:
      return compile_pad(n, out);
    case ir::OpKind::Reshape:
    case ir::OpKind::Flatten:
    case ir::OpKind::Identity:
      compile_copy(n.inputs[0], n.outputs[0], out);
      return;
    case ir::OpKind::BatchNormalization:
      return compile_batch_norm(n, out);
    case ir::OpKind::LayerNormalization:
      return compile_layer_norm(n, out);
    case ir::OpKind::Softmax:
      return compile_softmax(n, out);
    case ir::OpKind::MatMul:
      compile_matmul(n, out);
      return;
    case ir::OpKind::Gemm:
      compile_gemm(n, out);
      return;
    case ir::OpKind::Erf:
    case ir::OpKind::Sqrt:
      return compile_unary(n, out);
    case ir::OpKind::ConvTranspose:
      return compile_conv_transpose(n, out);
    case ir::OpKind::Resize:
      return compile_resize(n, out);
    case ir::OpKind::Sub:
    case ir::OpKind::Div:
    case ir::OpKind::Pow:
      return compile_binary(n, out);
    case ir::OpKind::Where:
      return compile_where(n, out);
    case ir::OpKind::Expand:
      return compile_expand(n, out);
    case ir::OpKind::Gather:
      return compile_gather(n, out);
    case ir::OpKind::Cast:
      return compile_cast(n, out);
    case ir::OpKind::Equal:
      return compile_equal(n, out);
    case ir::OpKind::Not:
      return compile_not(n, out);
    case ir::OpKind::Slice:
      return compile_slice(n, out);
  }
  BRAID_THROW(ErrorCode::kUnsupported, "cuda: op '", n.name, "' (", ir::to_string(n.kind),
              ") is not supported");
}

// ConvTranspose is the data gradient of the Conv that maps its output back to its input:
// cudnnConvolutionBackwardData with that Conv's pads, strides, dilations and groups. Its filter
// [K = IC, C = OC/groups, R, S] is ONNX's ConvTranspose weight layout as it stands, and dx is
// the output. cuDNN pads symmetrically and needs the forward Conv of dx to give back the input's
// shape (output_padding < stride does; PyTorch's cuDNN ConvTranspose relies on it). Otherwise
// (asymmetric pads, a negative end pad from output_shape, output_padding >= stride) cuDNN
// computes the unpadded output, s * (in - 1) + d * (k - 1) + 1 per axis, into scratch, and a
// crop copies the window starting at the begin pads out (zeros past its end: bias only).
void Compiler::compile_conv_transpose(const ir::Node& n, std::vector<Op>& out) {
  const auto& a = std::get<ir::ConvTransposeAttrs>(n.attrs);
  const ir::Shape& xs = shape(n.inputs[0]);
  const ir::Shape& ws = shape(n.inputs[1]);  // [IC, OC/groups, KH, KW]
  const ir::Shape& ys = shape(n.outputs[0]);
  BRAID_CHECK(xs.size() == 4 && ys.size() == 4, ErrorCode::kUnsupported, "cuda: ConvTranspose '",
              n.name, "' is not 2-D");
  bool direct = a.pads[0] == a.pads[2] && a.pads[1] == a.pads[3];
  ir::Shape full = ys;  // what cuDNN computes
  for (int i = 0; i < 2; ++i) {
    const int64_t span = a.dilation[i] * (ws[2 + i] - 1) + 1;
    const int64_t padded = ys[2 + i] + 2 * a.pads[i] - span;
    direct = direct && padded >= 0 && padded / a.stride[i] + 1 == xs[2 + i];
    full[2 + i] = a.stride[i] * (xs[2 + i] - 1) + span;
  }
  if (direct) full = ys;

  cudnnTensorDescriptor_t x_desc = tensor4(xs[0], xs[1], xs[2], xs[3]);  // the forward Conv's dy
  cudnnTensorDescriptor_t full_desc = tensor4(full[0], full[1], full[2], full[3]);  // its dx
  const auto [w_desc, c_desc] = conv_descriptors(ws, direct ? a.pads[0] : 0, direct ? a.pads[1] : 0,
                                                 a.stride, a.dilation, a.groups);
  int dn = 0, dc = 0, dh = 0, dw = 0;
  BRAID_CU(cudnnGetConvolution2dForwardOutputDim(c_desc, full_desc, w_desc, &dn, &dc, &dh, &dw));
  BRAID_CHECK(dn == xs[0] && dc == xs[1] && dh == xs[2] && dw == xs[3], ErrorCode::kInternal,
              "cuda: the Conv behind ConvTranspose '", n.name, "' does not give back its input ",
              ir::to_string(xs));

  cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
  int found = 0;
  BRAID_CU(cudnnGetConvolutionBackwardDataAlgorithm_v7(cudnn_, w_desc, x_desc, c_desc, full_desc,
                                                       CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
                                                       &found, perf));
  const auto algo = first_fitting<cudnnConvolutionBwdDataAlgoPerf_t, cudnnConvolutionBwdDataAlgo_t>(
      perf, found, options_.workspace_bytes);
  BRAID_CHECK(algo.has_value(), ErrorCode::kUnsupported,
              "cuda: no cuDNN algorithm for ConvTranspose '", n.name, "' within ",
              options_.workspace_bytes, " bytes of workspace");
  const auto chosen = algo->first;
  const size_t workspace = algo->second;
  const int64_t workspace_aligned = (int64_t(workspace) + 255) / 256 * 256;
  const int64_t full_bytes = direct ? 0 : ir::num_elements(full) * esize_;
  scratch_bytes_ = std::max(scratch_bytes_, workspace_aligned + full_bytes);

  auto x = locate(n.inputs[0]);
  auto w = locate(n.inputs[1]);
  const float* bias = n.inputs.size() > 2 ? keep_f32(host(n.inputs[2], "ConvTranspose bias"))
                                          : nullptr;  // FP32 for channel_affine
  auto y = locate(n.outputs[0]);
  const Elem e = elem_;
  const Strided y_layout = row_major(ys), full_layout = row_major(full);
  const std::array<int64_t, 4> crop_begin{0, 0, -a.pads[0], -a.pads[1]};
  const int64_t batch = ys[0], channels = ys[1], inner = ys[2] * ys[3];
  out.push_back([=](const LaneContext& lane, std::byte* arena) {
    std::byte* dst = y(arena);
    std::byte* dx = direct ? dst : lane.workspace + workspace_aligned;
    const float one = 1.0f, zero = 0.0f;
    BRAID_CU(cudnnConvolutionBackwardData(lane.cudnn, &one, w_desc, w(arena), x_desc, x(arena),
                                          c_desc, chosen, lane.workspace, workspace, &zero,
                                          full_desc, dx));
    if (!direct) cuda::pad(e, dst, y_layout, dx, full_layout, crop_begin.data(), 0.0f, lane.stream);
    if (bias != nullptr)
      cuda::channel_affine(e, dst, dst, nullptr, bias, batch, channels, inner, cuda::Unary::kCopy,
                           false, lane.stream);
  });
}

// Resize from ir::resize_taps' tables, uploaded once: identity axes need none.
void Compiler::compile_resize(const ir::Node& n, std::vector<Op>& out) {
  const auto& a = std::get<ir::ResizeAttrs>(n.attrs);
  const ir::Shape& xs = shape(n.inputs[0]);
  const std::vector<ir::ResizeTaps> taps = ir::resize_taps(a, xs);
  const Strided in_layout = row_major(xs), out_layout = row_major(shape(n.outputs[0]));
  cuda::ResizeTables t;
  t.rank = out_layout.rank;
  t.extrapolation_value = a.extrapolation_value;
  for (int d = 0; d < t.rank; ++d) {
    t.out_dims[d] = out_layout.dims[d];
    t.in_strides[d] = in_layout.strides[d];
  }
  for (size_t d = 0; d < taps.size(); ++d) {
    const ir::ResizeTaps& axis = taps[d];
    if (!axis.outside.empty())
      t.outside[d] = reinterpret_cast<const uint8_t*>(keep(upload_array(axis.outside)));
    if (axis.identity) continue;
    t.begin[d] = reinterpret_cast<const int64_t*>(keep(upload_array(axis.begin)));
    t.index[d] = reinterpret_cast<const int64_t*>(keep(upload_array(axis.index)));
    t.weight[d] = keep_f32(std::vector<float>(axis.weight.begin(), axis.weight.end()));
  }
  auto x = locate(n.inputs[0]);
  auto y = locate(n.outputs[0]);
  const Elem e = elem_;
  out.push_back([=](const LaneContext& l, std::byte* arena) {
    cuda::resize(e, x(arena), y(arena), t, l.stream);
  });
}

void Compiler::compile_unary(const ir::Node& n, std::vector<Op>& out) {
  const ir::Shape& ys = shape(n.outputs[0]);
  auto y = locate(n.outputs[0]);
  auto x = locate(n.inputs[0]);
  const cuda::UnaryOp op = unary_of(n.kind, n.attrs);
  const int64_t count = ir::num_elements(ys);
  const Elem e = elem_;
  out.push_back([=](const LaneContext& l, std::byte* arena) {
    cuda::unary(e, op, x(arena), y(arena), count, l.stream);
  });
}

void Compiler::compile_binary(const ir::Node& n, std::vector<Op>& out) {
  const ir::Shape& ys = shape(n.outputs[0]);
  auto y = locate(n.outputs[0]);
  const cuda::Binary op = n.kind == ir::OpKind::Mul   ? cuda::Binary::kMul
                          : n.kind == ir::OpKind::Sub ? cuda::Binary::kSub
                          : n.kind == ir::OpKind::Div ? cuda::Binary::kDiv
                          : n.kind == ir::OpKind::Pow ? cuda::Binary::kPow
                                                      : cuda::Binary::kAdd;
  if (n.inputs.size() == 1) {
    compile_copy(n.inputs[0], n.outputs[0], out);
    return;
  }
  std::vector<Locator> in;
  std::vector<Strided> layouts;
  for (ValueId v : n.inputs) {
    in.push_back(locate(v));
    layouts.push_back(broadcast_to(shape(v), ys));
  }
  const Strided own = row_major(ys);
  const Elem e = elem_;
  out.push_back([=](const LaneContext& l, std::byte* arena) {
    cuda::binary(e, op, in[0](arena), layouts[0], in[1](arena), layouts[1], y(arena), l.stream);
    for (size_t k = 2; k < in.size(); ++k)
      cuda::binary(e, op, y(arena), own, in[k](arena), layouts[k], y(arena), l.stream);
  });
}

void Compiler::compile_pool(const ir::Node& n, std::vector<Op>& out) {
  const ir::Shape& ys = shape(n.outputs[0]);
  auto y = locate(n.outputs[0]);
  const auto& a = std::get<ir::PoolAttrs>(n.attrs);
  const ir::Shape& xs = shape(n.inputs[0]);
  BRAID_CHECK(xs.size() == 4, ErrorCode::kUnsupported, "cuda: pooling '", n.name, "' is not 2-D");
  cuda::Pool2d p{.planes = xs[0] * xs[1],
                 .in_h = xs[2],
                 .in_w = xs[3],
                 .out_h = ys[2],
                 .out_w = ys[3],
                 .kernel_h = a.kernel[0],
                 .kernel_w = a.kernel[1],
                 .stride_h = a.stride[0],
                 .stride_w = a.stride[1],
                 .pad_top = a.pads[0],
                 .pad_left = a.pads[1],
                 .pad_bottom = a.pads[2],
                 .pad_right = a.pads[3],
                 .is_max = n.kind == ir::OpKind::MaxPool,
                 .count_include_pad = a.count_include_pad};
  auto x = locate(n.inputs[0]);
  const Elem e = elem_;
  out.push_back([=](const LaneContext& l, std::byte* arena) {
    cuda::pool2d(e, x(arena), y(arena), p, l.stream);
  });
}

// LRN across channels by our kernel, ONNX's window for every size (oneDNN's is symmetric, so the
// CPU executor refuses even sizes; this one computes them as the reference executor does).
void Compiler::compile_lrn(const ir::Node& n, std::vector<Op>& out) {
  const auto& a = std::get<ir::LrnAttrs>(n.attrs);
  const ir::Shape& xs = shape(n.inputs[0]);
  BRAID_CHECK(xs.size() == 4, ErrorCode::kUnsupported, "cuda: LRN '", n.name, "' is not 2-D");
  const cuda::Lrn p{.batch = xs[0],
                    .channels = xs[1],
                    .plane = xs[2] * xs[3],
                    .size = a.size,
                    .alpha = a.alpha,
                    .beta = a.beta,
                    .bias = a.bias};
  auto x = locate(n.inputs[0]);
  auto y = locate(n.outputs[0]);
  const Elem e = elem_;
  out.push_back([=](const LaneContext& l, std::byte* arena) {
    cuda::lrn(e, x(arena), y(arena), p, l.stream);
  });
}

void Compiler::compile_global_average_pool(const ir::Node& n, std::vector<Op>& out) {
  auto y = locate(n.outputs[0]);
  const ir::Shape& xs = shape(n.inputs[0]);
  const int64_t rows = xs[0] * xs[1], inner = ir::num_elements(xs) / std::max<int64_t>(rows, 1);
  auto x = locate(n.inputs[0]);
  const Elem e = elem_;
  out.push_back([=](const LaneContext& l, std::byte* arena) {
    cuda::mean_rows(e, x(arena), y(arena), rows, inner, l.stream);
  });
}

// ReduceMean over the trailing axes (MNASNet's mean over H and W): rows of contiguous
// elements, like GlobalAveragePool. Other axes would need a strided reduction kernel.
void Compiler::compile_reduce_mean(const ir::Node& n, std::vector<Op>& out) {
  const ir::Shape& xs = shape(n.inputs[0]);
  const std::vector<int64_t>& axes = std::get<ir::ReduceAttrs>(n.attrs).axes;
  const auto first = static_cast<int64_t>(xs.size() - axes.size());
  for (size_t i = 0; i < axes.size(); ++i)
    BRAID_CHECK(axes[i] == first + static_cast<int64_t>(i), ErrorCode::kUnsupported,
                "cuda: ReduceMean '", n.name,
                "' reduces axes other than the trailing ones; the CUDA executor supports only "
                "those");
  const int64_t inner = ir::num_elements(ir::Shape(xs.begin() + first, xs.end()));
  const int64_t rows = ir::num_elements(xs) / inner;
  auto y = locate(n.outputs[0]);
  auto x = locate(n.inputs[0]);
  const Elem e = elem_;
  out.push_back([=](const LaneContext& l, std::byte* arena) {
    cuda::mean_rows(e, x(arena), y(arena), rows, inner, l.stream);
  });
}

void Compiler::compile_concat(const ir::Node& n, std::vector<Op>& out) {
  const ir::Shape& ys = shape(n.outputs[0]);
  auto y = locate(n.outputs[0]);
  const ir::Shape& os = ys;
  const int64_t axis = normalize(std::get<ir::AxisAttrs>(n.attrs).axis, os.size());
  const Strided out_layout = row_major(os);
  int64_t at = 0;
  for (ValueId v : n.inputs) {
    Strided dst = out_layout, src = row_major(shape(v));
    for (int d = 0; d < dst.rank; ++d) dst.dims[d] = src.dims[d];
    const Elem e = storage_of(n.outputs[0]);
    const int64_t offset = at * out_layout.strides[axis] * elem_bytes(e);
    auto x = locate(v);
    out.push_back([=](const LaneContext& l, std::byte* arena) {
      cuda::strided_copy(e, y(arena) + offset, dst, x(arena), src, l.stream);
    });
    at += shape(v)[axis];
  }
}

void Compiler::compile_split(const ir::Node& n, std::vector<Op>& out) {
  const auto& a = std::get<ir::SplitAttrs>(n.attrs);
  const ir::Shape& xs = shape(n.inputs[0]);
  const int64_t axis = normalize(a.axis, xs.size());
  const Strided in_layout = row_major(xs);
  auto x = locate(n.inputs[0]);
  int64_t at = 0;
  for (ValueId o : n.outputs) {
    Strided dst = row_major(shape(o)), src = in_layout;
    for (int d = 0; d < src.rank; ++d) src.dims[d] = dst.dims[d];
    const Elem e = storage_of(o);
    const int64_t offset = at * in_layout.strides[axis] * elem_bytes(e);
    auto yo = locate(o);
    out.push_back([=](const LaneContext& l, std::byte* arena) {
      cuda::strided_copy(e, yo(arena), dst, x(arena) + offset, src, l.stream);
    });
    at += shape(o)[axis];
  }
}

void Compiler::compile_transpose(const ir::Node& n, std::vector<Op>& out) {
  const ir::Shape& ys = shape(n.outputs[0]);
  auto y = locate(n.outputs[0]);
  const ir::Shape& xs = shape(n.inputs[0]);
  std::vector<int64_t> perm = std::get<ir::TransposeAttrs>(n.attrs).perm;
  if (perm.empty())
    for (int64_t i = int64_t(xs.size()) - 1; i >= 0; --i) perm.push_back(i);
  const Strided in_layout = row_major(xs);
  const Strided dst = row_major(ys);
  Strided src = dst;
  for (int d = 0; d < src.rank; ++d) src.strides[d] = in_layout.strides[perm[d]];
  auto x = locate(n.inputs[0]);
  const Elem e = storage_of(n.outputs[0]);
  out.push_back([=](const LaneContext& l, std::byte* arena) {
    cuda::strided_copy(e, y(arena), dst, x(arena), src, l.stream);
  });
}

void Compiler::compile_pad(const ir::Node& n, std::vector<Op>& out) {
  const ir::Shape& ys = shape(n.outputs[0]);
  auto y = locate(n.outputs[0]);
  const auto& a = std::get<ir::PadAttrs>(n.attrs);
  const Strided y_layout = row_major(ys), x_layout = row_major(shape(n.inputs[0]));
  std::array<int64_t, cuda::kMaxRank> begin{};
  for (size_t d = 0; d < ys.size(); ++d) begin[d] = a.pads[d];
  const float value = a.value;
  auto x = locate(n.inputs[0]);
  const Elem e = elem_;
  out.push_back([=](const LaneContext& l, std::byte* arena) {
    cuda::pad(e, y(arena), y_layout, x(arena), x_layout, begin.data(), value, l.stream);
  });
}

void Compiler::compile_batch_norm(const ir::Node& n, std::vector<Op>& out) {
  const ir::Shape& ys = shape(n.outputs[0]);
  auto y = locate(n.outputs[0]);
  const float eps = std::get<ir::BatchNormAttrs>(n.attrs).epsilon;
  auto scale = host(n.inputs[1], "BatchNormalization scale");
  auto shift = host(n.inputs[2], "BatchNormalization bias");
  auto mean = host(n.inputs[3], "BatchNormalization mean");
  auto var = host(n.inputs[4], "BatchNormalization variance");
  const int64_t channels = ys[1];
  std::vector<float> k(channels), b(channels);
  for (int64_t c = 0; c < channels; ++c) {
    k[c] = scale[c] / std::sqrt(var[c] + eps);
    b[c] = shift[c] - mean[c] * k[c];
  }
  const float* k_dev = keep_f32(k);
  const float* b_dev = keep_f32(b);
  const int64_t inner = ir::num_elements(ys) / (ys[0] * channels), outer = ys[0];
  auto x = locate(n.inputs[0]);
  const Elem e = elem_;
  out.push_back([=](const LaneContext& l, std::byte* arena) {
    cuda::channel_affine(e, x(arena), y(arena), k_dev, b_dev, outer, channels, inner,
                         cuda::Unary::kCopy, false, l.stream);
  });
}

void Compiler::compile_layer_norm(const ir::Node& n, std::vector<Op>& out) {
  const ir::Shape& ys = shape(n.outputs[0]);
  auto y = locate(n.outputs[0]);
  const auto& a = std::get<ir::LayerNormAttrs>(n.attrs);
  const int64_t axis = normalize(a.axis, ys.size());
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < ys.size(); ++d) (int64_t(d) < axis ? outer : inner) *= ys[d];
  auto x = locate(n.inputs[0]);
  auto scale = locate(n.inputs[1]);
  std::optional<Locator> bias;
  if (n.inputs.size() > 2) bias = locate(n.inputs[2]);
  const float eps = a.epsilon;
  const Elem e = elem_;
  out.push_back([=](const LaneContext& l, std::byte* arena) {
    cuda::layer_norm(e, x(arena), scale(arena), bias ? (*bias)(arena) : nullptr, y(arena), outer,
                     inner, eps, l.stream);
  });
}

void Compiler::compile_softmax(const ir::Node& n, std::vector<Op>& out) {
  const ir::Shape& ys = shape(n.outputs[0]);
  auto y = locate(n.outputs[0]);
  const int64_t axis = normalize(std::get<ir::AxisAttrs>(n.attrs).axis, ys.size());
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < ys.size(); ++d)
    if (int64_t(d) < axis)
      outer *= ys[d];
    else if (int64_t(d) > axis)
      inner *= ys[d];
  cudnnTensorDescriptor_t desc = tensor4(outer, ys[axis], inner, 1);
  auto x = locate(n.inputs[0]);
  out.push_back([=](const LaneContext& l, std::byte* arena) {
    const float one = 1.0f, zero = 0.0f;
    BRAID_CU(cudnnSoftmaxForward(l.cudnn, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_CHANNEL, &one,
                                 desc, x(arena), &zero, desc, y(arena)));
  });
}

void Compiler::compile_copy(ValueId from, ValueId to, std::vector<Op>& out) {
  auto x = locate(from);
  auto y = locate(to);
  const size_t bytes = size_t(g_.value(to).type.elements() * elem_bytes(storage_of(to)));
  out.push_back([=](const LaneContext& l, std::byte* arena) {
    if (x(arena) != y(arena))  // views share storage: nothing to copy
      BRAID_CU(cudaMemcpyAsync(y(arena), x(arena), bytes, cudaMemcpyDeviceToDevice, l.stream));
  });
}

// Row-major C[M,N] = A[M,K] B[K,N] is column-major C^T = B^T A^T: cuBLAS gets B first.
void Compiler::compile_matmul(const ir::Node& n, std::vector<Op>& out) {
  const ir::Shape& as = shape(n.inputs[0]);
  const ir::Shape& bs = shape(n.inputs[1]);
  const ir::Shape& ys = shape(n.outputs[0]);
  BRAID_CHECK(as.size() >= 2 && bs.size() >= 2, ErrorCode::kUnsupported, "cuda: MatMul '", n.name,
              "' with a 1-D operand");
  const int64_t m = ys[ys.size() - 2], nn = ys.back(), k = as.back();
  const ir::Shape batch(ys.begin(), ys.end() - 2);
  const ir::Shape a_batch(as.begin(), as.end() - 2), b_batch(bs.begin(), bs.end() - 2);
  const int64_t batches = ir::num_elements(batch);
  // Per output matrix: the A and B matrices it reads (broadcast batch dims).
  const Strided a_idx = broadcast_to(a_batch, batch), b_idx = broadcast_to(b_batch, batch);
  std::vector<std::pair<int64_t, int64_t>> pairs;
  for (int64_t t = 0; t < batches; ++t) {
    int64_t rest = t, ao = 0, bo = 0;
    for (int d = a_idx.rank - 1; d >= 0 && !batch.empty(); --d) {
      const int64_t at = rest % a_idx.dims[d];
      rest /= a_idx.dims[d];
      ao += at * a_idx.strides[d];
      bo += at * b_idx.strides[d];
    }
    pairs.emplace_back(ao * m * k, bo * k * nn);
  }
  auto a = locate(n.inputs[0]);
  auto b = locate(n.inputs[1]);
  auto y = locate(n.outputs[0]);
  const int64_t es = esize_;
  int64_t alignment =
      std::min({alignment_of(n.inputs[0]), alignment_of(n.inputs[1]), alignment_of(n.outputs[0])});
  for (size_t t = 0; t < pairs.size(); ++t)
    for (int64_t offset : {pairs[t].first * es, pairs[t].second * es, int64_t(t) * m * nn * es})
      alignment = std::min(alignment, power_of_two_alignment(uint64_t(offset)));
  // Column-major C^T [nn, m] = B^T A^T: B first, every leading dimension a row length.
  const auto call = std::make_shared<const GemmCall>(
      cublas_lt(), elem_, options_.precision,
      GemmShape{.m = nn, .n = m, .k = k, .lda = nn, .ldb = k, .ldc = nn}, alignment);
  out.push_back([=](const LaneContext& l, std::byte* arena) {
    const std::byte *pa = a(arena), *pb = b(arena);
    std::byte* py = y(arena);
    for (size_t t = 0; t < pairs.size(); ++t)
      call->run(l, 1.0f, pb + pairs[t].second * es, pa + pairs[t].first * es, 0.0f,
                py + int64_t(t) * m * nn * es);
  });
}

void Compiler::compile_gemm(const ir::Node& n, std::vector<Op>& out) {
  const auto& attrs = std::get<ir::GemmAttrs>(n.attrs);
  const ir::Shape& as = shape(n.inputs[0]);
  const ir::Shape& ys = shape(n.outputs[0]);
  const int64_t m = ys[0], nn = ys[1], k = attrs.trans_a ? as[0] : as[1];
  auto a = locate(n.inputs[0]);
  auto b = locate(n.inputs[1]);
  auto y = locate(n.outputs[0]);
  std::optional<Locator> c;
  Strided c_layout, y_layout = row_major(ys);
  if (n.inputs.size() > 2) {
    c = locate(n.inputs[2]);
    c_layout = broadcast_to(shape(n.inputs[2]), ys);
  }
  const float alpha = attrs.alpha, beta = c ? attrs.beta : 0.0f;
  const bool ta = attrs.trans_a, tb = attrs.trans_b;
  const Elem e = elem_;
  // Row-major Y = op(A) op(B) is column-major Y^T = op(B)^T op(A)^T: B first, with B's
  // transposition, and the row lengths as leading dimensions. C, broadcast into Y first, is
  // accumulated with beta (no cuBLASLt bias epilogue: C may broadcast along either axis).
  const auto call = std::make_shared<const GemmCall>(
      cublas_lt(), elem_, options_.precision,
      GemmShape{.trans_a = tb,
                .trans_b = ta,
                .m = nn,
                .n = m,
                .k = k,
                .lda = tb ? k : nn,
                .ldb = ta ? m : k,
                .ldc = nn},
      std::min({alignment_of(n.inputs[0]), alignment_of(n.inputs[1]), alignment_of(n.outputs[0])}));
  out.push_back([=](const LaneContext& l, std::byte* arena) {
    std::byte* py = y(arena);
    if (c) cuda::strided_copy(e, py, y_layout, (*c)(arena), c_layout, l.stream);
    call->run(l, alpha, b(arena), a(arena), beta, py);
  });
}

// Gather along an axis; the indices are the second input (int64 in the arena) or the node's
// constant ones (uploaded once).
void Compiler::compile_gather(const ir::Node& n, std::vector<Op>& out) {
  const auto& a = std::get<ir::GatherAttrs>(n.attrs);
  const ir::Shape& xs = shape(n.inputs[0]);
  const int64_t axis = normalize(a.axis, xs.size());
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= xs[d];
  for (size_t d = size_t(axis) + 1; d < xs.size(); ++d) inner *= xs[d];
  const int64_t axis_dim = xs[axis];
  auto x = locate(n.inputs[0]);
  auto y = locate(n.outputs[0]);
  Locator indices;
  int64_t num_indices = 0;
  if (n.inputs.size() > 1) {
    BRAID_CHECK(g_.value(n.inputs[1]).type.dtype == ir::DType::kInt64, ErrorCode::kUnsupported,
                "cuda: Gather '", n.name, "' needs int64 indices");
    indices = locate(n.inputs[1]);
    num_indices = g_.value(n.inputs[1]).type.elements();
  } else {
    DeviceBuffer b(std::max<size_t>(a.indices.size(), 1) * sizeof(int64_t));
    BRAID_CU(cudaMemcpy(b.get(), a.indices.data(), a.indices.size() * sizeof(int64_t),
                        cudaMemcpyHostToDevice));
    std::byte* p = keep(std::move(b));
    indices = [p](std::byte*) { return p; };
    num_indices = int64_t(a.indices.size());
  }
  const Elem e = storage_of(n.outputs[0]);
  out.push_back([=](const LaneContext& l, std::byte* arena) {
    cuda::gather(e, x(arena), outer, axis_dim, inner,
                 reinterpret_cast<const int64_t*>(indices(arena)), num_indices, y(arena), l.stream);
  });
}

void Compiler::compile_where(const ir::Node& n, std::vector<Op>& out) {
  const ir::Shape& ys = shape(n.outputs[0]);
  auto c = locate(n.inputs[0]), a = locate(n.inputs[1]), b = locate(n.inputs[2]);
  auto y = locate(n.outputs[0]);
  const Strided cl = broadcast_to(shape(n.inputs[0]), ys),
                al = broadcast_to(shape(n.inputs[1]), ys),
                bl = broadcast_to(shape(n.inputs[2]), ys);
  const Elem e = storage_of(n.outputs[0]);
  out.push_back([=](const LaneContext& l, std::byte* arena) {
    cuda::where(e, c(arena), cl, a(arena), al, b(arena), bl, y(arena), l.stream);
  });
}

void Compiler::compile_equal(const ir::Node& n, std::vector<Op>& out) {
  const ir::Shape& ys = shape(n.outputs[0]);
  auto a = locate(n.inputs[0]), b = locate(n.inputs[1]);
  auto y = locate(n.outputs[0]);
  const Strided al = broadcast_to(shape(n.inputs[0]), ys),
                bl = broadcast_to(shape(n.inputs[1]), ys);
  const Elem e = storage_of(n.inputs[0]);
  BRAID_CHECK(e == storage_of(n.inputs[1]), ErrorCode::kInvalidModel, "cuda: Equal '", n.name,
              "' compares tensors of two types");
  out.push_back([=](const LaneContext& l, std::byte* arena) {
    cuda::equal(e, a(arena), al, b(arena), bl, y(arena), l.stream);
  });
}

void Compiler::compile_not(const ir::Node& n, std::vector<Op>& out) {
  auto x = locate(n.inputs[0]);
  auto y = locate(n.outputs[0]);
  const int64_t count = g_.value(n.outputs[0]).type.elements();
  out.push_back([=](const LaneContext& l, std::byte* arena) {
    cuda::logical_not(x(arena), y(arena), count, l.stream);
  });
}

// Cast between float32 (stored in the plan's precision), int64 and bool. A cast to the type a
// value is already stored in is a copy.
void Compiler::compile_cast(const ir::Node& n, std::vector<Op>& out) {
  const Elem from = storage_of(n.inputs[0]), to = storage_of(n.outputs[0]);
  if (from == to) {
    compile_copy(n.inputs[0], n.outputs[0], out);
    return;
  }
  auto x = locate(n.inputs[0]);
  auto y = locate(n.outputs[0]);
  const int64_t count = g_.value(n.outputs[0]).type.elements();
  out.push_back([=](const LaneContext& l, std::byte* arena) {
    cuda::convert(from, x(arena), to, y(arena), count, l.stream);
  });
}

// Expand: the input read over the output's dims with numpy broadcasting.
void Compiler::compile_expand(const ir::Node& n, std::vector<Op>& out) {
  const ir::Shape& ys = shape(n.outputs[0]);
  const Strided dst = row_major(ys), src = broadcast_to(shape(n.inputs[0]), ys);
  auto x = locate(n.inputs[0]);
  auto y = locate(n.outputs[0]);
  const Elem e = storage_of(n.outputs[0]);
  out.push_back([=](const LaneContext& l, std::byte* arena) {
    cuda::strided_copy(e, y(arena), dst, x(arena), src, l.stream);
  });
}

// Slice: element k of each dim reads start + k * step, so the source is the input at the starts'
// offset with strides multiplied by the steps (negative steps walk backwards).
void Compiler::compile_slice(const ir::Node& n, std::vector<Op>& out) {
  const ir::Shape& xs = shape(n.inputs[0]);
  const std::vector<ir::SliceDim> dims =
      ir::slice_dims(std::get<ir::SliceAttrs>(n.attrs), xs, n.name);
  const Strided in = row_major(xs), dst = row_major(shape(n.outputs[0]));
  Strided src = dst;
  int64_t base = 0;
  for (int d = 0; d < in.rank && size_t(d) < dims.size(); ++d) {
    src.strides[d] = in.strides[d] * dims[d].step;
    base += dims[d].start * in.strides[d];
  }
  const Elem e = storage_of(n.outputs[0]);
  const int64_t base_bytes = base * elem_bytes(e);
  auto x = locate(n.inputs[0]);
  auto y = locate(n.outputs[0]);
  out.push_back([=](const LaneContext& l, std::byte* arena) {
    cuda::strided_copy(e, y(arena), dst, x(arena) + base_bytes, src, l.stream);
  });
}

CompiledModel::CompiledModel(const ir::Graph& graph, const ir::Weights& weights,
                             const ir::UnitGraph& units, const sched::ExecutionPlan& plan,
                             const CudaExecutorOptions& options,
                             const MemoryPlanOptions& memory_options)
    : memory(plan_memory(graph, units, plan, sized_by_storage(graph, options, memory_options))) {
  BRAID_CU(cudaSetDevice(options.device));
  // A handle for choosing algorithms only: the lanes run with their own.
  cudnnHandle_t cudnn;
  BRAID_CU(cudnnCreate(&cudnn));
  try {
    compiler = std::make_unique<Compiler>(graph, weights, memory, options, cudnn);
    compiler->choose_conv_layouts(units);
    unit_ops.resize(units.num_units());
    for (size_t u = 0; u < units.num_units(); ++u)
      unit_ops[u] = compiler->compile_unit(units.unit(UnitId(u)).ops);
    // Operator merges: one convolution each where the units fit, on one block (the first unit
    // writes the others' outputs, so they must not be split by a block-by-block run).
    for (const std::vector<UnitId>& merge : plan.merges) {
      std::string why;
      std::vector<std::vector<NodeId>> ops;
      for (UnitId u : merge) {
        const auto unit_ops_of = units.unit(u).ops;
        ops.emplace_back(unit_ops_of.begin(), unit_ops_of.end());
        if (plan.block_of_unit[index(u)] != plan.block_of_unit[index(merge[0])])
          why = "its units lie in different blocks";
      }
      std::vector<Op> merged;
      if (merge.size() >= 2 && why.empty()) merged = compiler->compile_merge(ops, &why);
      if (merged.empty() && merge.size() >= 2)
        spdlog::warn("cuda: operator merge of '{}' runs its {} convs one after another: {}",
                     units.unit(merge[0]).name, merge.size(), why);
      merge_ops.push_back(std::move(merged));
    }
  } catch (...) {
    cudnnDestroy(cudnn);
    throw;
  }
  cudnnDestroy(cudnn);
}

const std::vector<Op>& CompiledModel::ops_of_launch(const sched::LaunchStep& launch,
                                                    const sched::ExecutionPlan& plan) const {
  static const std::vector<Op> kNothing;
  if (launch.merge >= 0 && !merge_ops[size_t(launch.merge)].empty())
    return plan.merges[size_t(launch.merge)].front() == launch.unit
               ? merge_ops[size_t(launch.merge)]
               : kNothing;
  return unit_ops[index(launch.unit)];
}

}  // namespace braid::exec::cuda
