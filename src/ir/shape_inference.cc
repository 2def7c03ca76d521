#include "ir/shape_inference.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "base/error.h"

namespace braid::ir {
namespace {

constexpr auto kBad = ErrorCode::kInvalidModel;

template <typename A>
const A& attrs_as(const OpAttrs& attrs, std::string_view node, OpKind kind) {
  const A* a = std::get_if<A>(&attrs);
  BRAID_CHECK(a != nullptr, ErrorCode::kInternal, "node '", node, "' (", to_string(kind),
              "): wrong attribute struct");
  return *a;
}

void check_arity(std::span<const TensorType> in, size_t lo, size_t hi, std::string_view node,
                 OpKind kind) {
  BRAID_CHECK(in.size() >= lo && in.size() <= hi, kBad, "node '", node, "' (", to_string(kind),
              "): expected ",
              lo == hi ? std::to_string(lo) : std::to_string(lo) + ".." + std::to_string(hi),
              " inputs, got ", in.size());
}

void check_rank(const TensorType& t, int64_t rank, std::string_view node, OpKind kind,
                std::string_view what) {
  BRAID_CHECK(t.rank() == rank, kBad, "node '", node, "' (", to_string(kind), "): ", what,
              " must be ", rank, "-D, got ", to_string(t.shape));
}

int64_t normalize_axis(int64_t axis, int64_t rank, std::string_view node, OpKind kind) {
  if (axis < 0) axis += rank;
  BRAID_CHECK(axis >= 0 && axis < rank, kBad, "node '", node, "' (", to_string(kind), "): axis ",
              axis, " out of range for rank ", rank);
  return axis;
}

// Numpy-style broadcast of two shapes (Add, Mul, Sum).
Shape broadcast(const Shape& a, const Shape& b, std::string_view node, OpKind kind) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    BRAID_CHECK(da == db || da == 1 || db == 1, kBad, "node '", node, "' (", to_string(kind),
                "): shapes ", to_string(a), " and ", to_string(b), " do not broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

void check_window(const std::array<int64_t, 2>& kernel, const std::array<int64_t, 2>& stride,
                  const std::array<int64_t, 4>& pads, std::string_view node, OpKind kind) {
  for (int i = 0; i < 2; ++i) {
    BRAID_CHECK(kernel[i] > 0 && stride[i] > 0, kBad, "node '", node, "' (", to_string(kind),
                "): kernel and stride must be positive");
  }
  for (int64_t p : pads)
    BRAID_CHECK(p >= 0, kBad, "node '", node, "' (", to_string(kind), "): negative padding");
}

std::vector<TensorType> infer_conv(const ConvAttrs& a, std::span<const TensorType> in,
                                   std::string_view node) {
  const OpKind k = OpKind::Conv;
  check_arity(in, 2, 3, node, k);
  check_rank(in[0], 4, node, k, "input");
  check_rank(in[1], 4, node, k, "weights");
  check_window(a.kernel, a.stride, a.pads, node, k);
  const Shape& x = in[0].shape;
  const Shape& w = in[1].shape;
  BRAID_CHECK(a.groups >= 1 && x[1] % a.groups == 0 && w[0] % a.groups == 0, kBad, "node '", node,
              "' (Conv): groups=", a.groups, " does not divide channels ", x[1], " -> ", w[0]);
  BRAID_CHECK(w[1] * a.groups == x[1], kBad, "node '", node, "' (Conv): weights ", to_string(w),
              " expect ", w[1] * a.groups, " input channels, input has ", x[1]);
  BRAID_CHECK(w[2] == a.kernel[0] && w[3] == a.kernel[1], kBad, "node '", node,
              "' (Conv): kernel_shape ", a.kernel[0], "x", a.kernel[1], " differs from weights ",
              to_string(w));
  if (in.size() == 3)
    BRAID_CHECK(in[2].shape == Shape{w[0]}, kBad, "node '", node, "' (Conv): bias ",
                to_string(in[2].shape), " must be [", w[0], "]");
  Shape out{x[0], w[0], 0, 0};
  for (int i = 0; i < 2; ++i) {
    out[2 + i] = window_output_size(x[2 + i], a.kernel[i], a.stride[i], a.pads[i], a.pads[2 + i],
                                    a.dilation[i], false);
    BRAID_CHECK(out[2 + i] > 0, kBad, "node '", node, "' (Conv): input ", to_string(x),
                " too small for the kernel");
  }
  return {{DType::kFloat32, out}};
}

std::vector<TensorType> infer_conv_transpose(const ConvTransposeAttrs& a,
                                             std::span<const TensorType> in,
                                             std::string_view node) {
  const OpKind k = OpKind::ConvTranspose;
  check_arity(in, 2, 3, node, k);
  check_rank(in[0], 4, node, k, "input");
  check_rank(in[1], 4, node, k, "weights");
  const Shape& x = in[0].shape;
  const Shape& w = in[1].shape;  // [IC, OC/groups, KH, KW]
  for (int i = 0; i < 2; ++i) {
    BRAID_CHECK(a.kernel[i] > 0 && a.stride[i] > 0 && a.dilation[i] > 0, kBad, "node '", node,
                "' (ConvTranspose): kernel, stride and dilation must be positive");
    BRAID_CHECK(a.pads[i] >= 0 && a.output_padding[i] >= 0, kBad, "node '", node,
                "' (ConvTranspose): negative begin padding or output_padding");
  }
  BRAID_CHECK(a.groups >= 1 && x[1] % a.groups == 0, kBad, "node '", node,
              "' (ConvTranspose): groups=", a.groups, " does not divide the ", x[1],
              " input channels");
  BRAID_CHECK(w[0] == x[1], kBad, "node '", node, "' (ConvTranspose): weights ", to_string(w),
              " expect ", w[0], " input channels, input has ", x[1]);
  BRAID_CHECK(w[2] == a.kernel[0] && w[3] == a.kernel[1], kBad, "node '", node,
              "' (ConvTranspose): kernel_shape ", a.kernel[0], "x", a.kernel[1],
              " differs from weights ", to_string(w));
  const int64_t oc = w[1] * a.groups;
  if (in.size() == 3)
    BRAID_CHECK(in[2].shape == Shape{oc}, kBad, "node '", node, "' (ConvTranspose): bias ",
                to_string(in[2].shape), " must be [", oc, "]");
  Shape out{x[0], oc, 0, 0};
  for (int i = 0; i < 2; ++i) {
    out[2 + i] = a.stride[i] * (x[2 + i] - 1) + a.output_padding[i] +
                 a.dilation[i] * (a.kernel[i] - 1) + 1 - a.pads[i] - a.pads[2 + i];
    BRAID_CHECK(out[2 + i] > 0, kBad, "node '", node, "' (ConvTranspose): the pads leave an ",
                "empty output for input ", to_string(x));
  }
  return {{DType::kFloat32, out}};
}

std::vector<TensorType> infer_resize(const ResizeAttrs& a, const TensorType& x,
                                     std::string_view node) {
  const size_t r = x.shape.size();
  BRAID_CHECK(a.sizes.size() == r && a.scales.size() == r, kBad, "node '", node,
              "' (Resize): ", a.sizes.size(), " sizes and ", a.scales.size(), " scales for a rank-",
              r, " input");
  BRAID_CHECK(a.roi.empty() || a.roi.size() == 2 * r, kBad, "node '", node, "' (Resize): roi has ",
              a.roi.size(), " values, expected ", 2 * r);
  for (size_t i = 0; i < r; ++i) {
    BRAID_CHECK(a.sizes[i] > 0, ErrorCode::kUnsupported, "node '", node, "' (Resize): output dim ",
                i, " is ", a.sizes[i], "; braid does not support zero-size tensors");
    BRAID_CHECK(std::isfinite(a.scales[i]) && a.scales[i] > 0, kBad, "node '", node,
                "' (Resize): scale ", a.scales[i], " of dim ", i, " is not positive");
  }
  return {{x.dtype, a.sizes}};
}

std::vector<TensorType> infer_pool(OpKind k, const PoolAttrs& a, std::span<const TensorType> in,
                                   std::string_view node) {
  check_arity(in, 1, 1, node, k);
  check_rank(in[0], 4, node, k, "input");
  check_window(a.kernel, a.stride, a.pads, node, k);
  const Shape& x = in[0].shape;
  Shape out{x[0], x[1], 0, 0};
  for (int i = 0; i < 2; ++i) {
    BRAID_CHECK(a.pads[i] < a.kernel[i] && a.pads[2 + i] < a.kernel[i], kBad, "node '", node, "' (",
                to_string(k), "): padding must be smaller than the kernel");
    out[2 + i] = window_output_size(x[2 + i], a.kernel[i], a.stride[i], a.pads[i], a.pads[2 + i], 1,
                                    a.ceil_mode);
    BRAID_CHECK(out[2 + i] > 0, kBad, "node '", node, "' (", to_string(k), "): input ",
                to_string(x), " too small for the window");
  }
  return {{DType::kFloat32, out}};
}

std::vector<TensorType> infer_matmul(std::span<const TensorType> in, std::string_view node) {
  const OpKind k = OpKind::MatMul;
  check_arity(in, 2, 2, node, k);
  Shape a = in[0].shape, b = in[1].shape;
  BRAID_CHECK(a.size() >= 2 && b.size() >= 2, kBad, "node '", node,
              "' (MatMul): inputs must be at least 2-D, got ", to_string(a), " and ", to_string(b));
  BRAID_CHECK(a.back() == b[b.size() - 2], kBad, "node '", node,
              "' (MatMul): inner dims differ: ", to_string(a), " x ", to_string(b));
  Shape batch_a(a.begin(), a.end() - 2), batch_b(b.begin(), b.end() - 2);
  Shape out = broadcast(batch_a, batch_b, node, k);
  out.push_back(a[a.size() - 2]);
  out.push_back(b.back());
  return {{DType::kFloat32, out}};
}

std::vector<TensorType> infer_gemm(const GemmAttrs& g, std::span<const TensorType> in,
                                   std::string_view node) {
  const OpKind k = OpKind::Gemm;
  check_arity(in, 2, 3, node, k);
  check_rank(in[0], 2, node, k, "A");
  check_rank(in[1], 2, node, k, "B");
  int64_t m = g.trans_a ? in[0].shape[1] : in[0].shape[0];
  int64_t ka = g.trans_a ? in[0].shape[0] : in[0].shape[1];
  int64_t kb = g.trans_b ? in[1].shape[1] : in[1].shape[0];
  int64_t n = g.trans_b ? in[1].shape[0] : in[1].shape[1];
  BRAID_CHECK(ka == kb, kBad, "node '", node,
              "' (Gemm): inner dims differ: ", to_string(in[0].shape), " x ",
              to_string(in[1].shape));
  Shape out{m, n};
  if (in.size() == 3) {
    Shape c = broadcast(in[2].shape, out, node, k);
    BRAID_CHECK(c == out, kBad, "node '", node, "' (Gemm): C ", to_string(in[2].shape),
                " does not broadcast to ", to_string(out));
  }
  return {{DType::kFloat32, out}};
}

std::vector<TensorType> infer_concat(const AxisAttrs& a, std::span<const TensorType> in,
                                     std::string_view node) {
  const OpKind k = OpKind::Concat;
  BRAID_CHECK(!in.empty(), kBad, "node '", node, "' (Concat): no inputs");
  int64_t axis = normalize_axis(a.axis, in[0].rank(), node, k);
  Shape out = in[0].shape;
  out[axis] = 0;
  for (const TensorType& t : in) {
    BRAID_CHECK(t.rank() == in[0].rank(), kBad, "node '", node, "' (Concat): rank mismatch ",
                to_string(t.shape), " vs ", to_string(in[0].shape));
    for (int64_t d = 0; d < t.rank(); ++d)
      BRAID_CHECK(d == axis || t.shape[d] == in[0].shape[d], kBad, "node '", node,
                  "' (Concat): shape mismatch ", to_string(t.shape), " vs ", to_string(in[0].shape),
                  " off axis ", axis);
    out[axis] += t.shape[axis];
  }
  return {{DType::kFloat32, out}};
}

std::vector<TensorType> infer_reshape(const ReshapeAttrs& a, const TensorType& x,
                                      std::string_view node) {
  Shape out = a.shape;
  int64_t infer_at = -1, known = 1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == 0) {
      BRAID_CHECK(i < x.shape.size(), kBad, "node '", node, "' (Reshape): 0 at dim ", i,
                  " beyond input rank");
      out[i] = x.shape[i];
    }
    if (out[i] == -1) {
      BRAID_CHECK(infer_at < 0, kBad, "node '", node, "' (Reshape): more than one -1");
      infer_at = static_cast<int64_t>(i);
    } else {
      BRAID_CHECK(out[i] > 0, kBad, "node '", node, "' (Reshape): bad dim ", out[i]);
      known *= out[i];
    }
  }
  if (infer_at >= 0) {
    BRAID_CHECK(known > 0 && x.elements() % known == 0, kBad, "node '", node,
                "' (Reshape): cannot reshape ", to_string(x.shape), " to ", to_string(a.shape));
    out[infer_at] = x.elements() / known;
  }
  BRAID_CHECK(num_elements(out) == x.elements(), kBad, "node '", node,
              "' (Reshape): cannot reshape ", to_string(x.shape), " to ", to_string(a.shape));
  return {{x.dtype, out}};
}

// Axes must already be normalized, sorted and unique (the importer does that); checked here
// because a graph can also come from a .dag.json or a builder.
std::vector<TensorType> infer_reduce(const ReduceAttrs& a, const TensorType& x,
                                     std::string_view node, OpKind kind) {
  BRAID_CHECK(!a.axes.empty(), kBad, "node '", node, "' (", to_string(kind), "): no axes");
  for (size_t i = 0; i < a.axes.size(); ++i)
    BRAID_CHECK(a.axes[i] >= 0 && a.axes[i] < x.rank() && (i == 0 || a.axes[i - 1] < a.axes[i]),
                kBad, "node '", node, "' (", to_string(kind),
                "): axes must be sorted, unique and in [0, ", x.rank(), ")");
  Shape out;
  for (int64_t d = 0; d < x.rank(); ++d) {
    const bool reduced = std::binary_search(a.axes.begin(), a.axes.end(), d);
    if (!reduced)
      out.push_back(x.shape[d]);
    else if (a.keepdims)
      out.push_back(1);
  }
  return {{x.dtype, out}};
}

// The ops that read or write int64 or bool tensors; every other op runs on float32 only.
bool takes_any_dtype(OpKind k) {
  switch (k) {
    case OpKind::Reshape:
    case OpKind::Flatten:
    case OpKind::Identity:
    case OpKind::Where:
    case OpKind::Expand:
    case OpKind::Gather:
    case OpKind::Cast:
    case OpKind::Equal:
    case OpKind::Not:
    case OpKind::Slice:
      return true;
    default:
      return false;
  }
}

std::vector<TensorType> infer_where(std::span<const TensorType> in, std::string_view node) {
  const OpKind k = OpKind::Where;
  check_arity(in, 3, 3, node, k);
  BRAID_CHECK(in[0].dtype == DType::kBool, kBad, "node '", node, "' (Where): condition is ",
              to_string(in[0].dtype), ", must be bool");
  BRAID_CHECK(in[1].dtype == in[2].dtype, kBad, "node '", node, "' (Where): X is ",
              to_string(in[1].dtype), " but Y is ", to_string(in[2].dtype));
  Shape out = broadcast(broadcast(in[0].shape, in[1].shape, node, k), in[2].shape, node, k);
  return {{in[1].dtype, out}};
}

std::vector<TensorType> infer_gather(const GatherAttrs& a, std::span<const TensorType> in,
                                     std::string_view node) {
  const OpKind k = OpKind::Gather;
  check_arity(in, 1, 2, node, k);
  const int64_t axis = normalize_axis(a.axis, in[0].rank(), node, k);
  Shape indices = a.indices_shape;
  if (in.size() == 2) {
    BRAID_CHECK(in[1].dtype == DType::kInt64, kBad, "node '", node, "' (Gather): indices are ",
                to_string(in[1].dtype), ", must be int64");
    indices = in[1].shape;
  } else {
    BRAID_CHECK(num_elements(a.indices_shape) == static_cast<int64_t>(a.indices.size()), kBad,
                "node '", node, "' (Gather): ", a.indices.size(), " constant indices for shape ",
                to_string(a.indices_shape));
    const int64_t dim = in[0].shape[axis];
    for (int64_t i : a.indices)
      BRAID_CHECK(i >= -dim && i < dim, kBad, "node '", node, "' (Gather): index ", i,
                  " out of range for dim ", dim);
  }
  Shape out(in[0].shape.begin(), in[0].shape.begin() + axis);
  out.insert(out.end(), indices.begin(), indices.end());
  out.insert(out.end(), in[0].shape.begin() + axis + 1, in[0].shape.end());
  return {{in[0].dtype, out}};
}

}  // namespace

