#include "exec/ref/ref_kernels.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numbers>
#include <vector>

#include "base/error.h"
#include "ir/resize.h"
#include "ir/shape_inference.h"

namespace braid::exec::ref {

float relu(float x) {
  return x > 0.0f ? x : 0.0f;
}
float sigmoid(float x) {
  return static_cast<float>(1.0 / (1.0 + std::exp(-static_cast<double>(x))));
}

float gelu(float x, bool tanh_approximation) {
  const double v = x;
  if (tanh_approximation) {
    const double k = std::sqrt(2.0 / std::numbers::pi);
    return static_cast<float>(0.5 * v * (1.0 + std::tanh(k * (v + 0.044715 * v * v * v))));
  }
  return static_cast<float>(0.5 * v * (1.0 + std::erf(v / std::numbers::sqrt2)));
}

float hard_sigmoid(float x, float alpha, float beta) {
  return static_cast<float>(std::clamp(static_cast<double>(alpha) * x + beta, 0.0, 1.0));
}

float apply_activation(ir::Activation activation, float x) {
  switch (activation) {
    case ir::Activation::kNone:
      return x;
    case ir::Activation::kRelu:
      return relu(x);
    case ir::Activation::kSigmoid:
      return sigmoid(x);
    case ir::Activation::kTanh:
      return std::tanh(x);
    case ir::Activation::kGelu:
      return gelu(x, /*tanh_approximation=*/false);
  }
  BRAID_ASSERT(false, "bad activation");
}

namespace {

using ir::Shape;

int64_t product(const Shape& s, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= s[i];
  return p;
}

int64_t normalize_axis(int64_t axis, int64_t rank) {
  return axis < 0 ? axis + rank : axis;
}

std::vector<int64_t> row_major_strides(const Shape& s) {
  std::vector<int64_t> strides(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;) strides[i - 1] = strides[i] * s[i];
  return strides;
}

// Strides that read `in` as if numpy-broadcast to `out` (right-aligned; size-1 dims repeat).
std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out) {
  std::vector<int64_t> in_strides = row_major_strides(in);
  std::vector<int64_t> strides(out.size(), 0);
  const size_t lead = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) strides[lead + i] = in[i] == 1 ? 0 : in_strides[i];
  return strides;
}

// Offset into a tensor with `strides` of the element at row-major position `flat` of `shape`.
int64_t offset_of(int64_t flat, const Shape& shape, const std::vector<int64_t>& strides) {
  int64_t offset = 0;
  for (size_t i = shape.size(); i-- > 0;) {
    offset += (flat % shape[i]) * strides[i];
    flat /= shape[i];
  }
  return offset;
}

void conv(const ir::ConvAttrs& a, const Shape& xs, const Shape& ws, const float* x, const float* w,
          const float* bias, const Shape& ys, float* y) {
  const int64_t n_batch = xs[0], ic_all = xs[1], ih_all = xs[2], iw_all = xs[3];
  const int64_t oc_all = ys[1], oh_all = ys[2], ow_all = ys[3];
  const int64_t ic_per_group = ws[1], oc_per_group = oc_all / a.groups;
  const int64_t kh_all = ws[2], kw_all = ws[3];
  for (int64_t n = 0; n < n_batch; ++n)
    for (int64_t oc = 0; oc < oc_all; ++oc) {
      const int64_t group = oc / oc_per_group;
      for (int64_t oh = 0; oh < oh_all; ++oh)
        for (int64_t ow = 0; ow < ow_all; ++ow) {
          double acc = bias != nullptr ? bias[oc] : 0.0;
          for (int64_t icg = 0; icg < ic_per_group; ++icg) {
            const int64_t ic = group * ic_per_group + icg;
            for (int64_t kh = 0; kh < kh_all; ++kh) {
              const int64_t ih = oh * a.stride[0] - a.pads[0] + kh * a.dilation[0];
              if (ih < 0 || ih >= ih_all) continue;
              for (int64_t kw = 0; kw < kw_all; ++kw) {
                const int64_t iw = ow * a.stride[1] - a.pads[1] + kw * a.dilation[1];
                if (iw < 0 || iw >= iw_all) continue;
                acc += static_cast<double>(x[((n * ic_all + ic) * ih_all + ih) * iw_all + iw]) *
                       w[((oc * ic_per_group + icg) * kh_all + kh) * kw_all + kw];
              }
            }
          }
          y[((n * oc_all + oc) * oh_all + oh) * ow_all + ow] =
              apply_activation(a.activation, static_cast<float>(acc));
        }
    }
}

