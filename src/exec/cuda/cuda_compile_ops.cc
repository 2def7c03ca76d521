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

#include "exec/cuda/cuda_compiler_impl.h"
#include "exec/cuda/cuda_kernels.h"
#include "exec/cuda/gemm_plan.h"
#include "ir/resize.h"
#include "ir/shape_inference.h"

// The CUDA compiler's ops other than convolutions: element-wise, pooling, normalization,
// data movement, GEMMs on cuBLASLt and the int64/bool index ops.
namespace braid::exec::cuda {
namespace {

// Column-major C[m,n] = alpha op(A) op(B) + beta C through cuBLAS: SGEMM in FP32 (the handle's
// math mode says whether TF32 tensor cores may be used), GemmEx with FP32 accumulation for
// 16-bit storage; their strided-batched forms for a batch. GemmCall's fallback.
void gemm(cublasHandle_t h, Elem e, const GemmShape& s, float alpha, const std::byte* a,
          const std::byte* b, float beta, std::byte* c) {
  const cublasOperation_t ta = s.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t tb = s.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int m = int(s.m), n = int(s.n), k = int(s.k), lda = int(s.lda), ldb = int(s.ldb),
            ldc = int(s.ldc);
  const auto* fa = reinterpret_cast<const float*>(a);
  const auto* fb = reinterpret_cast<const float*>(b);
  auto* fc = reinterpret_cast<float*>(c);
  const cudaDataType_t t = cuda_type(e);
  if (s.batch == 1 && e == Elem::kF32) {
    BRAID_CU(cublasSgemm(h, ta, tb, m, n, k, &alpha, fa, lda, fb, ldb, &beta, fc, ldc));
  } else if (s.batch == 1) {
    BRAID_CU(cublasGemmEx(h, ta, tb, m, n, k, &alpha, a, t, lda, b, t, ldb, &beta, c, t, ldc,
                          CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  } else if (e == Elem::kF32) {
    BRAID_CU(cublasSgemmStridedBatched(h, ta, tb, m, n, k, &alpha, fa, lda, s.stride_a, fb, ldb,
                                       s.stride_b, &beta, fc, ldc, s.stride_c, int(s.batch)));
  } else {
    BRAID_CU(cublasGemmStridedBatchedEx(h, ta, tb, m, n, k, &alpha, a, t, lda, s.stride_a, b, t,
                                        ldb, s.stride_b, &beta, c, t, ldc, s.stride_c, int(s.batch),
                                        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  }
}

// What cuBLASLt adds to a GEMM's D before storing it (gemm_epilogue.h): CUBLASLT_EPILOGUE_DEFAULT
// (nothing), or a bias vector of one value per row of D, in D's type, then maybe a ReLU or GELU.
struct LtEpilogue {
  cublasLtEpilogue_t kind = CUBLASLT_EPILOGUE_DEFAULT;
  const std::byte* bias = nullptr;  // device memory that lives as long as the compiled model
};

cublasLtEpilogue_t lt_epilogue(GemmEpilogue e) {
  switch (e) {
    case GemmEpilogue::kNone:
      return CUBLASLT_EPILOGUE_DEFAULT;
    case GemmEpilogue::kBias:
      return CUBLASLT_EPILOGUE_BIAS;
    case GemmEpilogue::kReluBias:
      return CUBLASLT_EPILOGUE_RELU_BIAS;
    case GemmEpilogue::kGeluBias:
      return CUBLASLT_EPILOGUE_GELU_BIAS;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

// cuBLASLt's matmul for one GEMM of the plan, its algorithm chosen once here: the first that
// cublasLtMatmulAlgoGetHeuristic ranks for these shapes, the storage type, FP32 accumulation
// and scale (CUBLAS_COMPUTE_32F; _FAST_TF32 under kTf32), the epilogue, the lane's cuBLAS
// workspace and the pointers' alignment. Where the heuristic offers none, the call is cuBLAS's
// gemm() above; a call with an epilogue is then not used at all (has_algo() says so), since
// gemm() has none: the caller compiles the GEMM without it and the fused ops after it.
class GemmCall {
 public:
  GemmCall(std::shared_ptr<cublasLtContext> lt, Elem e, Precision precision, const GemmShape& s,
           int64_t alignment, const LtEpilogue& epilogue = {})
      : lt_(std::move(lt)), e_(e), s_(s), epilogue_(epilogue) {
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

  bool has_algo() const { return has_algo_; }

  void run(const LaneContext& lane, float alpha, const std::byte* a, const std::byte* b, float beta,
           std::byte* c) const {
    if (!has_algo_) {
      BRAID_ASSERT(epilogue_.kind == CUBLASLT_EPILOGUE_DEFAULT,
                   "cuda: a GEMM epilogue without a cuBLASLt algorithm");
      gemm(lane.cublas, e_, s_, alpha, a, b, beta, c);
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
    if (epilogue_.kind != CUBLASLT_EPILOGUE_DEFAULT) {
      // The bias: s_.m values (D's rows), packed, in D's type (cublasLt.h: the bias type is D's
      // outside IMMA and FP8 kernels). Its pointer is set here, once: the heuristic reads its
      // alignment from it, and the compiler keeps the vector as long as this call.
      BRAID_ASSERT(epilogue_.bias != nullptr, "cuda: a bias epilogue without a bias");
      const uint32_t kind = epilogue_.kind;
      const void* bias = epilogue_.bias;
      const int32_t bias_type = t;
      BRAID_CU(
          cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_EPILOGUE, &kind, sizeof(kind)));
      BRAID_CU(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                              sizeof(bias)));
      BRAID_CU(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type,
                                              sizeof(bias_type)));
    }
    BRAID_CU(
        cublasLtMatrixLayoutCreate(&a_, t, uint64_t(s_.a_rows()), uint64_t(s_.a_cols()), s_.lda));
    BRAID_CU(
        cublasLtMatrixLayoutCreate(&b_, t, uint64_t(s_.b_rows()), uint64_t(s_.b_cols()), s_.ldb));
    BRAID_CU(cublasLtMatrixLayoutCreate(&c_, t, uint64_t(s_.m), uint64_t(s_.n), s_.ldc));
    if (s_.batch > 1) {  // one bias for every matrix: BIAS_BATCH_STRIDE stays 0
      const int32_t count = int32_t(s_.batch);
      for (auto [layout, stride] :
           {std::pair{a_, s_.stride_a}, std::pair{b_, s_.stride_b}, std::pair{c_, s_.stride_c}}) {
        BRAID_CU(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                  &count, sizeof(count)));
        BRAID_CU(cublasLtMatrixLayoutSetAttribute(
            layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)));
      }
    }
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
    if (has_algo_) has_algo_ = runs(result.algo, result.workspaceSize, alignment);
    if (has_algo_) algo_ = result.algo;
    if (!has_algo_)
      spdlog::debug(
          "cuda: no cuBLASLt algorithm for a {}x{}x{} GEMM (batch {}, epilogue {}, "
          "{}-byte alignment): {}",
          s_.m, s_.n, s_.k, s_.batch, int(epilogue_.kind), alignment,
          status == CUBLAS_STATUS_SUCCESS && found > 0
              ? "offered none that fits, or it failed when tried"
              : cublasGetStatusString(status));
  }

  // The heuristic's algorithm tried once on scratch operands as aligned as the real ones (its
  // values do not matter): cublasLtMatmul may still refuse a configuration the heuristic ranked
  // (PyTorch falls back to cuBLAS on such failures), and a refusal at run time would come in
  // the middle of a CUDA Graph capture.
  bool runs(const cublasLtMatmulAlgo_t& algo, size_t workspace_bytes, int64_t alignment) const {
    // An operand's bytes, every matrix of the batch, and room to offset it.
    const int64_t esize = elem_bytes(e_);
    auto bytes = [&](int64_t rows, int64_t cols, int64_t ld, int64_t stride) {
      return size_t((ld * (cols - 1) + rows + (s_.batch - 1) * stride) * esize + 256);
    };
    const int64_t offset = alignment < 256 ? alignment : 0;  // exactly that aligned
    DeviceBuffer pa(bytes(s_.a_rows(), s_.a_cols(), s_.lda, s_.stride_a)),
        pb(bytes(s_.b_rows(), s_.b_cols(), s_.ldb, s_.stride_b)),
        pc(bytes(s_.m, s_.n, s_.ldc, s_.stride_c)),
        workspace(std::max<size_t>(workspace_bytes, 256));
    const float one = 1.0f, zero = 0.0f;
    std::byte* c = pc.get() + offset;
    const cublasStatus_t st =
        cublasLtMatmul(lt_.get(), op_, &one, pa.get() + offset, a_, pb.get() + offset, b_, &zero, c,
                       c_, c, c_, &algo, workspace.get(), workspace_bytes, nullptr);
    return ran_on_device(st == CUBLAS_STATUS_SUCCESS);
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
  LtEpilogue epilogue_;
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, c_ = nullptr;
  cublasLtMatmulPreference_t preference_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
  bool has_algo_ = false;
};

}  // namespace

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

cuda::Pool2d Compiler::pool_of(const ir::Node& n) const {
  const ir::Shape& ys = shape(n.outputs[0]);
  const auto& a = std::get<ir::PoolAttrs>(n.attrs);
  const ir::Shape& xs = shape(n.inputs[0]);
  BRAID_CHECK(xs.size() == 4, ErrorCode::kUnsupported, "cuda: pooling '", n.name, "' is not 2-D");
  return {.planes = xs[0] * xs[1],
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
}

void Compiler::compile_pool(const cuda::Pool2d& p, ValueId from, ValueId to, std::vector<Op>& out) {
  auto x = locate(from);
  auto y = locate(to);
  const Elem e = elem_;
  out.push_back([=](const LaneContext& l, std::byte* arena) {
    cuda::pool2d(e, x(arena), y(arena), p, l.stream);
  });
}

// A zero Pad of H and W then an AveragePool (torchvision's avg_pool2d(padding=1) as exported:
// Inception V3's blocks) is one pool over the unpadded input with the pads added to its own and
// the padded zeros counted (count_include_pad), as ONNX Runtime's Pad fusion does: the sum is
// the same (the zeros add nothing) and so is the divisor, where the pool counts its own pads
// too or has none. Anything else (a MaxPool, a nonzero value, pads on N or C, negative pads,
// pads that would reach the kernel's size) takes nothing: 0.
size_t Compiler::compile_padded_pool(std::span<const NodeId> ops, std::vector<Op>& out) {
  if (ops.size() < 2) return 0;
  const ir::Node& pad = g_.node(ops[0]);
  const ir::Node& pool = g_.node(ops[1]);
  if (pad.kind != ir::OpKind::Pad || pool.kind != ir::OpKind::AveragePool ||
      pool.inputs[0] != pad.outputs[0] || !single_consumer(pad.outputs[0]))
    return 0;
  const auto& pa = std::get<ir::PadAttrs>(pad.attrs);
  const auto& a = std::get<ir::PoolAttrs>(pool.attrs);
  const ir::Shape& xs = shape(pad.inputs[0]);
  if (xs.size() != 4 || pa.pads.size() != 8 || pa.value != 0.0f) return 0;
  for (size_t d : {0, 1, 4, 5})
    if (pa.pads[d] != 0) return 0;
  if (std::any_of(pa.pads.begin(), pa.pads.end(), [](int64_t p) { return p < 0; })) return 0;
  const bool own_pads = std::any_of(a.pads.begin(), a.pads.end(), [](int64_t p) { return p != 0; });
  if (own_pads && !a.count_include_pad) return 0;
  cuda::Pool2d p = pool_of(pool);
  p.in_h = xs[2];
  p.in_w = xs[3];
  p.pad_top += pa.pads[2];
  p.pad_left += pa.pads[3];
  p.pad_bottom += pa.pads[6];
  p.pad_right += pa.pads[7];
  p.count_include_pad = true;
  // ONNX bounds a pool's pads by its kernel; past it the pad stays its own kernel.
  if (std::max(p.pad_top, p.pad_bottom) >= p.kernel_h ||
      std::max(p.pad_left, p.pad_right) >= p.kernel_w)
    return 0;
  compile_pool(p, pad.inputs[0], pool.outputs[0], out);
  return 2;
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
  // Placed in their windows by the memory plan (memory_plan_options): the producers wrote there.
  if (std::any_of(memory_.in_place_concats.begin(), memory_.in_place_concats.end(),
                  [&](NodeId c) { return &g_.node(c) == &n; }))
    return;
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

std::optional<Op> Compiler::gemm_op(const ir::Node& n, ValueId y, float beta, GemmEpilogue epilogue,
                                    const std::byte* bias) {
  const LtEpilogue lt{.kind = lt_epilogue(epilogue), .bias = bias};
  auto a = locate(n.inputs[0]);
  auto b = locate(n.inputs[1]);
  auto out = locate(y);
  const int64_t alignment =
      std::min({alignment_of(n.inputs[0]), alignment_of(n.inputs[1]), alignment_of(y)});
  if (n.kind == ir::OpKind::MatMul) {
    BRAID_CHECK(shape(n.inputs[0]).size() >= 2 && shape(n.inputs[1]).size() >= 2,
                ErrorCode::kUnsupported, "cuda: MatMul '", n.name, "' with a 1-D operand");
    const MatmulGemms g =
        matmul_gemms(shape(n.inputs[0]), shape(n.inputs[1]), shape(n.outputs[0]), esize_);
    const auto call = std::make_shared<const GemmCall>(
        cublas_lt(), elem_, options_.precision, g.shape, std::min(alignment, g.alignment), lt);
    if (epilogue != GemmEpilogue::kNone && !call->has_algo()) return std::nullopt;
    const int64_t esize = esize_;
    return [=, pairs = g.pairs, y_stride = g.y_stride](const LaneContext& l, std::byte* arena) {
      const std::byte *pa = a(arena), *pb = b(arena);
      std::byte* py = out(arena);
      for (size_t t = 0; t < pairs.size(); ++t)
        call->run(l, 1.0f, pb + pairs[t].second * esize, pa + pairs[t].first * esize, beta,
                  py + int64_t(t) * y_stride * esize);
    };
  }
  const auto& attrs = std::get<ir::GemmAttrs>(n.attrs);
  const auto call = std::make_shared<const GemmCall>(
      cublas_lt(), elem_, options_.precision,
      gemm_shape(attrs, shape(n.inputs[0]), shape(n.outputs[0])), alignment, lt);
  if (epilogue != GemmEpilogue::kNone && !call->has_algo()) return std::nullopt;
  const float alpha = attrs.alpha;
  return [=](const LaneContext& l, std::byte* arena) {
    call->run(l, alpha, b(arena), a(arena), beta, out(arena));
  };
}

void Compiler::compile_matmul(const ir::Node& n, std::vector<Op>& out) {
  out.push_back(*gemm_op(n, n.outputs[0], 0.0f));
}

// C, broadcast into Y first, is accumulated with beta: C may broadcast along either axis. A
// per-column C ([N], [1, N]) is the bias epilogue instead (compile_gemm_chain), where cuBLASLt
// has an algorithm for it.
void Compiler::compile_gemm(const ir::Node& n, std::vector<Op>& out) {
  const ir::Shape& ys = shape(n.outputs[0]);
  const bool has_c = n.inputs.size() > 2;
  const Op gemm = *gemm_op(n, n.outputs[0], has_c ? std::get<ir::GemmAttrs>(n.attrs).beta : 0.0f);
  if (!has_c) {
    out.push_back(gemm);
    return;
  }
  auto c = locate(n.inputs[2]);
  auto y = locate(n.outputs[0]);
  const Strided c_layout = broadcast_to(shape(n.inputs[2]), ys), y_layout = row_major(ys);
  const Elem e = elem_;
  out.push_back([=](const LaneContext& l, std::byte* arena) {
    cuda::strided_copy(e, y(arena), y_layout, c(arena), c_layout, l.stream);
    gemm(l, arena);
  });
}

// One cublasLtMatmul writes the chain's last value: the GEMM (alpha for a Gemm; beta 0, C read
// as the bias), the bias vector added to every row and the activation, by the epilogue. The bias
// is the parameter as stored (elem(), D's type), or a Gemm's C times beta uploaded once.
size_t Compiler::compile_gemm_chain(std::span<const NodeId> ops, std::vector<Op>& out) {
  const ir::Node& n = g_.node(ops[0]);
  const GemmChain chain = match_gemm(g_, ops, options_.precision != Precision::kFp32);
  if (chain.epilogue != GemmEpilogue::kNone) {
    const std::byte* bias = nullptr;
    if (chain.bias_scale == 1.0f) {
      bias = constant(*chain.bias);
    } else {
      const std::span<const float> c = host(*chain.bias, "Gemm C");
      std::vector<float> scaled(c.begin(), c.end());
      for (float& v : scaled) v *= chain.bias_scale;
      bias = keep_as(scaled, elem_);
    }
    if (std::optional<Op> op = gemm_op(n, chain.y, 0.0f, chain.epilogue, bias)) {
      out.push_back(std::move(*op));
      return chain.used;
    }
    spdlog::debug("cuda: '{}' runs without cuBLASLt's {} epilogue (no algorithm for it)", n.name,
                  to_string(chain.epilogue));
  }
  if (n.kind == ir::OpKind::MatMul)
    compile_matmul(n, out);
  else
    compile_gemm(n, out);
  return 1;
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

}  // namespace braid::exec::cuda
