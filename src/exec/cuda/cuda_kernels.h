// Our CUDA kernels (cuda_kernels.cu): what cuDNN and cuBLAS do not cover, or cover only with
// restrictions braid's IR does not have. Every launcher is asynchronous on `stream` and takes
// device pointers; shapes are small host structs passed by value (rank <= kMaxRank). Tensors are
// stored as `Elem` (FP32, FP16 or BF16; one kernel template per op, instantiated for each) and
// computed in FP32; per-channel parameters (scale, shift) and resize weights are always FP32.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

namespace braid::exec::cuda {

inline constexpr int kMaxRank = 8;

// How a tensor's elements are stored on the device: a float tensor in the plan's precision
// (kF32, kF16, kBF16); int64 tensors as int64, bool tensors as one byte 0/1. The computing
// kernels take float storage only; the copies, conversions and index ops below take any.
enum class Elem : int { kF32, kF16, kBF16, kI64, kBool };
int elem_bytes(Elem e);

// An index space of `rank` dims and, per operand, its element strides over them (0 broadcasts).
struct Strided {
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t strides[kMaxRank] = {};
};

enum class Unary : int {
  kRelu,
  kSigmoid,
  kTanh,
  kGelu,
  kGeluTanh,
  kClip,         // min(max(x, alpha), beta)
  kHardSigmoid,  // max(0, min(1, alpha * x + beta))
  kHardSwish,    // x * max(0, min(1, x / 6 + 1/2))
  kCopy,
  kErf,
  kSqrt
};
// An element-wise function with its parameters (unused by the functions that take none).
struct UnaryOp {
  constexpr UnaryOp(Unary k = Unary::kCopy, float a = 0.0f, float b = 0.0f)  // NOLINT: implicit
      : kind(k), alpha(a), beta(b) {}
  Unary kind;
  float alpha;
  float beta;
};
enum class Binary : int { kAdd, kMul, kSub, kDiv, kPow };

// dst[offset(i, dst)] = src[offset(i, src)] for every index i of dst's dims (src uses dst's
// dims with its own strides, negative ones included): Concat windows, Split, Transpose,
// Expand's broadcasts, Slice's windows, copies. Bit-exact for every Elem.
void strided_copy(Elem e, void* dst, Strided dst_layout, const void* src, Strided src_layout,
                  cudaStream_t stream);
// dst[i] = src[i] converted, i < n (inputs into the arena's storage, outputs back to FP32, Cast):
// through float, so int64 is exact to 2^24 as at braid's executor interface; float to int64
// truncates toward zero, anything to bool is != 0.
void convert(Elem from, const void* src, Elem to, void* dst, int64_t n, cudaStream_t stream);
// Gather along an axis: y[o][j][r] = data[o][k][r], k = indices[j] (+ axis_dim when negative),
// for o < outer, j < num_indices, r < inner. An index out of range writes zeros (the CPU
// executor refuses it; a kernel cannot throw).
void gather(Elem e, const void* data, int64_t outer, int64_t axis_dim, int64_t inner,
            const int64_t* indices, int64_t num_indices, void* y, cudaStream_t stream);
// y[i] = cond[offset(i, c)] ? a[offset(i, a)] : b[offset(i, b)] over y's dims (y row-major).
void where(Elem e, const void* cond, Strided c_layout, const void* a, Strided a_layout,
           const void* b, Strided b_layout, void* y, cudaStream_t stream);
// y[i] = a[offset(i, a)] == b[offset(i, b)] as bool bytes over y's dims (y row-major); int64
// compared exactly, 16-bit floats in float.
void equal(Elem e, const void* a, Strided a_layout, const void* b, Strided b_layout, void* y,
           cudaStream_t stream);
// y[i] = !x[i] over bool bytes.
void logical_not(const void* x, void* y, int64_t n, cudaStream_t stream);
// y = x padded: y's dims, x's dims and row-major strides, the leading pads per dim.
void pad(Elem e, void* y, Strided y_layout, const void* x, Strided x_layout,
         const int64_t* pads_begin, float value, cudaStream_t stream);
void unary(Elem e, UnaryOp op, const void* x, void* y, int64_t n, cudaStream_t stream);
// y[i] = a[offset(i, a)] op b[offset(i, b)] over y's dims (y row-major). y may alias a or b
// when that operand is not broadcast.
void binary(Elem e, Binary op, const void* a, Strided a_layout, const void* b, Strided b_layout,
            void* y, cudaStream_t stream);
// A residual Add fused into channel_affine (a ResNet block's `out += identity`): z, stored like
// y, added after the activation, then `after` (has_after) applied.
struct Residual {
  const void* z = nullptr;
  UnaryOp after{};
  bool has_after = false;
};
// y = activation(x * scale[c] + shift[c]) for x in [outer][channels][inner] (BatchNormalization,
// a conv's bias and activation when cuDNN could not fuse them), then + residual.z[i] and
// residual.after when residual.z is set. scale and shift may be null (1, 0).
void channel_affine(Elem e, const void* x, void* y, const float* scale, const float* shift,
                    int64_t outer, int64_t channels, int64_t inner, UnaryOp activation,
                    bool has_activation, cudaStream_t stream, Residual residual = {});
struct Pool2d {
  int64_t planes = 0, in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  int64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  bool is_max = true, count_include_pad = false;
};
// MaxPool / AveragePool with any padding and ceil mode (ONNX Runtime's semantics).
void pool2d(Elem e, const void* x, void* y, Pool2d p, cudaStream_t stream);
// y[p] = mean of x[p * inner .. p * inner + inner).
void mean_rows(Elem e, const void* x, void* y, int64_t rows, int64_t inner, cudaStream_t stream);
// Reads data[0 .. n) and writes `sink` only if the sum is exactly -1e30 (never, for the caller's
// zeros): reads that cannot be elided, to evict the L2 cache before a timed stage.
void read_through(const float* data, int64_t n, float* sink, cudaStream_t stream);
// LayerNormalization over the last `inner` elements of each of `outer` rows.
void layer_norm(Elem e, const void* x, const void* scale, const void* bias, void* y, int64_t outer,
                int64_t inner, float epsilon, cudaStream_t stream);

// LRN across channels (ONNX): y = x / (bias + alpha / size * sum of x^2 over the channels
// c - floor((size - 1) / 2) .. c + ceil((size - 1) / 2), clipped to the tensor)^beta, for x in
// [batch][channels][plane]; the sum in FP32 whatever the storage. Even sizes take one channel
// more above than below, as ONNX and the reference executor do.
struct Lrn {
  int64_t batch = 0, channels = 0, plane = 0;
  int64_t size = 1;
  float alpha = 1e-4f, beta = 0.75f, bias = 1.0f;
};
void lrn(Elem e, const void* x, void* y, Lrn p, cudaStream_t stream);

// Resize (ir/resize.h) as per-axis tap tables in device memory. Output index o of axis d reads
// taps [begin[d][o], begin[d][o + 1]): input index[d][t] with weight[d][t]; an axis whose begin
// is null is the identity (o reads o). outside[d] (tf_crop_and_resize, else null) marks output
// indices that take extrapolation_value.
struct ResizeTables {
  int rank = 0;
  int64_t out_dims[kMaxRank] = {};
  int64_t in_strides[kMaxRank] = {};  // row-major, of the input
  const int64_t* begin[kMaxRank] = {};
  const int64_t* index[kMaxRank] = {};
  const float* weight[kMaxRank] = {};
  const uint8_t* outside[kMaxRank] = {};
  float extrapolation_value = 0.0f;
};
// y[o] = sum over the tensor product of o's per-axis taps of prod(weight) * x[index...]; one
// thread per output element.
void resize(Elem e, const void* x, void* y, const ResizeTables& tables, cudaStream_t stream);

// Calibration probes: `count` empty one-thread kernels on `stream`, and one kernel that spins
// on the SM clock for about `cycles` cycles (something long to queue launches behind).
void empty_kernels(int count, cudaStream_t stream);
void spin_kernel(long long cycles, cudaStream_t stream);

}  // namespace braid::exec::cuda