void pool(bool is_max, const ir::PoolAttrs& a, const Shape& xs, const float* x, const Shape& ys,
          float* y) {
  const int64_t planes = xs[0] * xs[1], ih_all = xs[2], iw_all = xs[3];
  const int64_t oh_all = ys[2], ow_all = ys[3];
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t oh = 0; oh < oh_all; ++oh)
      for (int64_t ow = 0; ow < ow_all; ++ow) {
        const int64_t h0 = oh * a.stride[0] - a.pads[0];
        const int64_t w0 = ow * a.stride[1] - a.pads[1];
        double max = -std::numeric_limits<double>::infinity(), sum = 0.0;
        int64_t count = 0;
        for (int64_t ih = std::max<int64_t>(h0, 0); ih < std::min(h0 + a.kernel[0], ih_all); ++ih)
          for (int64_t iw = std::max<int64_t>(w0, 0); iw < std::min(w0 + a.kernel[1], iw_all);
               ++iw) {
            const double v = x[(p * ih_all + ih) * iw_all + iw];
            max = std::max(max, v);
            sum += v;
            ++count;
          }
        if (a.count_include_pad) {
          // The window clipped to the padded input (ONNX Runtime and PyTorch).
          const int64_t h1 = std::min(h0 + a.kernel[0], ih_all + a.pads[2]);
          const int64_t w1 = std::min(w0 + a.kernel[1], iw_all + a.pads[3]);
          count = (h1 - h0) * (w1 - w0);
        }
        y[(p * oh_all + oh) * ow_all + ow] = static_cast<float>(is_max ? max : sum / count);
      }
}

void broadcast_elementwise(ir::OpKind kind, std::span<const float* const> in,
                           std::span<const Shape* const> shapes, const Shape& ys, float* y) {
  const int64_t n = ir::num_elements(ys);
  std::vector<std::vector<int64_t>> strides;
  for (const Shape* s : shapes) strides.push_back(broadcast_strides(*s, ys));
  for (int64_t i = 0; i < n; ++i) {
    double acc = in[0][offset_of(i, ys, strides[0])];
    for (size_t k = 1; k < in.size(); ++k) {
      const double v = in[k][offset_of(i, ys, strides[k])];
      switch (kind) {
        case ir::OpKind::Mul:
          acc *= v;
          break;
        case ir::OpKind::Sub:
          acc -= v;
          break;
        case ir::OpKind::Div:
          acc /= v;
          break;
        case ir::OpKind::Pow:
          acc = std::pow(acc, v);
          break;
        default:
          acc += v;
          break;  // Add, Sum
      }
    }
    y[i] = static_cast<float>(acc);
  }
}

void matmul(const Shape& as, const Shape& bs, const float* a, const float* b, const Shape& ys,
            float* y) {
  const size_t r = ys.size();
  const int64_t m_all = ys[r - 2], n_all = ys[r - 1], k_all = as.back();
  const Shape batch(ys.begin(), ys.end() - 2);
  const Shape a_batch(as.begin(), as.end() - 2), b_batch(bs.begin(), bs.end() - 2);
  // Strides over the broadcast batch dims, in units of whole matrices.
  const std::vector<int64_t> a_strides = broadcast_strides(a_batch, batch);
  const std::vector<int64_t> b_strides = broadcast_strides(b_batch, batch);
  const int64_t batches = ir::num_elements(batch);
  for (int64_t t = 0; t < batches; ++t) {
    const float* at = a + offset_of(t, batch, a_strides) * m_all * k_all;
    const float* bt = b + offset_of(t, batch, b_strides) * k_all * n_all;
    float* yt = y + t * m_all * n_all;
    for (int64_t m = 0; m < m_all; ++m)
      for (int64_t n = 0; n < n_all; ++n) {
        double acc = 0.0;
        for (int64_t k = 0; k < k_all; ++k)
          acc += static_cast<double>(at[m * k_all + k]) * bt[k * n_all + n];
        yt[m * n_all + n] = static_cast<float>(acc);
      }
  }
}

