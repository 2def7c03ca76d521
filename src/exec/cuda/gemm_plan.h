// How ONNX's MatMul and Gemm become cuBLAS's column-major GEMM calls, apart from the calls, so
// that the mapping is tested where there is no GPU (gemm_plan_test.cc multiplies by it on the
// host). cuda_compile_ops.cc runs them through cuBLASLt (GemmCall) or cuBLAS.
//
//   MatmulGemms g = matmul_gemms(a_shape, b_shape, y_shape, /*esize=*/2);
//   for (auto [a_offset, b_offset] : g.pairs)   // one call each, Y advancing by g.y_stride
//     gemm(g.shape, B + b_offset, A + a_offset, Y + t * g.y_stride);   // B first: see below
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "ir/op.h"
#include "ir/tensor_type.h"

namespace braid::exec::cuda {

// The shape of a column-major GEMM, C[m,n] = alpha op(A) op(B) + beta C, as cuBLAS takes it:
// op(A) is m x k (A stored k x m when transposed), op(B) k x n (B stored n x k when transposed),
// each with its leading dimension; `batch` such GEMMs, each operand `stride_*` elements after
// the one before (cuBLAS's strided batch).
struct GemmShape {
  bool trans_a = false, trans_b = false;
  int64_t m = 0, n = 0, k = 0, lda = 0, ldb = 0, ldc = 0;
  int64_t batch = 1, stride_a = 0, stride_b = 0, stride_c = 0;
  // A and B as stored (rows x columns, column-major): op(A) m x k, op(B) k x n.
  int64_t a_rows() const { return trans_a ? k : m; }
  int64_t a_cols() const { return trans_a ? m : k; }
  int64_t b_rows() const { return trans_b ? n : k; }
  int64_t b_cols() const { return trans_b ? k : n; }
};

// A MatMul as cuBLAS GEMMs: row-major Y[M,N] = A[M,K] B[K,N] is column-major Y^T = B^T A^T, so
// each output matrix is one GEMM with B first (cuBLAS's A) and every leading dimension a row
// length. `pairs` holds, per GEMM call (in order), the element offsets of the A and B matrices
// it reads (broadcast batch dims); `alignment` is the largest power of two up to 256 dividing
// every matrix's byte offset from its tensor's start. As few calls as the batch allows:
// - B shared by every output matrix (a linear layer, [..., M, K] x [K, N]): one GEMM of all
//   the batch's rows, [B*M, K] x [K, N] (A's matrices lie one after the other, as Y's do);
// - A and B each with one matrix per output matrix (attention's [B, H, S, D] products): one
//   strided-batched call;
// - otherwise (A shared, or batch dims broadcast differently): one call per output matrix.
// Both operands have at least 2 dims (the caller refuses 1-D ones).
struct MatmulGemms {
  GemmShape shape;
  std::vector<std::pair<int64_t, int64_t>> pairs;
  int64_t y_stride = 0;  // elements between the output matrices of successive calls
  int64_t alignment = 256;
};
MatmulGemms matmul_gemms(const ir::Shape& as, const ir::Shape& bs, const ir::Shape& ys,
                         int64_t esize);

// A Gemm's one GEMM: row-major Y = op(A) op(B) is column-major Y^T = op(B)^T op(A)^T: B first,
// with B's transposition, and the row lengths as leading dimensions.
GemmShape gemm_shape(const ir::GemmAttrs& attrs, const ir::Shape& as, const ir::Shape& ys);

// The largest power of two up to 256 dividing `address` (256 for 0).
int64_t power_of_two_alignment(uint64_t address);

}  // namespace braid::exec::cuda
