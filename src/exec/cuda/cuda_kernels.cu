#include "exec/cuda/cuda_kernels.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "base/error.h"

namespace braid::exec::cuda {
namespace {

constexpr int kThreads = 256;

int64_t blocks_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return b < 1 ? 1 : (b > 65535 * 32 ? 65535 * 32 : b);
}

__device__ int64_t offset_of(int64_t i, const Strided& s) {
  int64_t offset = 0;
  for (int d = s.rank - 1; d >= 0; --d) {
    const int64_t at = i % s.dims[d];
    i /= s.dims[d];
    offset += at * s.strides[d];
  }
  return offset;
}

int64_t count(const Strided& s) {
  int64_t n = 1;
  for (int d = 0; d < s.rank; ++d) n *= s.dims[d];
  return n;
}

// min(max(x, lo), hi) as std::min/std::max compute it (the reference executor, numpy's clip):
// NaN stays NaN, where fminf/fmaxf would return a bound.
__device__ __forceinline__ float clamp(float x, float lo, float hi) {
  return x < lo ? lo : (x > hi ? hi : x);
}

__device__ float apply(UnaryOp op, float x) {
  switch (op.kind) {
    case Unary::kRelu:
      return x > 0.0f ? x : 0.0f;
    case Unary::kSigmoid:
      return 1.0f / (1.0f + expf(-x));
    case Unary::kTanh:
      return tanhf(x);
    case Unary::kGelu:
      return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
    case Unary::kGeluTanh:
      return 0.5f * x * (1.0f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)));
    case Unary::kClip:
      return clamp(x, op.alpha, op.beta);
    case Unary::kHardSigmoid:
      return clamp(op.alpha * x + op.beta, 0.0f, 1.0f);
    case Unary::kHardSwish:
      return x * clamp(x * (1.0f / 6.0f) + 0.5f, 0.0f, 1.0f);
    case Unary::kCopy:
      return x;
    case Unary::kErf:
      return erff(x);
    case Unary::kSqrt:
      return sqrtf(x);
  }
  return x;
}

// Storage types: every kernel loads its elements as float, computes in float and stores back in
// the tensor's own type (issue 29: FP32 arithmetic, 16-bit storage).
__device__ __forceinline__ float to_float(float x) {
  return x;
}
__device__ __forceinline__ float to_float(__half x) {
  return __half2float(x);
}
__device__ __forceinline__ float to_float(__nv_bfloat16 x) {
  return __bfloat162float(x);
}
__device__ __forceinline__ float to_float(int64_t x) {
  return static_cast<float>(x);
}
__device__ __forceinline__ float to_float(uint8_t x) {  // bool
  return x != 0 ? 1.0f : 0.0f;
}
template <typename T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ float from_float<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ __half from_float<__half>(float x) {
  return __float2half_rn(x);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}
template <>
__device__ __forceinline__ int64_t from_float<int64_t>(float x) {  // ONNX Cast: toward zero
  return static_cast<int64_t>(x);
}
template <>
__device__ __forceinline__ uint8_t from_float<uint8_t>(float x) {
  return x != 0.0f ? 1 : 0;
}
// Equal's operands: int64 exactly, the float types as float.
__device__ __forceinline__ int64_t comparable(int64_t x) {
  return x;
}
__device__ __forceinline__ int64_t comparable(uint8_t x) {
  return x != 0;
}
template <typename T>
__device__ __forceinline__ float comparable(T x) {
  return to_float(x);
}

// Calls f(T{}) with T the C++ type of `e`: one launcher body for every float storage type. The
// compiler gives the computing kernels float tensors only (CudaExecutor::supports).
template <typename F>
void dispatch(Elem e, F&& f) {
  switch (e) {
    case Elem::kF32:
      f(float{});
      return;
    case Elem::kF16:
      f(__half{});
      return;
    case Elem::kBF16:
      f(__nv_bfloat16{});
      return;
    case Elem::kI64:
    case Elem::kBool:
      break;
  }
  std::abort();  // a computing kernel given an int64 or bool tensor: a compiler bug
}
// The same over every storage type (copies, conversions, index ops).
template <typename F>
void dispatch_any(Elem e, F&& f) {
  switch (e) {
    case Elem::kI64:
      f(int64_t{});
      return;
    case Elem::kBool:
      f(uint8_t{});
      return;
    default:
      dispatch(e, f);
  }
}

template <typename T>
__global__ void strided_copy_kernel(T* dst, Strided dl, const T* src, Strided sl, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    dst[offset_of(i, dl)] = src[offset_of(i, sl)];
}

