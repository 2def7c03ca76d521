// The constant-folding evaluator: one function per op, then the table. To fold another op, add
// a `fold_<op>` function and a row to kFoldable. Semantics follow the ONNX operator spec
// (onnx/docs/Operators.md) at the opsets listed; results are compared with ONNX Runtime in
// onnx_fold_test.cc.
#include "models/onnx_fold.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "base/error.h"

namespace braid::models::onnx_detail {
namespace {

constexpr auto kBad = ErrorCode::kInvalidModel;
constexpr auto kUnsupported = ErrorCode::kUnsupported;
using P = onnx::TensorProto;

// ---- helpers ----

const Tensor& input(const FoldContext& c, size_t k) {
  BRAID_CHECK(k < c.inputs.size() && c.inputs[k] != nullptr, kBad, c.who(), ": ", c.node.op_type(),
              " needs input #", k);
  return *c.inputs[k];
}

const Tensor* optional_input(const FoldContext& c, size_t k) {
  return k < c.inputs.size() ? c.inputs[k] : nullptr;
}

// The values of an integer tensor (shape, axes, indices, starts ...).
const std::vector<int64_t>& ints_of(const FoldContext& c, const Tensor& t, std::string_view role) {
  BRAID_CHECK(!t.is_float() && t.elem_type != P::BOOL, kBad, c.who(), ": ", role,
              " must be an integer tensor, is ", onnx_type_name(t.elem_type));
  return t.ints;
}

int64_t normalized_axis(const FoldContext& c, int64_t axis, int64_t rank) {
  BRAID_CHECK(axis >= -rank && axis < rank, kBad, c.who(), ": axis ", axis,
              " out of range for rank ", rank);
  return axis < 0 ? axis + rank : axis;
}

// The element count of `shape`, refusing overflow and anything over the import limit.
int64_t checked_elements(const FoldContext& c, const ir::Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    BRAID_CHECK(d >= 0, kBad, c.who(), ": computes a negative dim in ", ir::to_string(shape));
    BRAID_CHECK(d == 0 || n <= c.max_elements / d, kUnsupported, c.who(), ": ", c.node.op_type(),
                " computes a constant of shape ", ir::to_string(shape),
                ", which exceeds the limit of ", c.max_elements,
                " elements (raise with --max-tensor-elements)");
    n *= d;
  }
  return n;
}

Tensor new_tensor(const FoldContext& c, int32_t elem_type, ir::Shape shape) {
  checked_elements(c, shape);
  return make_tensor(elem_type, std::move(shape));
}

void copy_element(const Tensor& src, int64_t i, Tensor& dst, int64_t j) {
  if (src.is_float()) {
    dst.floats[j] = src.floats[i];
  } else {
    dst.ints[j] = src.ints[i];
  }
}

std::vector<int64_t> strides_of(const ir::Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (int64_t k = static_cast<int64_t>(s.size()) - 2; k >= 0; --k) st[k] = st[k + 1] * s[k + 1];
  return st;
}

// numpy broadcasting of two shapes.
ir::Shape broadcast_shape(const FoldContext& c, const ir::Shape& a, const ir::Shape& b) {
  const size_t r = std::max(a.size(), b.size());
  ir::Shape out(r);
  for (size_t k = 0; k < r; ++k) {
    const int64_t da = k < r - a.size() ? 1 : a[k - (r - a.size())];
    const int64_t db = k < r - b.size() ? 1 : b[k - (r - b.size())];
    BRAID_CHECK(da == db || da == 1 || db == 1, kBad, c.who(), ": shapes ", ir::to_string(a),
                " and ", ir::to_string(b), " do not broadcast");
    out[k] = da == 1 ? db : da;
  }
  return out;
}

// For each element of `out`, the flat index of the element of `in` it reads under broadcasting.
std::vector<int64_t> broadcast_index(const ir::Shape& in, const ir::Shape& out) {
  const size_t r = out.size(), lead = r - in.size();
  const std::vector<int64_t> in_strides = strides_of(in);
  std::vector<int64_t> index(ir::num_elements(out));
  std::vector<int64_t> pos(r, 0);
  for (int64_t& idx : index) {
    int64_t i = 0;
    for (size_t k = lead; k < r; ++k)
      if (in[k - lead] != 1) i += pos[k] * in_strides[k - lead];
    idx = i;
    for (int64_t k = static_cast<int64_t>(r) - 1; k >= 0 && ++pos[k] == out[k]; --k) pos[k] = 0;
  }
  return index;
}

void check_same_type(const FoldContext& c, const Tensor& a, const Tensor& b) {
  BRAID_CHECK(a.elem_type == b.elem_type, kBad, c.who(), ": ", c.node.op_type(),
              " inputs have different element types (", onnx_type_name(a.elem_type), ", ",
              onnx_type_name(b.elem_type), ")");
}

// ---- one fold function per op, in table order ----

std::vector<Tensor> fold_shape(const FoldContext& c) {
  const ir::Shape& s = input(c, 0).shape;
  const int64_t r = static_cast<int64_t>(s.size());
  auto clamp = [r](int64_t v) { return std::clamp(v < 0 ? v + r : v, int64_t{0}, r); };
  const int64_t start = clamp(c.attrs.get_int("start", 0));  // opset 15
  const int64_t end = clamp(c.attrs.get_int("end", r));
  Tensor out = make_tensor(P::INT64, {std::max<int64_t>(end - start, 0)});
  for (int64_t k = start; k < end; ++k) out.ints[k - start] = s[k];
  return {std::move(out)};
}

std::vector<Tensor> fold_size(const FoldContext& c) {
  Tensor out = make_tensor(P::INT64, {});
  out.ints = {ir::num_elements(input(c, 0).shape)};
  return {std::move(out)};
}

std::vector<Tensor> fold_gather(const FoldContext& c) {
  const Tensor& data = input(c, 0);
  const Tensor& indices = input(c, 1);
  const auto& idx = ints_of(c, indices, "indices");
  const int64_t r = static_cast<int64_t>(data.shape.size());
  BRAID_CHECK(r >= 1, kBad, c.who(), ": Gather of a scalar");
  const int64_t axis = normalized_axis(c, c.attrs.get_int("axis", 0), r);
  ir::Shape out_shape(data.shape.begin(), data.shape.begin() + axis);
  out_shape.insert(out_shape.end(), indices.shape.begin(), indices.shape.end());
  out_shape.insert(out_shape.end(), data.shape.begin() + axis + 1, data.shape.end());
  Tensor out = new_tensor(c, data.elem_type, out_shape);
  const int64_t outer = ir::num_elements({data.shape.begin(), data.shape.begin() + axis});
  const int64_t inner = ir::num_elements({data.shape.begin() + axis + 1, data.shape.end()});
  const int64_t dim = data.shape[axis];
  int64_t j = 0;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i : idx) {
      BRAID_CHECK(i >= -dim && i < dim, kBad, c.who(), ": Gather index ", i,
                  " out of range for a dim of ", dim);
      const int64_t src = (o * dim + (i < 0 ? i + dim : i)) * inner;
      for (int64_t k = 0; k < inner; ++k) copy_element(data, src + k, out, j++);
    }
  return {std::move(out)};
}