void gemm(const ir::GemmAttrs& g, const Shape& as, const float* a, const float* b, const Shape* cs,
          const float* c, const Shape& ys, float* y) {
  const int64_t m_all = ys[0], n_all = ys[1];
  const int64_t k_all = g.trans_a ? as[0] : as[1];
  std::vector<int64_t> c_strides;
  if (c != nullptr) c_strides = broadcast_strides(*cs, ys);
  for (int64_t m = 0; m < m_all; ++m)
    for (int64_t n = 0; n < n_all; ++n) {
      double acc = 0.0;
      for (int64_t k = 0; k < k_all; ++k) {
        const double av = g.trans_a ? a[k * m_all + m] : a[m * k_all + k];
        const double bv = g.trans_b ? b[n * k_all + k] : b[k * n_all + n];
        acc += av * bv;
      }
      double out = g.alpha * acc;
      if (c != nullptr) out += static_cast<double>(g.beta) * c[m * c_strides[0] + n * c_strides[1]];
      y[m * n_all + n] = static_cast<float>(out);
    }
}

void batch_norm(float epsilon, const Shape& xs, std::span<const float* const> in, float* y) {
  const float *x = in[0], *scale = in[1], *bias = in[2], *mean = in[3], *var = in[4];
  const int64_t channels = xs[1], inner = product(xs, 2, xs.size());
  for (int64_t n = 0; n < xs[0]; ++n)
    for (int64_t c = 0; c < channels; ++c) {
      const double inv_std = 1.0 / std::sqrt(static_cast<double>(var[c]) + epsilon);
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t at = (n * channels + c) * inner + i;
        y[at] = static_cast<float>((x[at] - mean[c]) * inv_std * scale[c] + bias[c]);
      }
    }
}

// Softmax along one axis (opset 13): the other dims index independent rows.
void softmax(int64_t axis, const Shape& xs, const float* x, float* y) {
  const int64_t outer = product(xs, 0, axis), dim = xs[axis];
  const int64_t inner = product(xs, axis + 1, xs.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t base = o * dim * inner + i;
      double max = -std::numeric_limits<double>::infinity(), sum = 0.0;
      for (int64_t d = 0; d < dim; ++d) max = std::max<double>(max, x[base + d * inner]);
      for (int64_t d = 0; d < dim; ++d) sum += std::exp(x[base + d * inner] - max);
      for (int64_t d = 0; d < dim; ++d)
        y[base + d * inner] = static_cast<float>(std::exp(x[base + d * inner] - max) / sum);
    }
}

void layer_norm(const ir::LayerNormAttrs& a, const Shape& xs, const float* x, const float* scale,
                const float* bias, float* y) {
  const int64_t axis = normalize_axis(a.axis, static_cast<int64_t>(xs.size()));
  const int64_t outer = product(xs, 0, axis), inner = product(xs, axis, xs.size());
  for (int64_t o = 0; o < outer; ++o) {
    const float* row = x + o * inner;
    double mean = 0.0, var = 0.0;
    for (int64_t i = 0; i < inner; ++i) mean += row[i];
    mean /= static_cast<double>(inner);
    for (int64_t i = 0; i < inner; ++i) var += (row[i] - mean) * (row[i] - mean);
    var /= static_cast<double>(inner);
    const double inv_std = 1.0 / std::sqrt(var + a.epsilon);
    for (int64_t i = 0; i < inner; ++i)
      y[o * inner + i] = static_cast<float>((row[i] - mean) * inv_std * scale[i] +
                                            (bias != nullptr ? bias[i] : 0.0f));
  }
}

void transpose(const ir::TransposeAttrs& a, const Shape& xs, const float* x, const Shape& ys,
               float* y) {
  const int64_t r = static_cast<int64_t>(xs.size());
  std::vector<int64_t> perm = a.perm;
  if (perm.empty())
    for (int64_t i = r - 1; i >= 0; --i) perm.push_back(i);
  const std::vector<int64_t> x_strides = row_major_strides(xs);
  // Output dim i walks input dim perm[i].
  std::vector<int64_t> strides(r);
  for (int64_t i = 0; i < r; ++i) strides[i] = x_strides[perm[i]];
  const int64_t n = ir::num_elements(ys);
  for (int64_t i = 0; i < n; ++i) y[i] = x[offset_of(i, ys, strides)];
}