template <typename T>
__global__ void gather_kernel(const T* data, int64_t axis_dim, int64_t inner, const int64_t* idx,
                              int64_t num_indices, T* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i % inner, j = (i / inner) % num_indices, o = i / (inner * num_indices);
    int64_t k = idx[j];
    if (k < 0) k += axis_dim;
    y[i] = k >= 0 && k < axis_dim ? data[(o * axis_dim + k) * inner + r] : T{};
  }
}

template <typename T>
__global__ void where_kernel(const uint8_t* c, Strided cl, const T* a, Strided al, const T* b,
                             Strided bl, T* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    y[i] = c[offset_of(i, cl)] != 0 ? a[offset_of(i, al)] : b[offset_of(i, bl)];
}

template <typename T>
__global__ void equal_kernel(const T* a, Strided al, const T* b, Strided bl, uint8_t* y,
                             int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    y[i] = comparable(a[offset_of(i, al)]) == comparable(b[offset_of(i, bl)]) ? 1 : 0;
}

__global__ void not_kernel(const uint8_t* x, uint8_t* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    y[i] = x[i] != 0 ? 0 : 1;
}

template <typename From, typename To>
__global__ void convert_kernel(const From* src, To* dst, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    dst[i] = from_float<To>(to_float(src[i]));
}

struct Pads {
  int64_t begin[kMaxRank];
};

template <typename T>
__global__ void pad_kernel(T* y, Strided yl, const T* x, Strided xl, Pads pads, float value,
                           int64_t n) {
  const T fill = from_float<T>(value);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t rest = i, offset = 0;
    bool inside = true;
    for (int d = yl.rank - 1; d >= 0; --d) {
      const int64_t at = rest % yl.dims[d] - pads.begin[d];
      rest /= yl.dims[d];
      inside = inside && at >= 0 && at < xl.dims[d];
      offset += at * xl.strides[d];
    }
    y[i] = inside ? x[offset] : fill;
  }
}

template <typename T>
__global__ void unary_kernel(UnaryOp op, const T* x, T* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    y[i] = from_float<T>(apply(op, to_float(x[i])));
}

template <typename T>
__global__ void binary_kernel(Binary op, const T* a, Strided al, const T* b, Strided bl, T* y,
                              int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float u = to_float(a[offset_of(i, al)]), v = to_float(b[offset_of(i, bl)]);
    float r = 0.0f;
    switch (op) {
      case Binary::kAdd:
        r = u + v;
        break;
      case Binary::kMul:
        r = u * v;
        break;
      case Binary::kSub:
        r = u - v;
        break;
      case Binary::kDiv:
        r = u / v;
        break;
      case Binary::kPow:
        r = powf(u, v);
        break;
    }
    y[i] = from_float<T>(r);
  }
}

template <typename T>
__global__ void channel_affine_kernel(const T* x, T* y, const float* scale, const float* shift,
                                      int64_t channels, int64_t inner, UnaryOp activation,
                                      bool has_activation, const T* z, UnaryOp after,
                                      bool has_after, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t c = (i / inner) % channels;
    float v = to_float(x[i]) * (scale != nullptr ? scale[c] : 1.0f) +
              (shift != nullptr ? shift[c] : 0.0f);
    if (has_activation) v = apply(activation, v);
    if (z != nullptr) {
      v += to_float(z[i]);
      if (has_after) v = apply(after, v);
    }
    y[i] = from_float<T>(v);
  }
}

template <typename T>
__global__ void pool2d_kernel(const T* x, T* y, Pool2d p, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t ow = i % p.out_w, oh = (i / p.out_w) % p.out_h, plane = i / (p.out_w * p.out_h);
    const int64_t h0 = oh * p.stride_h - p.pad_top, w0 = ow * p.stride_w - p.pad_left;
    const int64_t h_end = min(h0 + p.kernel_h, p.in_h), w_end = min(w0 + p.kernel_w, p.in_w);
    const T* xp = x + plane * p.in_h * p.in_w;
    float best = -INFINITY, sum = 0.0f;
    int64_t taken = 0;
    for (int64_t ih = max(h0, int64_t(0)); ih < h_end; ++ih)
      for (int64_t iw = max(w0, int64_t(0)); iw < w_end; ++iw) {
        const float v = to_float(xp[ih * p.in_w + iw]);
        best = fmaxf(best, v);
        sum += v;
        ++taken;
      }
    if (p.count_include_pad) {  // the window clipped to the padded input
      const int64_t h1 = min(h0 + p.kernel_h, p.in_h + p.pad_bottom);
      const int64_t w1 = min(w0 + p.kernel_w, p.in_w + p.pad_right);
      taken = (h1 - h0) * (w1 - w0);
    }
    y[i] = from_float<T>(p.is_max ? best : sum / float(taken));
  }
}