std::vector<SliceDim> slice_dims(const SliceAttrs& a, const Shape& shape, std::string_view node) {
  const OpKind k = OpKind::Slice;
  const int64_t r = static_cast<int64_t>(shape.size());
  const size_t n = a.starts.size();
  BRAID_CHECK(a.ends.size() == n && (a.axes.empty() || a.axes.size() == n) &&
                  (a.steps.empty() || a.steps.size() == n),
              kBad, "node '", node, "' (Slice): starts, ends, axes and steps differ in length");
  std::vector<SliceDim> dims(r);
  for (int64_t d = 0; d < r; ++d) dims[d] = {0, 1, shape[d]};
  std::vector<bool> seen(r, false);
  for (size_t i = 0; i < n; ++i) {
    const int64_t axis =
        normalize_axis(a.axes.empty() ? static_cast<int64_t>(i) : a.axes[i], r, node, k);
    BRAID_CHECK(!seen[axis], kBad, "node '", node, "' (Slice): axis ", axis, " repeats");
    seen[axis] = true;
    const int64_t step = a.steps.empty() ? 1 : a.steps[i], dim = shape[axis];
    BRAID_CHECK(step != 0, kBad, "node '", node, "' (Slice): step 0");
    // ONNX: negative start/end add dim, then clamp to [0, dim] (step > 0) or [-1, dim-1].
    auto resolve = [&](int64_t v) {
      if (v < 0) v = std::max<int64_t>(v, -dim - 1) + dim;
      return step > 0 ? std::clamp<int64_t>(v, 0, dim) : std::clamp<int64_t>(v, -1, dim - 1);
    };
    const int64_t start = resolve(a.starts[i]), end = resolve(a.ends[i]);
    const int64_t size =
        step > 0 ? (end - start + step - 1) / step : (start - end - step - 1) / -step;
    dims[axis] = {start, step, std::max<int64_t>(size, 0)};
  }
  return dims;
}