void split(const ir::SplitAttrs& a, const Shape& xs, const float* x, std::span<float* const> ys) {
  const int64_t axis = normalize_axis(a.axis, static_cast<int64_t>(xs.size()));
  const int64_t outer = product(xs, 0, axis), inner = product(xs, axis + 1, xs.size());
  const int64_t row = xs[axis] * inner;
  int64_t begin = 0;
  for (size_t k = 0; k < ys.size(); ++k) {
    const int64_t chunk = a.sizes[k] * inner;
    for (int64_t o = 0; o < outer; ++o) std::copy_n(x + o * row + begin, chunk, ys[k] + o * chunk);
    begin += chunk;
  }
}

void pad(const ir::PadAttrs& a, const Shape& xs, const float* x, const Shape& ys, float* y) {
  const size_t r = xs.size();
  const std::vector<int64_t> x_strides = row_major_strides(xs);
  const int64_t n = ir::num_elements(ys);
  for (int64_t i = 0; i < n; ++i) {
    int64_t rest = i, offset = 0;
    bool inside = true;
    for (size_t d = r; d-- > 0;) {
      const int64_t at = rest % ys[d] - a.pads[d];
      rest /= ys[d];
      inside = inside && at >= 0 && at < xs[d];
      offset += at * x_strides[d];
    }
    y[i] = inside ? x[offset] : a.value;
  }
}

// ReduceMean: every output element averages the input elements that agree with it on the
// kept dims.
void reduce_mean(const ir::ReduceAttrs& a, const Shape& xs, const float* x, float* y) {
  const size_t r = xs.size();
  std::vector<bool> reduced(r, false);
  for (int64_t axis : a.axes) reduced[axis] = true;
  // The output index of each input element, computed with the kept dims only.
  Shape kept;
  for (size_t d = 0; d < r; ++d) kept.push_back(reduced[d] ? 1 : xs[d]);
  const int64_t n = ir::num_elements(xs), out_n = ir::num_elements(kept);
  std::vector<double> sum(out_n, 0.0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t rest = i, out = 0, scale = 1;
    for (size_t d = r; d-- > 0;) {
      const int64_t at = rest % xs[d];
      rest /= xs[d];
      if (!reduced[d]) out += at * scale;
      scale *= kept[d];
    }
    sum[out] += x[i];
  }
  const double count = static_cast<double>(n / out_n);
  for (int64_t o = 0; o < out_n; ++o) y[o] = static_cast<float>(sum[o] / count);
}

// LRN across channels, as the ONNX operator defines it (the window is uneven for even sizes).
void lrn(const ir::LrnAttrs& a, const Shape& xs, const float* x, float* y) {
  const int64_t channels = xs[1], plane = xs[2] * xs[3];
  const int64_t below = (a.size - 1) / 2, above = a.size - 1 - below;
  for (int64_t n = 0; n < xs[0]; ++n)
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t p = 0; p < plane; ++p) {
        double square_sum = 0.0;
        for (int64_t k = std::max<int64_t>(0, c - below); k <= std::min(channels - 1, c + above);
             ++k) {
          const double v = x[(n * channels + k) * plane + p];
          square_sum += v * v;
        }
        const int64_t at = (n * channels + c) * plane + p;
        const double scale = a.bias + static_cast<double>(a.alpha) / a.size * square_sum;
        y[at] = static_cast<float>(x[at] / std::pow(scale, static_cast<double>(a.beta)));
      }
}

void unary(const ir::Node& node, int64_t n, const float* x, float* y) {
  for (int64_t i = 0; i < n; ++i) {
    switch (node.kind) {
      case ir::OpKind::Relu:
        y[i] = relu(x[i]);
        break;
      case ir::OpKind::Sigmoid:
        y[i] = sigmoid(x[i]);
        break;
      case ir::OpKind::Tanh:
        y[i] = std::tanh(x[i]);
        break;
      case ir::OpKind::Gelu: {
        const auto* g = std::get_if<ir::GeluAttrs>(&node.attrs);
        y[i] = gelu(x[i], g != nullptr && g->tanh_approximation);
        break;
      }
      case ir::OpKind::Clip: {
        const auto& a = std::get<ir::ClipAttrs>(node.attrs);
        y[i] = std::min(std::max(x[i], a.min), a.max);
        break;
      }
      case ir::OpKind::HardSigmoid: {
        const auto& a = std::get<ir::HardSigmoidAttrs>(node.attrs);
        y[i] = hard_sigmoid(x[i], a.alpha, a.beta);
        break;
      }
      case ir::OpKind::HardSwish:
        y[i] = static_cast<float>(x[i] * static_cast<double>(hard_sigmoid(x[i], 1.0f / 6, 0.5f)));
        break;
      case ir::OpKind::Erf:
        y[i] = static_cast<float>(std::erf(static_cast<double>(x[i])));
        break;
      case ir::OpKind::Sqrt:
        y[i] = static_cast<float>(std::sqrt(static_cast<double>(x[i])));
        break;
      default:
        BRAID_ASSERT(false, "not a unary op");
    }
  }
}