// The sum of `v` over the block (blockDim.x == kThreads), in every thread: a shared-memory
// tree reduction. Every thread of the block must call it.
__device__ float block_sum(float v) {
  __shared__ float partial[kThreads];
  partial[threadIdx.x] = v;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  const float sum = partial[0];
  __syncthreads();  // partial is reused by the next call
  return sum;
}

// One block per row; the sum in FP32 whatever the storage.
template <typename T>
__global__ void mean_rows_kernel(const T* x, T* y, int64_t inner) {
  const T* row = x + blockIdx.x * inner;
  float sum = 0.0f;
  for (int64_t i = threadIdx.x; i < inner; i += blockDim.x) sum += to_float(row[i]);
  sum = block_sum(sum);
  if (threadIdx.x == 0) y[blockIdx.x] = from_float<T>(sum / float(inner));
}

__global__ void read_through_kernel(const float4* data, int64_t n4, float* sink) {
  float sum = 0.0f;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n4;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float4 v = data[i];
    sum += v.x + v.y + v.z + v.w;
  }
  if (sum == -1e30f) *sink = sum;
}

// Mean and variance in FP32 whatever the storage.
template <typename T>
__global__ void layer_norm_kernel(const T* x, const T* scale, const T* bias, T* y, int64_t inner,
                                  float epsilon) {
  const T* row = x + blockIdx.x * inner;
  T* out = y + blockIdx.x * inner;
  float sum = 0.0f;
  for (int64_t i = threadIdx.x; i < inner; i += blockDim.x) sum += to_float(row[i]);
  const float mean = block_sum(sum) / float(inner);
  float var = 0.0f;
  for (int64_t i = threadIdx.x; i < inner; i += blockDim.x) {
    const float d = to_float(row[i]) - mean;
    var += d * d;
  }
  const float inv_std = rsqrtf(block_sum(var) / float(inner) + epsilon);
  for (int64_t i = threadIdx.x; i < inner; i += blockDim.x)
    out[i] = from_float<T>((to_float(row[i]) - mean) * inv_std * to_float(scale[i]) +
                           (bias != nullptr ? to_float(bias[i]) : 0.0f));
}

// One thread per output element; its window runs down the channel axis, `plane` apart.
template <typename T>
__global__ void lrn_kernel(const T* x, T* y, Lrn p, int64_t n) {
  const int64_t below = (p.size - 1) / 2, above = p.size - 1 - below;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t c = (i / p.plane) % p.channels;
    const T* column = x + (i - c * p.plane);  // channel 0 of this image and pixel
    const int64_t first = max(c - below, int64_t(0)), last = min(c + above, p.channels - 1);
    float square_sum = 0.0f;
    for (int64_t k = first; k <= last; ++k) {
      const float v = to_float(column[k * p.plane]);
      square_sum += v * v;
    }
    const float scale = p.bias + p.alpha / float(p.size) * square_sum;
    y[i] = from_float<T>(to_float(x[i]) / powf(scale, p.beta));
  }
}

template <typename T>
__global__ void resize_kernel(const T* x, T* y, ResizeTables t, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    // Per axis, the range of the output index's taps; identity axes add to `base` instead.
    int64_t first[kMaxRank], last[kMaxRank], at[kMaxRank];
    int64_t base = 0;
    bool outside = false, empty = false;
    int64_t rest = i;
    for (int d = t.rank - 1; d >= 0; --d) {
      const int64_t o = rest % t.out_dims[d];
      rest /= t.out_dims[d];
      outside = outside || (t.outside[d] != nullptr && t.outside[d][o] != 0);
      if (t.begin[d] == nullptr) {
        base += o * t.in_strides[d];
        first[d] = 0;
        last[d] = 1;
      } else {
        first[d] = t.begin[d][o];
        last[d] = t.begin[d][o + 1];
      }
      empty = empty || first[d] == last[d];
      at[d] = first[d];
    }
    if (outside) {
      y[i] = from_float<T>(t.extrapolation_value);
      continue;
    }
    float acc = 0.0f;
    while (!empty) {
      float w = 1.0f;
      int64_t offset = base;
      for (int d = 0; d < t.rank; ++d)
        if (t.begin[d] != nullptr) {
          w *= t.weight[d][at[d]];
          offset += t.index[d][at[d]] * t.in_strides[d];
        }
      acc += w * to_float(x[offset]);
      // The next combination of taps: an odometer over the axes, the last one fastest.
      int d = t.rank - 1;
      for (; d >= 0 && ++at[d] == last[d]; --d) at[d] = first[d];
      if (d < 0) break;
    }
    y[i] = from_float<T>(acc);
  }
}