int64_t window_output_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad_begin,
                           int64_t pad_end, int64_t dilation, bool ceil_mode) {
  int64_t span = dilation * (kernel - 1) + 1;
  int64_t padded = in + pad_begin + pad_end - span;
  if (padded < 0) return 0;
  int64_t out = (ceil_mode ? (padded + stride - 1) / stride : padded / stride) + 1;
  // ONNX/PyTorch: with ceil_mode the last window must start inside the input or left padding.
  if (ceil_mode && (out - 1) * stride >= in + pad_begin) --out;
  return out;
}

std::vector<TensorType> infer_output_types(OpKind kind, const OpAttrs& attrs,
                                           std::span<const TensorType> in, size_t num_outputs,
                                           std::string_view node) {
  BRAID_CHECK(kind == OpKind::Split || num_outputs == 1, kBad, "node '", node, "' (",
              to_string(kind), "): expected 1 output, got ", num_outputs);
  for (const TensorType& t : in)
    for (int64_t d : t.shape)
      BRAID_CHECK(d > 0, kBad, "node '", node, "' (", to_string(kind), "): input shape ",
                  to_string(t.shape), " has a non-positive dim");
  if (!takes_any_dtype(kind))
    for (size_t i = 0; i < in.size(); ++i)
      BRAID_CHECK(in[i].dtype == DType::kFloat32, ErrorCode::kUnsupported, "node '", node, "' (",
                  to_string(kind), "): input #", i, " is ", to_string(in[i].dtype), "; braid runs ",
                  to_string(kind), " on float32 only");
  switch (kind) {
    case OpKind::Conv:
      return infer_conv(attrs_as<ConvAttrs>(attrs, node, kind), in, node);
    case OpKind::Relu:
    case OpKind::Sigmoid:
    case OpKind::Tanh:
    case OpKind::Gelu:
    case OpKind::Clip:
    case OpKind::HardSigmoid:
    case OpKind::HardSwish:
    case OpKind::Identity:
      check_arity(in, 1, 1, node, kind);
      return {in[0]};
    case OpKind::ReduceMean:
      check_arity(in, 1, 1, node, kind);
      return infer_reduce(attrs_as<ReduceAttrs>(attrs, node, kind), in[0], node, kind);
    case OpKind::LRN: {
      check_arity(in, 1, 1, node, kind);
      check_rank(in[0], 4, node, kind, "input");
      BRAID_CHECK(attrs_as<LrnAttrs>(attrs, node, kind).size >= 1, kBad, "node '", node,
                  "' (LRN): size must be positive");
      return {in[0]};
    }
    case OpKind::MaxPool:
    case OpKind::AveragePool:
      return infer_pool(kind, attrs_as<PoolAttrs>(attrs, node, kind), in, node);
    case OpKind::GlobalAveragePool: {
      check_arity(in, 1, 1, node, kind);
      check_rank(in[0], 4, node, kind, "input");
      return {{DType::kFloat32, {in[0].shape[0], in[0].shape[1], 1, 1}}};
    }
    case OpKind::Concat:
      return infer_concat(attrs_as<AxisAttrs>(attrs, node, kind), in, node);
    case OpKind::Add:
    case OpKind::Mul:
      check_arity(in, 2, 2, node, kind);
      return {{DType::kFloat32, broadcast(in[0].shape, in[1].shape, node, kind)}};
    case OpKind::Sum: {
      BRAID_CHECK(!in.empty(), kBad, "node '", node, "' (Sum): no inputs");
      Shape out = in[0].shape;
      for (size_t i = 1; i < in.size(); ++i) out = broadcast(out, in[i].shape, node, kind);
      return {{DType::kFloat32, out}};
    }
    case OpKind::MatMul:
      return infer_matmul(in, node);
    case OpKind::Gemm:
      return infer_gemm(attrs_as<GemmAttrs>(attrs, node, kind), in, node);
    case OpKind::BatchNormalization: {
      check_arity(in, 5, 5, node, kind);
      BRAID_CHECK(in[0].rank() >= 2, kBad, "node '", node,
                  "' (BatchNormalization): input rank < 2");
      for (size_t i = 1; i < 5; ++i)
        BRAID_CHECK(in[i].shape == Shape{in[0].shape[1]}, kBad, "node '", node,
                    "' (BatchNormalization): parameter ", i, " has shape ", to_string(in[i].shape),
                    ", expected [", in[0].shape[1], "]");
      return {in[0]};
    }
    case OpKind::Softmax: {
      check_arity(in, 1, 1, node, kind);
      normalize_axis(attrs_as<AxisAttrs>(attrs, node, kind).axis, in[0].rank(), node, kind);
      return {in[0]};
    }
    case OpKind::LayerNormalization: {
      check_arity(in, 2, 3, node, kind);
      const auto& a = attrs_as<LayerNormAttrs>(attrs, node, kind);
      int64_t axis = normalize_axis(a.axis, in[0].rank(), node, kind);
      Shape norm(in[0].shape.begin() + axis, in[0].shape.end());
      for (size_t i = 1; i < in.size(); ++i)
        BRAID_CHECK(in[i].shape == norm, kBad, "node '", node,
                    "' (LayerNormalization): ", i == 1 ? "scale " : "bias ", to_string(in[i].shape),
                    " must be ", to_string(norm));
      return {in[0]};
    }
    case OpKind::Reshape:
      check_arity(in, 1, 1, node, kind);
      return infer_reshape(attrs_as<ReshapeAttrs>(attrs, node, kind), in[0], node);
    case OpKind::Flatten: {
      check_arity(in, 1, 1, node, kind);
      int64_t axis = attrs_as<AxisAttrs>(attrs, node, kind).axis;
      if (axis < 0) axis += in[0].rank();
      BRAID_CHECK(axis >= 0 && axis <= in[0].rank(), kBad, "node '", node, "' (Flatten): axis ",
                  axis, " out of range");
      const Shape& s = in[0].shape;
      int64_t outer = std::accumulate(s.begin(), s.begin() + axis, int64_t{1}, std::multiplies<>());
      return {{in[0].dtype, {outer, in[0].elements() / outer}}};
    }
    case OpKind::Transpose: {
      check_arity(in, 1, 1, node, kind);
      std::vector<int64_t> perm = attrs_as<TransposeAttrs>(attrs, node, kind).perm;
      const int64_t r = in[0].rank();
      if (perm.empty())
        for (int64_t i = r - 1; i >= 0; --i) perm.push_back(i);
      BRAID_CHECK(static_cast<int64_t>(perm.size()) == r, kBad, "node '", node,
                  "' (Transpose): perm has ", perm.size(), " entries for rank ", r);
      std::vector<bool> seen(r, false);
      Shape out(r);
      for (int64_t i = 0; i < r; ++i) {
        BRAID_CHECK(perm[i] >= 0 && perm[i] < r && !seen[perm[i]], kBad, "node '", node,
                    "' (Transpose): perm is not a permutation");
        seen[perm[i]] = true;
        out[i] = in[0].shape[perm[i]];
      }
      return {{in[0].dtype, out}};
    }
    case OpKind::Split: {
      check_arity(in, 1, 1, node, kind);
      const auto& a = attrs_as<SplitAttrs>(attrs, node, kind);
      int64_t axis = normalize_axis(a.axis, in[0].rank(), node, kind);
      BRAID_CHECK(a.sizes.size() == num_outputs, kBad, "node '", node,
                  "' (Split): ", a.sizes.size(), " sizes for ", num_outputs, " outputs");
      int64_t total = 0;
      std::vector<TensorType> outs;
      for (int64_t s : a.sizes) {
        BRAID_CHECK(s != 0, ErrorCode::kUnsupported, "node '", node,
                    "' (Split): a split of size 0; braid does not support zero-size tensors");
        BRAID_CHECK(s > 0, kBad, "node '", node, "' (Split): negative split size");
        TensorType t = in[0];
        t.shape[axis] = s;
        outs.push_back(t);
        total += s;
      }
      BRAID_CHECK(total == in[0].shape[axis], kBad, "node '", node, "' (Split): sizes sum to ",
                  total, " but the axis has ", in[0].shape[axis]);
      return outs;
    }
    case OpKind::Pad: {
      check_arity(in, 1, 1, node, kind);
      const auto& a = attrs_as<PadAttrs>(attrs, node, kind);
      const int64_t r = in[0].rank();
      BRAID_CHECK(static_cast<int64_t>(a.pads.size()) == 2 * r, kBad, "node '", node,
                  "' (Pad): ", a.pads.size(), " pads for rank ", r);
      Shape out = in[0].shape;
      for (int64_t i = 0; i < r; ++i) {
        BRAID_CHECK(a.pads[i] >= 0 && a.pads[r + i] >= 0, kBad, "node '", node,
                    "' (Pad): negative pads are not supported");
        out[i] += a.pads[i] + a.pads[r + i];
      }
      return {{in[0].dtype, out}};
    }
    case OpKind::Erf:
    case OpKind::Sqrt:
      check_arity(in, 1, 1, node, kind);
      return {in[0]};
    case OpKind::Sub:
    case OpKind::Div:
    case OpKind::Pow:
      check_arity(in, 2, 2, node, kind);
      return {{DType::kFloat32, broadcast(in[0].shape, in[1].shape, node, kind)}};
    case OpKind::Where:
      return infer_where(in, node);
    case OpKind::Expand: {
      check_arity(in, 1, 1, node, kind);
      const auto& a = attrs_as<ExpandAttrs>(attrs, node, kind);
      for (int64_t d : a.shape)
        BRAID_CHECK(d > 0, kBad, "node '", node, "' (Expand): bad dim ", d, " in shape ",
                    to_string(a.shape));
      return {{in[0].dtype, broadcast(in[0].shape, a.shape, node, kind)}};
    }
    case OpKind::Gather:
      return infer_gather(attrs_as<GatherAttrs>(attrs, node, kind), in, node);
    case OpKind::Cast:
      check_arity(in, 1, 1, node, kind);
      return {{attrs_as<CastAttrs>(attrs, node, kind).to, in[0].shape}};
    case OpKind::Equal:
      check_arity(in, 2, 2, node, kind);
      BRAID_CHECK(in[0].dtype == in[1].dtype, kBad, "node '", node, "' (Equal): compares ",
                  to_string(in[0].dtype), " with ", to_string(in[1].dtype));
      return {{DType::kBool, broadcast(in[0].shape, in[1].shape, node, kind)}};
    case OpKind::Not:
      check_arity(in, 1, 1, node, kind);
      BRAID_CHECK(in[0].dtype == DType::kBool, kBad, "node '", node, "' (Not): input is ",
                  to_string(in[0].dtype), ", must be bool");
      return {{DType::kBool, in[0].shape}};
    case OpKind::ConvTranspose:
      return infer_conv_transpose(attrs_as<ConvTransposeAttrs>(attrs, node, kind), in, node);
    case OpKind::Resize:
      check_arity(in, 1, 1, node, kind);
      return infer_resize(attrs_as<ResizeAttrs>(attrs, node, kind), in[0], node);
    case OpKind::Slice: {
      check_arity(in, 1, 1, node, kind);
      Shape out;
      for (const SliceDim& d :
           slice_dims(attrs_as<SliceAttrs>(attrs, node, kind), in[0].shape, node))
        out.push_back(d.size);
      BRAID_CHECK(num_elements(out) > 0, ErrorCode::kUnsupported, "node '", node,
                  "' (Slice): the output ", to_string(out),
                  " is empty; braid does not support zero-size tensors");
      return {{in[0].dtype, out}};
    }
  }
  BRAID_THROW(ErrorCode::kInternal, "unhandled op kind");
}

}  // namespace braid::ir