// ---- ops on any dtype: elements are moved as bytes of the value's element size ----

const std::byte* bytes_of(const float* p) {
  return reinterpret_cast<const std::byte*>(p);
}
std::byte* bytes_of(float* p) {
  return reinterpret_cast<std::byte*>(p);
}

// Expand: element i of y is the broadcast element of x.
void expand(const Shape& xs, const std::byte* x, int64_t size, const Shape& ys, std::byte* y) {
  const std::vector<int64_t> strides = broadcast_strides(xs, ys);
  const int64_t n = ir::num_elements(ys);
  for (int64_t i = 0; i < n; ++i)
    std::memcpy(y + i * size, x + offset_of(i, ys, strides) * size, static_cast<size_t>(size));
}

void where(std::span<const Shape* const> shapes, std::span<const float* const> in, int64_t size,
           const Shape& ys, std::byte* y) {
  std::vector<std::vector<int64_t>> strides;
  for (const Shape* s : shapes) strides.push_back(broadcast_strides(*s, ys));
  const auto* condition = reinterpret_cast<const uint8_t*>(in[0]);
  const int64_t n = ir::num_elements(ys);
  for (int64_t i = 0; i < n; ++i) {
    const size_t pick = condition[offset_of(i, ys, strides[0])] != 0 ? 1 : 2;
    std::memcpy(y + i * size, bytes_of(in[pick]) + offset_of(i, ys, strides[pick]) * size,
                static_cast<size_t>(size));
  }
}

// Gather: y[outer, j, inner] = x[outer, indices[j], inner], negative indices from the end.
void gather(int64_t axis, const Shape& xs, const std::byte* x, std::span<const int64_t> indices,
            int64_t size, std::byte* y) {
  const int64_t outer = product(xs, 0, axis), dim = xs[axis];
  const int64_t inner = product(xs, axis + 1, xs.size()) * size;
  std::byte* at = y;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t index : indices) {
      BRAID_CHECK(index >= -dim && index < dim, ErrorCode::kInvalidArgument, "Gather: index ",
                  index, " out of range for dim ", dim);
      if (index < 0) index += dim;
      std::memcpy(at, x + (o * dim + index) * inner, static_cast<size_t>(inner));
      at += inner;
    }
}

// One element of any dtype, as double (float32 and int64 up to 2^53 convert exactly).
double load(ir::DType t, const float* p, int64_t i) {
  switch (t) {
    case ir::DType::kFloat32:
      return p[i];
    case ir::DType::kInt64:
      return static_cast<double>(reinterpret_cast<const int64_t*>(p)[i]);
    case ir::DType::kBool:
      return reinterpret_cast<const uint8_t*>(p)[i] != 0 ? 1.0 : 0.0;
  }
  BRAID_ASSERT(false, "bad dtype");
}

void cast(ir::DType from, const float* x, ir::DType to, int64_t n, float* y) {
  for (int64_t i = 0; i < n; ++i) {
    // int64 -> int64 copies exactly; everything else goes through double.
    if (from == ir::DType::kInt64 && to == ir::DType::kInt64) {
      reinterpret_cast<int64_t*>(y)[i] = reinterpret_cast<const int64_t*>(x)[i];
      continue;
    }
    const double v = load(from, x, i);
    switch (to) {
      case ir::DType::kFloat32:
        y[i] = static_cast<float>(v);
        break;
      case ir::DType::kInt64:
        reinterpret_cast<int64_t*>(y)[i] = static_cast<int64_t>(v);
        break;
      case ir::DType::kBool:
        reinterpret_cast<uint8_t*>(y)[i] = v != 0.0 ? 1 : 0;
        break;
    }
  }
}