__global__ void empty_kernel() {}

__global__ void spin(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

// A launch the runtime refused (no kernel image for this GPU, a bad configuration) reports
// nothing by itself: the kernel just does not run. The launchers check at once, so the error
// names its kernel; cudaGetLastError is allowed while a stream is being captured.
void launched(const char* kernel) {
  const cudaError_t e = cudaGetLastError();
  BRAID_CHECK(e == cudaSuccess, ErrorCode::kInternal, "CUDA: launch of ", kernel, ": ",
              cudaGetErrorString(e));
}

}  // namespace

void empty_kernels(int count, cudaStream_t stream) {
  for (int i = 0; i < count; ++i) empty_kernel<<<1, 1, 0, stream>>>();
  launched("empty_kernel");
}

void spin_kernel(long long cycles, cudaStream_t stream) {
  spin<<<1, 1, 0, stream>>>(cycles);
  launched("spin");
}

int elem_bytes(Elem e) {
  switch (e) {
    case Elem::kF32:
      return 4;
    case Elem::kF16:
    case Elem::kBF16:
      return 2;
    case Elem::kI64:
      return 8;
    case Elem::kBool:
      return 1;
  }
  return 4;
}

void strided_copy(Elem e, void* dst, Strided dst_layout, const void* src, Strided src_layout,
                  cudaStream_t stream) {
  const int64_t n = count(dst_layout);
  if (n == 0) return;
  dispatch_any(e, [&](auto tag) {
    using T = decltype(tag);
    strided_copy_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(
        static_cast<T*>(dst), dst_layout, static_cast<const T*>(src), src_layout, n);
    launched("strided_copy_kernel");
  });
}

void convert(Elem from, const void* src, Elem to, void* dst, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  dispatch_any(from, [&](auto from_tag) {
    using From = decltype(from_tag);
    dispatch_any(to, [&](auto to_tag) {
      using To = decltype(to_tag);
      convert_kernel<From, To><<<blocks_for(n), kThreads, 0, stream>>>(
          static_cast<const From*>(src), static_cast<To*>(dst), n);
      launched("convert_kernel");
    });
  });
}

void gather(Elem e, const void* data, int64_t outer, int64_t axis_dim, int64_t inner,
            const int64_t* indices, int64_t num_indices, void* y, cudaStream_t stream) {
  const int64_t n = outer * num_indices * inner;
  if (n == 0) return;
  dispatch_any(e, [&](auto tag) {
    using T = decltype(tag);
    gather_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(
        static_cast<const T*>(data), axis_dim, inner, indices, num_indices, static_cast<T*>(y), n);
    launched("gather_kernel");
  });
}

void where(Elem e, const void* cond, Strided c_layout, const void* a, Strided a_layout,
           const void* b, Strided b_layout, void* y, cudaStream_t stream) {
  const int64_t n = count(c_layout);
  if (n == 0) return;
  dispatch_any(e, [&](auto tag) {
    using T = decltype(tag);
    where_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(
        static_cast<const uint8_t*>(cond), c_layout, static_cast<const T*>(a), a_layout,
        static_cast<const T*>(b), b_layout, static_cast<T*>(y), n);
    launched("where_kernel");
  });
}

void equal(Elem e, const void* a, Strided a_layout, const void* b, Strided b_layout, void* y,
           cudaStream_t stream) {
  const int64_t n = count(a_layout);
  if (n == 0) return;
  dispatch_any(e, [&](auto tag) {
    using T = decltype(tag);
    equal_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const T*>(a), a_layout,
                                                            static_cast<const T*>(b), b_layout,
                                                            static_cast<uint8_t*>(y), n);
    launched("equal_kernel");
  });
}

void logical_not(const void* x, void* y, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  not_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const uint8_t*>(x),
                                                     static_cast<uint8_t*>(y), n);
  launched("not_kernel");
}