std::vector<Tensor> fold_slice(const FoldContext& c) {
  const Tensor& data = input(c, 0);
  const int64_t r = static_cast<int64_t>(data.shape.size());
  std::vector<int64_t> starts, ends, axes, steps;
  if (c.opset < 10) {
    starts = c.attrs.get_ints("starts").value_or(std::vector<int64_t>{});
    ends = c.attrs.get_ints("ends").value_or(std::vector<int64_t>{});
    axes = c.attrs.get_ints("axes").value_or(std::vector<int64_t>{});
  } else {
    starts = ints_of(c, input(c, 1), "starts");
    ends = ints_of(c, input(c, 2), "ends");
    if (const Tensor* a = optional_input(c, 3)) axes = ints_of(c, *a, "axes");
    if (const Tensor* s = optional_input(c, 4)) steps = ints_of(c, *s, "steps");
  }
  const size_t n = starts.size();
  if (axes.empty())
    for (size_t k = 0; k < n; ++k) axes.push_back(static_cast<int64_t>(k));
  if (steps.empty()) steps.assign(n, 1);
  BRAID_CHECK(ends.size() == n && axes.size() == n && steps.size() == n, kBad, c.who(),
              ": Slice starts, ends, axes and steps differ in length");
  // Per axis: first index and step; the count follows the spec's clamping rules.
  std::vector<int64_t> first(r, 0), step(r, 1);
  ir::Shape out_shape = data.shape;
  std::vector<bool> seen(r, false);
  for (size_t k = 0; k < n; ++k) {
    const int64_t ax = normalized_axis(c, axes[k], r);
    BRAID_CHECK(!seen[ax], kBad, c.who(), ": Slice axis ", ax, " repeats");
    seen[ax] = true;
    const int64_t dim = data.shape[ax], st = steps[k];
    BRAID_CHECK(st != 0, kBad, c.who(), ": Slice step is 0");
    int64_t b = starts[k] < 0 ? std::max(starts[k], -dim) + dim : starts[k];
    int64_t e = ends[k] < 0 ? std::max(ends[k], -dim - 1) + dim : ends[k];
    if (st > 0) {
      b = std::clamp<int64_t>(b, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      out_shape[ax] = e > b ? (e - b + st - 1) / st : 0;
    } else {
      b = std::clamp<int64_t>(b, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      out_shape[ax] = b > e ? (b - e - st - 1) / -st : 0;
    }
    first[ax] = b;
    step[ax] = st;
  }
  Tensor out = new_tensor(c, data.elem_type, out_shape);
  const std::vector<int64_t> in_strides = strides_of(data.shape);
  std::vector<int64_t> pos(r, 0);
  for (int64_t j = 0; j < out.elements(); ++j) {
    int64_t i = 0;
    for (int64_t k = 0; k < r; ++k) i += (first[k] + pos[k] * step[k]) * in_strides[k];
    copy_element(data, i, out, j);
    for (int64_t k = r - 1; k >= 0 && ++pos[k] == out_shape[k]; --k) pos[k] = 0;
  }
  return {std::move(out)};
}

std::vector<Tensor> fold_concat(const FoldContext& c) {
  const Tensor& first = input(c, 0);
  const int64_t r = static_cast<int64_t>(first.shape.size());
  BRAID_CHECK(r >= 1, kBad, c.who(), ": Concat of scalars");
  const int64_t axis = normalized_axis(c, c.attrs.get_int("axis", 0), r);
  ir::Shape out_shape = first.shape;
  out_shape[axis] = 0;
  for (size_t k = 0; k < c.inputs.size(); ++k) {
    const Tensor& t = input(c, k);
    check_same_type(c, first, t);
    bool same = t.shape.size() == first.shape.size();
    for (int64_t d = 0; same && d < r; ++d) same = d == axis || t.shape[d] == first.shape[d];
    BRAID_CHECK(same, kBad, c.who(), ": Concat inputs ", ir::to_string(first.shape), " and ",
                ir::to_string(t.shape), " differ outside axis ", axis);
    out_shape[axis] += t.shape[axis];
  }
  Tensor out = new_tensor(c, first.elem_type, out_shape);
  const int64_t outer = ir::num_elements({first.shape.begin(), first.shape.begin() + axis});
  int64_t j = 0;
  for (int64_t o = 0; o < outer; ++o)
    for (size_t k = 0; k < c.inputs.size(); ++k) {
      const Tensor& t = *c.inputs[k];
      const int64_t block = ir::num_elements({t.shape.begin() + axis, t.shape.end()});
      for (int64_t i = 0; i < block; ++i) copy_element(t, o * block + i, out, j++);
    }
  return {std::move(out)};
}

// Unsqueeze, Squeeze, Reshape: the data unchanged under a new shape.
std::vector<Tensor> reshaped(const Tensor& t, ir::Shape shape) {
  Tensor out = t;
  out.shape = std::move(shape);
  return {std::move(out)};
}

std::vector<int64_t> axes_of(const FoldContext& c) {  // attribute before opset 13, input after
  if (c.opset < 13) return c.attrs.get_ints("axes").value_or(std::vector<int64_t>{});
  const Tensor* a = optional_input(c, 1);
  return a ? ints_of(c, *a, "axes") : std::vector<int64_t>{};
}

std::vector<Tensor> fold_unsqueeze(const FoldContext& c) {
  const Tensor& data = input(c, 0);
  const std::vector<int64_t> axes = axes_of(c);
  const int64_t r = static_cast<int64_t>(data.shape.size() + axes.size());
  std::vector<bool> unit(r, false);
  for (int64_t a : axes) {
    const int64_t ax = normalized_axis(c, a, r);
    BRAID_CHECK(!unit[ax], kBad, c.who(), ": Unsqueeze axis ", ax, " repeats");
    unit[ax] = true;
  }
  ir::Shape shape;
  for (int64_t k = 0, from = 0; k < r; ++k) shape.push_back(unit[k] ? 1 : data.shape[from++]);
  return reshaped(data, shape);
}

std::vector<Tensor> fold_squeeze(const FoldContext& c) {
  const Tensor& data = input(c, 0);
  const int64_t r = static_cast<int64_t>(data.shape.size());
  std::vector<bool> drop(r, false);
  const std::vector<int64_t> axes = axes_of(c);
  for (int64_t a : axes) {
    const int64_t ax = normalized_axis(c, a, r);
    BRAID_CHECK(data.shape[ax] == 1, kBad, c.who(), ": Squeeze axis ", ax, " has size ",
                data.shape[ax]);
    drop[ax] = true;
  }
  ir::Shape shape;
  for (int64_t k = 0; k < r; ++k)
    if (!(axes.empty() ? data.shape[k] == 1 : drop[k])) shape.push_back(data.shape[k]);
  return reshaped(data, shape);
}

std::vector<Tensor> fold_reshape(const FoldContext& c) {
  const Tensor& data = input(c, 0);
  std::vector<int64_t> shape = c.opset < 5
                                   ? c.attrs.get_ints("shape").value_or(std::vector<int64_t>{})
                                   : ints_of(c, input(c, 1), "shape");
  const bool allow_zero = c.attrs.get_int("allowzero", 0) != 0;
  int64_t known = 1, infer_at = -1;
  for (size_t k = 0; k < shape.size(); ++k) {
    if (shape[k] == 0 && !allow_zero) {
      BRAID_CHECK(k < data.shape.size(), kBad, c.who(), ": Reshape copies dim ", k,
                  " that the input lacks");
      shape[k] = data.shape[k];
    }
    if (shape[k] == -1) {
      BRAID_CHECK(infer_at < 0, kBad, c.who(), ": Reshape has two -1 dims");
      infer_at = static_cast<int64_t>(k);
      continue;
    }
    BRAID_CHECK(shape[k] >= 0 && (shape[k] == 0 || known <= kMaxElements / shape[k]), kBad, c.who(),
                ": Reshape to a bad shape");
    known *= shape[k];
  }
  if (infer_at >= 0) {
    BRAID_CHECK(known > 0 && data.elements() % known == 0, kBad, c.who(), ": cannot reshape ",
                ir::to_string(data.shape), " to ", ir::to_string(shape));
    shape[infer_at] = data.elements() / known;
  }
  BRAID_CHECK(ir::num_elements(shape) == data.elements(), kBad, c.who(), ": cannot reshape ",
              ir::to_string(data.shape), " to ", ir::to_string(shape));
  return reshaped(data, shape);
}

// Transpose: output dim k is input dim perm[k]; no perm reverses the dims. Swin folds two: the
// pads of its F.pad (exported through a Transpose) and the window partition of its constant
// shifted-window mask, which the mask's Equal/Not/Where read.
std::vector<Tensor> fold_transpose(const FoldContext& c) {
  const Tensor& data = input(c, 0);
  const int64_t r = static_cast<int64_t>(data.shape.size());
  std::vector<int64_t> perm(r);
  for (int64_t k = 0; k < r; ++k) perm[k] = r - 1 - k;
  perm = c.attrs.get_ints("perm").value_or(perm);
  std::vector<bool> seen(r, false);
  BRAID_CHECK(static_cast<int64_t>(perm.size()) == r, kBad, c.who(), ": Transpose perm has ",
              perm.size(), " entries for rank ", r);
  for (int64_t p : perm) {
    BRAID_CHECK(p >= 0 && p < r && !seen[p], kBad, c.who(),
                ": Transpose perm is not a permutation");
    seen[p] = true;
  }
  ir::Shape shape(r);
  for (int64_t k = 0; k < r; ++k) shape[k] = data.shape[perm[k]];
  Tensor out = new_tensor(c, data.elem_type, shape);
  const std::vector<int64_t> in_strides = strides_of(data.shape);
  std::vector<int64_t> pos(r, 0);  // the output index, as an odometer
  for (int64_t j = 0; j < out.elements(); ++j) {
    int64_t i = 0;
    for (int64_t k = 0; k < r; ++k) i += pos[k] * in_strides[perm[k]];
    copy_element(data, i, out, j);
    for (int64_t k = r - 1; k >= 0 && ++pos[k] == shape[k]; --k) pos[k] = 0;
  }
  return {std::move(out)};
}

std::vector<Tensor> fold_cast(const FoldContext& c) {
  const Tensor& data = input(c, 0);
  const int64_t declared = c.attrs.get_int("to", 0);
  // A cast to FLOAT16 or BFLOAT16 gives float32: braid computes those types upcast.
  const int64_t to = widened(static_cast<int>(declared));
  BRAID_CHECK(to == P::FLOAT || to == P::INT64 || to == P::INT32 || to == P::BOOL, kUnsupported,
              c.who(), ": Cast to ", onnx_type_name(static_cast<int>(declared)),
              "; braid folds casts to FLOAT, FLOAT16, BFLOAT16, INT64, INT32 and BOOL only");
  Tensor out = make_tensor(static_cast<int32_t>(to), data.shape);
  for (int64_t i = 0; i < data.elements(); ++i) {
    if (to == P::FLOAT) {
      out.floats[i] = data.is_float() ? data.floats[i] : static_cast<float>(data.ints[i]);
    } else if (to == P::BOOL) {
      out.ints[i] = data.is_float() ? data.floats[i] != 0.0f : data.ints[i] != 0;
    } else {
      // float -> integer truncates toward zero (C++ and numpy); out-of-range is refused.
      int64_t v = data.ints.empty() ? 0 : data.ints[i];
      if (data.is_float()) {
        const float f = data.floats[i];
        BRAID_CHECK(std::isfinite(f) && std::fabs(f) < 9.2e18f, kBad, c.who(), ": Cast of ", f,
                    " to an integer");
        v = static_cast<int64_t>(f);
      }
      out.ints[i] = to == P::INT32 ? static_cast<int32_t>(v) : v;
    }
  }
  return {std::move(out)};
}

std::vector<Tensor> fold_constant_of_shape(const FoldContext& c) {
  const ir::Shape shape = ints_of(c, input(c, 0), "shape");
  Tensor value = make_tensor(P::FLOAT, {1});  // default: one float 0
  if (const auto* a = c.attrs.find("value", onnx::AttributeProto::TENSOR)) {
    value = read_tensor(a->t(), c.who() + " value");
    BRAID_CHECK(value.elements() == 1, kBad, c.who(),
                ": ConstantOfShape value must hold one element");
  }
  Tensor out = new_tensor(c, value.elem_type, shape);
  if (out.is_float()) {
    std::fill(out.floats.begin(), out.floats.end(), value.floats[0]);
  } else {
    std::fill(out.ints.begin(), out.ints.end(), value.ints[0]);
  }
  return {std::move(out)};
}

std::vector<Tensor> fold_range(const FoldContext& c) {
  const Tensor& start = input(c, 0);
  const Tensor& limit = input(c, 1);
  const Tensor& delta = input(c, 2);
  check_same_type(c, start, limit);
  check_same_type(c, start, delta);
  BRAID_CHECK(start.elements() == 1 && limit.elements() == 1 && delta.elements() == 1, kBad,
              c.who(), ": Range takes scalars");
  if (start.is_float()) {
    const float s = start.floats[0], l = limit.floats[0], d = delta.floats[0];
    BRAID_CHECK(d != 0.0f && std::isfinite(s) && std::isfinite(l) && std::isfinite(d), kBad,
                c.who(), ": Range with delta 0 or a non-finite bound");
    const double n = std::max(std::ceil((static_cast<double>(l) - s) / d), 0.0);
    BRAID_CHECK(n <= static_cast<double>(c.max_elements), kUnsupported, c.who(), ": Range of ", n,
                " elements exceeds the limit of ", c.max_elements,
                " elements (raise with --max-tensor-elements)");
    Tensor out = make_tensor(P::FLOAT, {static_cast<int64_t>(n)});
    for (int64_t i = 0; i < out.elements(); ++i) out.floats[i] = s + static_cast<float>(i) * d;
    return {std::move(out)};
  }
  const int64_t s = start.ints[0], l = limit.ints[0], d = delta.ints[0];
  BRAID_CHECK(d != 0, kBad, c.who(), ": Range with delta 0");
  // In double: the difference of two int64 may overflow int64.
  const double n = std::max(
      std::ceil((static_cast<double>(l) - static_cast<double>(s)) / static_cast<double>(d)), 0.0);
  BRAID_CHECK(n <= static_cast<double>(c.max_elements), kUnsupported, c.who(), ": Range of ", n,
              " elements exceeds the limit of ", c.max_elements,
              " elements (raise with --max-tensor-elements)");
  Tensor out = make_tensor(start.elem_type, {static_cast<int64_t>(n)});
  for (int64_t i = 0; i < out.elements(); ++i) out.ints[i] = s + i * d;
  return {std::move(out)};
}

// Element-wise ops with numpy broadcasting over any number of inputs.
template <typename F>
Tensor broadcast_apply(const FoldContext& c, std::span<const Tensor* const> in, int32_t out_type,
                       F&& f) {
  ir::Shape shape = in[0]->shape;
  for (const Tensor* t : in) shape = broadcast_shape(c, shape, t->shape);
  Tensor out = new_tensor(c, out_type, shape);
  std::vector<std::vector<int64_t>> index;
  for (const Tensor* t : in) index.push_back(broadcast_index(t->shape, shape));
  for (int64_t j = 0; j < out.elements(); ++j) f(out, j, index);
  return out;
}

enum class Arith { kAdd, kSub, kMul, kDiv };

template <Arith op>
std::vector<Tensor> fold_arith(const FoldContext& c) {
  const Tensor& a = input(c, 0);
  const Tensor& b = input(c, 1);
  check_same_type(c, a, b);
  BRAID_CHECK(a.elem_type != P::BOOL, kBad, c.who(), ": arithmetic on BOOL");
  const Tensor* in[] = {&a, &b};
  return {broadcast_apply(c, in, a.elem_type, [&](Tensor& out, int64_t j, const auto& index) {
    const int64_t ia = index[0][j], ib = index[1][j];
    if (out.is_float()) {
      const float x = a.floats[ia], y = b.floats[ib];
      out.floats[j] = op == Arith::kAdd   ? x + y
                      : op == Arith::kSub ? x - y
                      : op == Arith::kMul ? x * y
                                          : x / y;
      return;
    }
    const int64_t x = a.ints[ia], y = b.ints[ib];
    int64_t v = 0;
    bool overflow = false;
    if constexpr (op == Arith::kAdd) overflow = __builtin_add_overflow(x, y, &v);
    if constexpr (op == Arith::kSub) overflow = __builtin_sub_overflow(x, y, &v);
    if constexpr (op == Arith::kMul) overflow = __builtin_mul_overflow(x, y, &v);
    if constexpr (op == Arith::kDiv) {
      BRAID_CHECK(y != 0, kBad, c.who(), ": integer division by zero");
      overflow = y == -1 && x == INT64_MIN;
      if (!overflow) v = x / y;  // truncates toward zero, as ONNX Runtime does
    }
    BRAID_CHECK(!overflow, kBad, c.who(), ": integer overflow in ", c.node.op_type(), " of ", x,
                " and ", y);
    out.ints[j] = out.elem_type == P::INT32 ? static_cast<int32_t>(v) : v;
  })};
}

// Mod: fmod=0 (integers) takes the divisor's sign like Python; fmod=1 truncates like C fmod.
std::vector<Tensor> fold_mod(const FoldContext& c) {
  const Tensor& a = input(c, 0);
  const Tensor& b = input(c, 1);
  check_same_type(c, a, b);
  const bool fmod = c.attrs.get_int("fmod", 0) != 0;
  BRAID_CHECK(fmod || !a.is_float(), kBad, c.who(), ": Mod of floats needs fmod=1");
  const Tensor* in[] = {&a, &b};
  return {broadcast_apply(c, in, a.elem_type, [&](Tensor& out, int64_t j, const auto& index) {
    if (out.is_float()) {
      out.floats[j] = std::fmod(a.floats[index[0][j]], b.floats[index[1][j]]);
      return;
    }
    const int64_t x = a.ints[index[0][j]], y = b.ints[index[1][j]];
    BRAID_CHECK(y != 0 && !(y == -1 && x == INT64_MIN), kBad, c.who(), ": Mod of ", x, " by ", y);
    int64_t r = x % y;
    if (!fmod && r != 0 && ((r < 0) != (y < 0))) r += y;
    out.ints[j] = r;
  })};
}

// Less, Greater: element-wise comparison to BOOL.
template <bool less>
std::vector<Tensor> fold_compare(const FoldContext& c) {
  const Tensor& a = input(c, 0);
  const Tensor& b = input(c, 1);
  check_same_type(c, a, b);
  const Tensor* in[] = {&a, &b};
  return {broadcast_apply(c, in, P::BOOL, [&](Tensor& out, int64_t j, const auto& index) {
    const double x =
        a.is_float() ? a.floats[index[0][j]] : static_cast<double>(a.ints[index[0][j]]);
    const double y =
        b.is_float() ? b.floats[index[1][j]] : static_cast<double>(b.ints[index[1][j]]);
    out.ints[j] = less ? x < y : x > y;
  })};
}

std::vector<Tensor> fold_not(const FoldContext& c) {
  Tensor out = input(c, 0);
  BRAID_CHECK(out.elem_type == P::BOOL, kBad, c.who(), ": Not of ", onnx_type_name(out.elem_type));
  for (int64_t& v : out.ints) v = !v;
  return {std::move(out)};
}

// ScatterND (reduction none): a copy of data with the slices named by indices replaced by
// updates. Swin builds its shifted-window attention mask this way.
std::vector<Tensor> fold_scatter_nd(const FoldContext& c) {
  const Tensor& data = input(c, 0);
  const Tensor& indices = input(c, 1);
  const Tensor& updates = input(c, 2);
  check_same_type(c, data, updates);
  BRAID_CHECK(c.attrs.get_string("reduction", "none") == "none", kUnsupported, c.who(),
              ": ScatterND with a reduction is not folded");
  const auto& idx = ints_of(c, indices, "indices");
  BRAID_CHECK(!indices.shape.empty(), kBad, c.who(), ": ScatterND indices is a scalar");
  const int64_t k = indices.shape.back(), r = static_cast<int64_t>(data.shape.size());
  BRAID_CHECK(k >= 1 && k <= r, kBad, c.who(), ": ScatterND index length ", k, " for rank ", r);
  const int64_t slice = ir::num_elements({data.shape.begin() + k, data.shape.end()});
  const int64_t count = idx.size() / k;
  BRAID_CHECK(updates.elements() == count * slice, kBad, c.who(), ": ScatterND updates ",
              ir::to_string(updates.shape), " do not match indices and data");
  const std::vector<int64_t> strides = strides_of(data.shape);
  Tensor out = data;
  for (int64_t n = 0; n < count; ++n) {
    int64_t base = 0;
    for (int64_t d = 0; d < k; ++d) {
      int64_t i = idx[n * k + d];
      const int64_t dim = data.shape[d];
      BRAID_CHECK(i >= -dim && i < dim, kBad, c.who(), ": ScatterND index ", i,
                  " out of range for a dim of ", dim);
      base += (i < 0 ? i + dim : i) * strides[d];
    }
    for (int64_t e = 0; e < slice; ++e) copy_element(updates, n * slice + e, out, base + e);
  }
  return {std::move(out)};
}

std::vector<Tensor> fold_equal(const FoldContext& c) {
  const Tensor& a = input(c, 0);
  const Tensor& b = input(c, 1);
  check_same_type(c, a, b);
  const Tensor* in[] = {&a, &b};
  return {broadcast_apply(c, in, P::BOOL, [&](Tensor& out, int64_t j, const auto& index) {
    out.ints[j] = a.is_float() ? a.floats[index[0][j]] == b.floats[index[1][j]]
                               : a.ints[index[0][j]] == b.ints[index[1][j]];
  })};
}

std::vector<Tensor> fold_where(const FoldContext& c) {
  const Tensor& cond = input(c, 0);
  const Tensor& x = input(c, 1);
  const Tensor& y = input(c, 2);
  BRAID_CHECK(cond.elem_type == P::BOOL, kBad, c.who(), ": Where condition must be BOOL");
  check_same_type(c, x, y);
  const Tensor* in[] = {&cond, &x, &y};
  return {broadcast_apply(c, in, x.elem_type, [&](Tensor& out, int64_t j, const auto& index) {
    if (cond.ints[index[0][j]]) {
      copy_element(x, index[1][j], out, j);
    } else {
      copy_element(y, index[2][j], out, j);
    }
  })};
}

std::vector<Tensor> fold_expand(const FoldContext& c) {
  const Tensor& data = input(c, 0);
  Tensor shape;  // only its shape is read
  shape.shape = ints_of(c, input(c, 1), "shape");
  const Tensor* in[] = {&data, &shape};
  return {broadcast_apply(c, in, data.elem_type, [&](Tensor& out, int64_t j, const auto& index) {
    copy_element(data, index[0][j], out, j);
  })};
}

// Every op the importer folds. Columns: op type, first opset, attributes, needs only the
// input's shape, fold function.
const std::vector<FoldableOp> kFoldable = {
    {"Shape", 1, {"start", "end"}, true, fold_shape},
    {"Size", 1, {}, true, fold_size},
    {"Gather", 1, {"axis"}, false, fold_gather},
    {"Slice", 1, {"starts", "ends", "axes"}, false, fold_slice},
    {"Concat", 1, {"axis"}, false, fold_concat},
    {"Unsqueeze", 1, {"axes"}, false, fold_unsqueeze},
    {"Squeeze", 1, {"axes"}, false, fold_squeeze},
    {"Reshape", 1, {"shape", "allowzero"}, false, fold_reshape},
    {"Transpose", 1, {"perm"}, false, fold_transpose},
    {"Cast", 6, {"to", "saturate"}, false, fold_cast},
    {"ConstantOfShape", 9, {"value"}, false, fold_constant_of_shape},
    {"Range", 11, {}, false, fold_range},
    {"Equal", 1, {}, false, fold_equal},
    {"Where", 9, {}, false, fold_where},
    {"Expand", 8, {}, false, fold_expand},
    {"Add", 7, {}, false, fold_arith<Arith::kAdd>},
    {"Sub", 7, {}, false, fold_arith<Arith::kSub>},
    {"Mul", 7, {}, false, fold_arith<Arith::kMul>},
    {"Div", 7, {}, false, fold_arith<Arith::kDiv>},
    {"Mod", 10, {"fmod"}, false, fold_mod},
    {"Less", 7, {}, false, fold_compare<true>},
    {"Greater", 7, {}, false, fold_compare<false>},
    {"Not", 1, {}, false, fold_not},
    {"ScatterND", 11, {"reduction"}, false, fold_scatter_nd},
};

}  // namespace

std::span<const FoldableOp> foldable_ops() {
  return kFoldable;
}

const FoldableOp* find_foldable_op(std::string_view op_type) {
  for (const FoldableOp& op : kFoldable)
    if (op.op_type == op_type) return &op;
  return nullptr;
}

}  // namespace braid::models::onnx_detail