void equal(ir::DType t, std::span<const Shape* const> shapes, std::span<const float* const> in,
           const Shape& ys, float* y) {
  const std::vector<int64_t> a = broadcast_strides(*shapes[0], ys);
  const std::vector<int64_t> b = broadcast_strides(*shapes[1], ys);
  const int64_t n = ir::num_elements(ys);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t ia = offset_of(i, ys, a), ib = offset_of(i, ys, b);
    const bool same = t == ir::DType::kInt64 ? reinterpret_cast<const int64_t*>(in[0])[ia] ==
                                                   reinterpret_cast<const int64_t*>(in[1])[ib]
                                             : load(t, in[0], ia) == load(t, in[1], ib);
    reinterpret_cast<uint8_t*>(y)[i] = same ? 1 : 0;
  }
}

void slice(const std::vector<ir::SliceDim>& dims, const Shape& xs, const std::byte* x, int64_t size,
           const Shape& ys, std::byte* y) {
  const std::vector<int64_t> x_strides = row_major_strides(xs);
  const int64_t n = ir::num_elements(ys);
  for (int64_t i = 0; i < n; ++i) {
    int64_t rest = i, offset = 0;
    for (size_t d = ys.size(); d-- > 0;) {
      offset += (dims[d].start + (rest % ys[d]) * dims[d].step) * x_strides[d];
      rest /= ys[d];
    }
    std::memcpy(y + i * size, x + offset * size, static_cast<size_t>(size));
  }
}

// Each output element sums the inputs that land on it: oh = ih * stride - pad + kh * dilation.
void conv_transpose(const ir::ConvTransposeAttrs& a, const Shape& xs, const Shape& ws,
                    const float* x, const float* w, const float* bias, const Shape& ys, float* y) {
  const int64_t n_batch = xs[0], ic_total = xs[1], h = xs[2], wd = xs[3];
  const int64_t oc_group = ws[1], kh_size = ws[2], kw_size = ws[3];
  const int64_t ic_group = ic_total / a.groups, oc_total = ys[1], oh_size = ys[2], ow_size = ys[3];
  for (int64_t n = 0; n < n_batch; ++n)
    for (int64_t oc = 0; oc < oc_total; ++oc) {
      const int64_t g = oc / oc_group, ocl = oc % oc_group;
      for (int64_t oh = 0; oh < oh_size; ++oh)
        for (int64_t ow = 0; ow < ow_size; ++ow) {
          double acc = bias != nullptr ? bias[oc] : 0.0;
          for (int64_t icl = 0; icl < ic_group; ++icl) {
            const int64_t ic = g * ic_group + icl;
            for (int64_t kh = 0; kh < kh_size; ++kh) {
              const int64_t th = oh + a.pads[0] - kh * a.dilation[0];
              if (th < 0 || th % a.stride[0] != 0 || th / a.stride[0] >= h) continue;
              for (int64_t kw = 0; kw < kw_size; ++kw) {
                const int64_t tw = ow + a.pads[1] - kw * a.dilation[1];
                if (tw < 0 || tw % a.stride[1] != 0 || tw / a.stride[1] >= wd) continue;
                acc +=
                    static_cast<double>(
                        x[((n * ic_total + ic) * h + th / a.stride[0]) * wd + tw / a.stride[1]]) *
                    w[((ic * oc_group + ocl) * kh_size + kh) * kw_size + kw];
              }
            }
          }
          y[((n * oc_total + oc) * oh_size + oh) * ow_size + ow] = static_cast<float>(acc);
        }
    }
}