void pad(Elem e, void* y, Strided y_layout, const void* x, Strided x_layout,
         const int64_t* pads_begin, float value, cudaStream_t stream) {
  const int64_t n = count(y_layout);
  if (n == 0) return;
  Pads pads{};
  for (int d = 0; d < y_layout.rank; ++d) pads.begin[d] = pads_begin[d];
  dispatch(e, [&](auto tag) {
    using T = decltype(tag);
    pad_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(
        static_cast<T*>(y), y_layout, static_cast<const T*>(x), x_layout, pads, value, n);
    launched("pad_kernel");
  });
}

void unary(Elem e, UnaryOp op, const void* x, void* y, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  dispatch(e, [&](auto tag) {
    using T = decltype(tag);
    unary_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(op, static_cast<const T*>(x),
                                                            static_cast<T*>(y), n);
    launched("unary_kernel");
  });
}

void binary(Elem e, Binary op, const void* a, Strided a_layout, const void* b, Strided b_layout,
            void* y, cudaStream_t stream) {
  const int64_t n = count(a_layout);
  if (n == 0) return;
  dispatch(e, [&](auto tag) {
    using T = decltype(tag);
    binary_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(op, static_cast<const T*>(a), a_layout,
                                                             static_cast<const T*>(b), b_layout,
                                                             static_cast<T*>(y), n);
    launched("binary_kernel");
  });
}

void channel_affine(Elem e, const void* x, void* y, const float* scale, const float* shift,
                    int64_t outer, int64_t channels, int64_t inner, UnaryOp activation,
                    bool has_activation, cudaStream_t stream, Residual residual) {
  const int64_t n = outer * channels * inner;
  if (n == 0) return;
  dispatch(e, [&](auto tag) {
    using T = decltype(tag);
    channel_affine_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(
        static_cast<const T*>(x), static_cast<T*>(y), scale, shift, channels, inner, activation,
        has_activation, static_cast<const T*>(residual.z), residual.after, residual.has_after, n);
    launched("channel_affine_kernel");
  });
}

void pool2d(Elem e, const void* x, void* y, Pool2d p, cudaStream_t stream) {
  const int64_t n = p.planes * p.out_h * p.out_w;
  if (n == 0) return;
  dispatch(e, [&](auto tag) {
    using T = decltype(tag);
    pool2d_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const T*>(x),
                                                             static_cast<T*>(y), p, n);
    launched("pool2d_kernel");
  });
}

void mean_rows(Elem e, const void* x, void* y, int64_t rows, int64_t inner, cudaStream_t stream) {
  if (rows == 0) return;
  dispatch(e, [&](auto tag) {
    using T = decltype(tag);
    mean_rows_kernel<T>
        <<<rows, kThreads, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y), inner);
    launched("mean_rows_kernel");
  });
}

void read_through(const float* data, int64_t n, float* sink, cudaStream_t stream) {
  const int64_t n4 = n / 4;  // the tail of fewer than 4 floats is not worth a kernel
  if (n4 == 0) return;
  read_through_kernel<<<blocks_for(n4), kThreads, 0, stream>>>(
      reinterpret_cast<const float4*>(data), n4, sink);
  launched("read_through_kernel");
}

void lrn(Elem e, const void* x, void* y, Lrn p, cudaStream_t stream) {
  const int64_t n = p.batch * p.channels * p.plane;
  if (n == 0) return;
  dispatch(e, [&](auto tag) {
    using T = decltype(tag);
    lrn_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const T*>(x),
                                                          static_cast<T*>(y), p, n);
    launched("lrn_kernel");
  });
}

void resize(Elem e, const void* x, void* y, const ResizeTables& tables, cudaStream_t stream) {
  int64_t n = 1;
  for (int d = 0; d < tables.rank; ++d) n *= tables.out_dims[d];
  if (n == 0) return;
  dispatch(e, [&](auto tag) {
    using T = decltype(tag);
    resize_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const T*>(x),
                                                             static_cast<T*>(y), tables, n);
    launched("resize_kernel");
  });
}

void layer_norm(Elem e, const void* x, const void* scale, const void* bias, void* y, int64_t outer,
                int64_t inner, float epsilon, cudaStream_t stream) {
  if (outer == 0) return;
  dispatch(e, [&](auto tag) {
    using T = decltype(tag);
    layer_norm_kernel<T><<<outer, kThreads, 0, stream>>>(
        static_cast<const T*>(x), static_cast<const T*>(scale), static_cast<const T*>(bias),
        static_cast<T*>(y), inner, epsilon);
    launched("layer_norm_kernel");
  });
}

}  // namespace braid::exec::cuda