// The tensor product of the per-axis taps (ir/resize.h), one output element at a time.
void resize(const ir::ResizeAttrs& a, const Shape& xs, const float* x, const Shape& ys, float* y) {
  const std::vector<ir::ResizeTaps> taps = ir::resize_taps(a, xs);
  const std::vector<int64_t> x_strides = row_major_strides(xs);
  const size_t rank = ys.size();
  std::vector<int64_t> at(rank);
  auto sum = [&](auto&& self, size_t k, int64_t offset) -> double {
    if (k == rank) return x[offset];
    double acc = 0;
    const ir::ResizeTaps& t = taps[k];
    for (int64_t j = t.begin[at[k]]; j < t.begin[at[k] + 1]; ++j)
      acc += t.weight[j] * self(self, k + 1, offset + t.index[j] * x_strides[k]);
    return acc;
  };
  const int64_t n = ir::num_elements(ys);
  for (int64_t i = 0; i < n; ++i) {
    bool outside = false;
    for (size_t d = rank, rest = static_cast<size_t>(i); d-- > 0;) {
      at[d] = static_cast<int64_t>(rest % static_cast<size_t>(ys[d]));
      rest /= static_cast<size_t>(ys[d]);
      outside = outside || (!taps[d].outside.empty() && taps[d].outside[at[d]] != 0);
    }
    y[i] = outside ? a.extrapolation_value : static_cast<float>(sum(sum, 0, 0));
  }
}

}  // namespace

void run_op(const ir::Graph& graph, NodeId id, std::span<const float* const> in,
            std::span<float* const> out) {
  const ir::Node& node = graph.node(id);
  BRAID_ASSERT(in.size() == node.inputs.size() && out.size() == node.outputs.size(), "node '",
               node.name, "': wrong number of buffers");
  auto shape = [&](size_t i) -> const Shape& { return graph.value(node.inputs[i]).type.shape; };
  const Shape& ys = graph.value(node.outputs[0]).type.shape;
  const int64_t y_elements = ir::num_elements(ys);
  const int64_t y_size = ir::size_of(graph.value(node.outputs[0]).type.dtype);
  float* y = out[0];

  switch (node.kind) {
    case ir::OpKind::Conv:
      conv(std::get<ir::ConvAttrs>(node.attrs), shape(0), shape(1), in[0], in[1],
           in.size() > 2 ? in[2] : nullptr, ys, y);
      return;
    case ir::OpKind::Relu:
    case ir::OpKind::Sigmoid:
    case ir::OpKind::Tanh:
    case ir::OpKind::Gelu:
    case ir::OpKind::Clip:
    case ir::OpKind::HardSigmoid:
    case ir::OpKind::HardSwish:
      unary(node, y_elements, in[0], y);
      return;
    case ir::OpKind::ReduceMean:
      reduce_mean(std::get<ir::ReduceAttrs>(node.attrs), shape(0), in[0], y);
      return;
    case ir::OpKind::LRN:
      lrn(std::get<ir::LrnAttrs>(node.attrs), shape(0), in[0], y);
      return;
    case ir::OpKind::MaxPool:
    case ir::OpKind::AveragePool:
      pool(node.kind == ir::OpKind::MaxPool, std::get<ir::PoolAttrs>(node.attrs), shape(0), in[0],
           ys, y);
      return;
    case ir::OpKind::GlobalAveragePool: {
      const Shape& xs = shape(0);
      const int64_t plane = xs[2] * xs[3];
      for (int64_t p = 0; p < xs[0] * xs[1]; ++p) {
        double sum = 0.0;
        for (int64_t i = 0; i < plane; ++i) sum += in[0][p * plane + i];
        y[p] = static_cast<float>(sum / plane);
      }
      return;
    }
    case ir::OpKind::Concat: {
      const int64_t axis =
          normalize_axis(std::get<ir::AxisAttrs>(node.attrs).axis, static_cast<int64_t>(ys.size()));
      const int64_t outer = product(ys, 0, axis), inner = product(ys, axis + 1, ys.size());
      float* at = y;
      for (int64_t o = 0; o < outer; ++o)
        for (size_t k = 0; k < in.size(); ++k) {
          const int64_t chunk = shape(k)[axis] * inner;
          at = std::copy_n(in[k] + o * chunk, chunk, at);
        }
      return;
    }
    case ir::OpKind::Add:
    case ir::OpKind::Mul:
    case ir::OpKind::Sum: {
      std::vector<const Shape*> shapes;
      for (size_t k = 0; k < in.size(); ++k) shapes.push_back(&shape(k));
      broadcast_elementwise(node.kind, in, shapes, ys, y);
      return;
    }
    case ir::OpKind::MatMul:
      matmul(shape(0), shape(1), in[0], in[1], ys, y);
      return;
    case ir::OpKind::Gemm:
      gemm(std::get<ir::GemmAttrs>(node.attrs), shape(0), in[0], in[1],
           in.size() > 2 ? &shape(2) : nullptr, in.size() > 2 ? in[2] : nullptr, ys, y);
      return;
    case ir::OpKind::BatchNormalization:
      batch_norm(std::get<ir::BatchNormAttrs>(node.attrs).epsilon, shape(0), in, y);
      return;
    case ir::OpKind::Softmax:
      softmax(
          normalize_axis(std::get<ir::AxisAttrs>(node.attrs).axis, static_cast<int64_t>(ys.size())),
          shape(0), in[0], y);
      return;
    case ir::OpKind::LayerNormalization:
      layer_norm(std::get<ir::LayerNormAttrs>(node.attrs), shape(0), in[0], in[1],
                 in.size() > 2 ? in[2] : nullptr, y);
      return;
    case ir::OpKind::Reshape:
    case ir::OpKind::Flatten:
    case ir::OpKind::Identity:
      std::memcpy(y, in[0], static_cast<size_t>(graph.value(node.outputs[0]).type.bytes()));
      return;
    case ir::OpKind::Transpose:
      transpose(std::get<ir::TransposeAttrs>(node.attrs), shape(0), in[0], ys, y);
      return;
    case ir::OpKind::Split:
      split(std::get<ir::SplitAttrs>(node.attrs), shape(0), in[0], out);
      return;
    case ir::OpKind::Pad:
      pad(std::get<ir::PadAttrs>(node.attrs), shape(0), in[0], ys, y);
      return;
    case ir::OpKind::Erf:
    case ir::OpKind::Sqrt:
      unary(node, y_elements, in[0], y);
      return;
    case ir::OpKind::Sub:
    case ir::OpKind::Div:
    case ir::OpKind::Pow: {
      const std::array<const Shape*, 2> shapes = {&shape(0), &shape(1)};
      broadcast_elementwise(node.kind, in, shapes, ys, y);
      return;
    }
    case ir::OpKind::Where: {
      const std::array<const Shape*, 3> shapes = {&shape(0), &shape(1), &shape(2)};
      where(shapes, in, y_size, ys, bytes_of(y));
      return;
    }
    case ir::OpKind::Expand:
      expand(shape(0), bytes_of(in[0]), y_size, ys, bytes_of(y));
      return;
    case ir::OpKind::Gather: {
      const auto& a = std::get<ir::GatherAttrs>(node.attrs);
      const int64_t axis = normalize_axis(a.axis, static_cast<int64_t>(shape(0).size()));
      std::span<const int64_t> indices = a.indices;
      if (in.size() > 1)
        indices = {reinterpret_cast<const int64_t*>(in[1]),
                   static_cast<size_t>(ir::num_elements(shape(1)))};
      gather(axis, shape(0), bytes_of(in[0]), indices, y_size, bytes_of(y));
      return;
    }
    case ir::OpKind::Cast:
      cast(graph.value(node.inputs[0]).type.dtype, in[0], std::get<ir::CastAttrs>(node.attrs).to,
           y_elements, y);
      return;
    case ir::OpKind::Equal: {
      const std::array<const Shape*, 2> shapes = {&shape(0), &shape(1)};
      equal(graph.value(node.inputs[0]).type.dtype, shapes, in, ys, y);
      return;
    }
    case ir::OpKind::Not: {
      const auto* x = reinterpret_cast<const uint8_t*>(in[0]);
      auto* out = reinterpret_cast<uint8_t*>(y);
      for (int64_t i = 0; i < y_elements; ++i) out[i] = x[i] != 0 ? 0 : 1;
      return;
    }
    case ir::OpKind::ConvTranspose:
      conv_transpose(std::get<ir::ConvTransposeAttrs>(node.attrs), shape(0), shape(1), in[0], in[1],
                     in.size() > 2 ? in[2] : nullptr, ys, y);
      return;
    case ir::OpKind::Resize:
      resize(std::get<ir::ResizeAttrs>(node.attrs), shape(0), in[0], ys, y);
      return;
    case ir::OpKind::Slice:
      slice(ir::slice_dims(std::get<ir::SliceAttrs>(node.attrs), shape(0), node.name), shape(0),
            bytes_of(in[0]), y_size, ys, bytes_of(y));
      return;
  }
  BRAID_ASSERT(false, "unhandled op kind");
}

}  // namespace braid::exec::ref
