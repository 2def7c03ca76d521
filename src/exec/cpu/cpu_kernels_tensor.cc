// Plain-loop CPU kernels for the ops oneDNN has no primitive for, most of them from
// transformer exports: Erf, Where, Expand, Gather, Cast, Equal, Not and Slice, and Resize
// (detectors, segmentation heads). They run on plain
// tensors of any dtype (layout.h never blocks their operands). Index arithmetic is planned at
// build time (per-input strides over the output's dims, the Slice's first element), so
// execute() only walks rows: the innermost dim is a strided loop, the others an odometer.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include "base/error.h"
#include "exec/cpu/cpu_kernels_impl.h"
#include "ir/resize.h"
#include "ir/shape_inference.h"

namespace braid::exec::cpu::detail {
namespace {

// The output of an op walked row by row (its innermost dim), with each input's element offset
// of the row's first element: input k reads element base[k] + sum(index[d] * strides[k][d]).
class RowWalk {
 public:
  RowWalk(const ir::Shape& out, std::vector<Dims> strides, std::vector<int64_t> base)
      : dims_(to_dims(out)), strides_(std::move(strides)), base_(std::move(base)) {
    row_ = dims_.back();
    rows_ = ir::num_elements(out) / row_;
    for (Dims& s : strides_) s = pad_front(s, dims_.size());
  }

  // Strides that read a tensor of `shape` numpy-broadcast to `out` (0 where broadcast).
  static Dims broadcast_strides(const ir::Shape& shape, const ir::Shape& out) {
    const Dims in = pad_front(to_dims(shape), to_dims(out).size());
    Dims strides = row_major_strides(in);
    for (size_t d = 0; d < in.size(); ++d)
      if (in[d] == 1) strides[d] = 0;
    return strides;
  }

  int64_t row() const { return row_; }
  int64_t step(size_t k) const { return strides_[k].back(); }

  // f(r, offsets): row r of the output; offsets[k] = input k's first element of that row.
  template <typename F>
  void for_each_row(F&& f) const {
    std::vector<int64_t> offsets(strides_.size());
    for (int64_t r = 0; r < rows_; ++r) {
      for (size_t k = 0; k < strides_.size(); ++k) {
        int64_t offset = base_[k];
        for (int64_t rest = r, d = static_cast<int64_t>(dims_.size()) - 2; d >= 0; --d) {
          offset += (rest % dims_[d]) * strides_[k][d];
          rest /= dims_[d];
        }
        offsets[k] = offset;
      }
      f(r, offsets);
    }
  }

 private:
  Dims dims_;
  std::vector<Dims> strides_;
  std::vector<int64_t> base_;
  int64_t row_ = 1, rows_ = 1;
};

// Copies elements of `size` bytes by a RowWalk over one input (Expand, Slice).
template <typename T>
void strided_copy(const RowWalk& walk, const std::byte* src, std::byte* dst) {
  const T* x = reinterpret_cast<const T*>(src);
  T* y = reinterpret_cast<T*>(dst);
  const int64_t row = walk.row(), step = walk.step(0);
  walk.for_each_row([&](int64_t r, const std::vector<int64_t>& at) {
    const T* in = x + at[0];
    T* out = y + r * row;
    for (int64_t j = 0; j < row; ++j) out[j] = in[j * step];
  });
}

// Dispatches on an element size of 1, 4 or 8 bytes: moving data needs no dtype, only a width.
template <template <typename> class Op, typename... Args>
void by_width(int64_t size, Args&&... args) {
  switch (size) {
    case 1:
      return Op<uint8_t>::run(std::forward<Args>(args)...);
    case 4:
      return Op<uint32_t>::run(std::forward<Args>(args)...);
    case 8:
      return Op<uint64_t>::run(std::forward<Args>(args)...);
    default:
      BRAID_ASSERT(false, "element size ", size);
  }
}

template <typename T>
struct StridedCopy {
  static void run(const RowWalk& walk, const std::byte* src, std::byte* dst) {
    strided_copy<T>(walk, src, dst);
  }
};

// Expand and Slice: one input read through a RowWalk.
class CopyWalkKernel final : public Kernel {
 public:
  CopyWalkKernel(TensorRef src, TensorRef dst, RowWalk walk)
      : src_(std::move(src)), dst_(std::move(dst)), walk_(std::move(walk)) {}
  void execute(const KernelContext& context) const override {
    by_width<StridedCopy>(ir::size_of(dst_.type.dtype), walk_, src_.bytes(context),
                          dst_.bytes(context));
  }

 private:
  TensorRef src_, dst_;
  RowWalk walk_;
};

template <typename T>
struct WhereRows {
  static void run(const RowWalk& walk, const uint8_t* condition, const std::byte* x_bytes,
                  const std::byte* y_bytes, std::byte* out_bytes) {
    const T* x = reinterpret_cast<const T*>(x_bytes);
    const T* y = reinterpret_cast<const T*>(y_bytes);
    T* out = reinterpret_cast<T*>(out_bytes);
    const int64_t row = walk.row(), sc = walk.step(0), sx = walk.step(1), sy = walk.step(2);
    walk.for_each_row([&](int64_t r, const std::vector<int64_t>& at) {
      for (int64_t j = 0; j < row; ++j)
        out[r * row + j] = condition[at[0] + j * sc] ? x[at[1] + j * sx] : y[at[2] + j * sy];
    });
  }
};

class WhereKernel final : public Kernel {
 public:
  WhereKernel(std::vector<TensorRef> src, TensorRef dst, RowWalk walk)
      : src_(std::move(src)), dst_(std::move(dst)), walk_(std::move(walk)) {}
  void execute(const KernelContext& context) const override {
    const auto* condition = reinterpret_cast<const uint8_t*>(src_[0].bytes(context));
    by_width<WhereRows>(ir::size_of(dst_.type.dtype), walk_, condition, src_[1].bytes(context),
                        src_[2].bytes(context), dst_.bytes(context));
  }

 private:
  std::vector<TensorRef> src_;
  TensorRef dst_;
  RowWalk walk_;
};

template <typename T>
struct EqualRows {
  static void run(const RowWalk& walk, const std::byte* a_bytes, const std::byte* b_bytes,
                  uint8_t* out) {
    const T* a = reinterpret_cast<const T*>(a_bytes);
    const T* b = reinterpret_cast<const T*>(b_bytes);
    const int64_t row = walk.row(), sa = walk.step(0), sb = walk.step(1);
    walk.for_each_row([&](int64_t r, const std::vector<int64_t>& at) {
      for (int64_t j = 0; j < row; ++j)
        out[r * row + j] = a[at[0] + j * sa] == b[at[1] + j * sb] ? 1 : 0;
    });
  }
};

class EqualKernel final : public Kernel {
 public:
  EqualKernel(std::vector<TensorRef> src, TensorRef dst, RowWalk walk)
      : src_(std::move(src)), dst_(std::move(dst)), walk_(std::move(walk)) {}
  void execute(const KernelContext& context) const override {
    const std::byte* a = src_[0].bytes(context);
    const std::byte* b = src_[1].bytes(context);
    auto* out = reinterpret_cast<uint8_t*>(dst_.bytes(context));
    switch (src_[0].type.dtype) {
      case ir::DType::kFloat32:  // compared as floats: -0 == +0, NaN != NaN
        return EqualRows<float>::run(walk_, a, b, out);
      case ir::DType::kInt64:
        return EqualRows<int64_t>::run(walk_, a, b, out);
      case ir::DType::kBool:
        return EqualRows<uint8_t>::run(walk_, a, b, out);
    }
  }

 private:
  std::vector<TensorRef> src_;
  TensorRef dst_;
  RowWalk walk_;
};

// Not on bool tensors (one byte per element, 0 or 1); any nonzero byte reads as true.
class NotKernel final : public Kernel {
 public:
  NotKernel(TensorRef src, TensorRef dst) : src_(std::move(src)), dst_(std::move(dst)) {}
  void execute(const KernelContext& context) const override {
    const auto* x = reinterpret_cast<const uint8_t*>(src_.bytes(context));
    auto* y = reinterpret_cast<uint8_t*>(dst_.bytes(context));
    const int64_t n = dst_.type.elements();
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] != 0 ? 0 : 1;
  }

 private:
  TensorRef src_, dst_;
};

// Gather: for each outer index and each index, one contiguous block of `inner` bytes.
class GatherKernel final : public Kernel {
 public:
  GatherKernel(TensorRef data, std::optional<TensorRef> indices, std::vector<int64_t> constant,
               TensorRef dst, int64_t axis)
      : data_(std::move(data)),
        indices_(std::move(indices)),
        constant_(std::move(constant)),
        dst_(std::move(dst)) {
    const ir::Shape& xs = data_.type.shape;
    dim_ = xs[axis];
    outer_ = 1;
    for (int64_t d = 0; d < axis; ++d) outer_ *= xs[d];
    inner_bytes_ = ir::size_of(data_.type.dtype);
    for (size_t d = axis + 1; d < xs.size(); ++d) inner_bytes_ *= xs[d];
  }

  void execute(const KernelContext& context) const override {
    std::span<const int64_t> indices = constant_;
    if (indices_)
      indices = {reinterpret_cast<const int64_t*>(indices_->bytes(context)),
                 static_cast<size_t>(indices_->type.elements())};
    const std::byte* x = data_.bytes(context);
    std::byte* y = dst_.bytes(context);
    const auto block = static_cast<size_t>(inner_bytes_);
    for (int64_t o = 0; o < outer_; ++o)
      for (int64_t index : indices) {
        // Out-of-range indices (ONNX: an error) read row 0 rather than outside the tensor;
        // kernels cannot throw mid-run, and the reference executor reports them.
        if (index < 0) index += dim_;
        if (index < 0 || index >= dim_) index = 0;
        std::memcpy(y, x + (o * dim_ + index) * inner_bytes_, block);
        y += block;
      }
  }

 private:
  TensorRef data_;
  std::optional<TensorRef> indices_;
  std::vector<int64_t> constant_;
  TensorRef dst_;
  int64_t dim_ = 1, outer_ = 1, inner_bytes_ = 1;
};

template <typename From, typename To>
void convert(const std::byte* src, std::byte* dst, int64_t n) {
  const From* x = reinterpret_cast<const From*>(src);
  To* y = reinterpret_cast<To*>(dst);
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<To, uint8_t>) {
      y[i] = x[i] != From{0} ? 1 : 0;
    } else {
      y[i] = static_cast<To>(x[i]);  // float -> int64 truncates toward zero, as ONNX Cast
    }
  }
}

template <typename From>
void convert_to(ir::DType to, const std::byte* src, std::byte* dst, int64_t n) {
  switch (to) {
    case ir::DType::kFloat32:
      return convert<From, float>(src, dst, n);
    case ir::DType::kInt64:
      return convert<From, int64_t>(src, dst, n);
    case ir::DType::kBool:
      return convert<From, uint8_t>(src, dst, n);
  }
}

class CastKernel final : public Kernel {
 public:
  CastKernel(TensorRef src, TensorRef dst) : src_(std::move(src)), dst_(std::move(dst)) {}
  void execute(const KernelContext& context) const override {
    const std::byte* x = src_.bytes(context);
    std::byte* y = dst_.bytes(context);
    const int64_t n = dst_.type.elements();
    switch (src_.type.dtype) {
      case ir::DType::kFloat32:
        return convert_to<float>(dst_.type.dtype, x, y, n);
      case ir::DType::kInt64:
        return convert_to<int64_t>(dst_.type.dtype, x, y, n);
      case ir::DType::kBool:
        return convert_to<uint8_t>(dst_.type.dtype, x, y, n);
    }
  }

 private:
  TensorRef src_, dst_;
};

class ErfKernel final : public Kernel {
 public:
  ErfKernel(TensorRef src, TensorRef dst) : src_(std::move(src)), dst_(std::move(dst)) {}
  void execute(const KernelContext& context) const override {
    const float* x = src_.data(context);
    float* y = dst_.data(context);
    const int64_t n = dst_.type.elements();
    for (int64_t i = 0; i < n; ++i) y[i] = std::erf(x[i]);
  }

 private:
  TensorRef src_, dst_;
};

// Resize from the per-axis taps (ir/resize.h): each output row (innermost dim) first gathers
// the tap combinations of the outer axes (offset, weight), then sums them under the row's own
// taps. Rows are split between the lane's OpenMP threads.
class ResizeKernel final : public Kernel {
 public:
  ResizeKernel(TensorRef src, TensorRef dst, const ir::ResizeAttrs& a)
      : src_(std::move(src)), dst_(std::move(dst)), extrapolation_(a.extrapolation_value) {
    const ir::Shape& xs = src_.type.shape;
    const Dims x_strides = row_major_strides(to_dims(xs));
    const std::vector<ir::ResizeTaps> taps = ir::resize_taps(a, xs);
    for (size_t d = 0; d < taps.size(); ++d) {
      Axis axis;
      axis.begin = taps[d].begin;
      for (int64_t i : taps[d].index) axis.offset.push_back(i * x_strides[d]);
      axis.weight.assign(taps[d].weight.begin(), taps[d].weight.end());
      axis.outside = taps[d].outside;
      if (d + 1 < taps.size()) max_combinations_ *= std::max<int64_t>(taps[d].max_taps(), 1);
      axes_.push_back(std::move(axis));
    }
    if (axes_.empty()) axes_.push_back({{0, 1}, {0}, {1.0f}, {}});  // a scalar: one copy
    // Every output element one tap of weight 1 (nearest; no extrapolation): a gather.
    copy_ = std::all_of(axes_.begin(), axes_.end(), [](const Axis& axis) {
      if (!axis.outside.empty()) return false;
      for (size_t o = 0; o + 1 < axis.begin.size(); ++o)
        if (axis.begin[o + 1] - axis.begin[o] != 1 || axis.weight[axis.begin[o]] != 1.0f)
          return false;
      return true;
    });
    const ir::Shape& ys = dst_.type.shape;
    row_ = ys.empty() ? 1 : ys.back();
    rows_ = ir::num_elements(ys) / row_;
  }

  void execute(const KernelContext& context) const override {
    const float* x = src_.data(context);
    float* y = dst_.data(context);
    const ir::Shape& ys = dst_.type.shape;
    const size_t outer = axes_.size() - 1;
    const Axis& last = axes_.back();
#pragma omp parallel
    {
      std::vector<std::pair<int64_t, float>> combos, next;
      int64_t last_base = -1, last_row = -1;
      combos.reserve(static_cast<size_t>(max_combinations_));
      next.reserve(static_cast<size_t>(max_combinations_));
#pragma omp for schedule(static)
      for (int64_t r = 0; r < rows_; ++r) {
        combos.assign(1, {0, 1.0f});
        bool outside = false;
        for (int64_t d = static_cast<int64_t>(outer) - 1, rest = r; d >= 0; --d) {
          const Axis& axis = axes_[d];
          const int64_t o = rest % ys[d];
          rest /= ys[d];
          outside = outside || (!axis.outside.empty() && axis.outside[o] != 0);
          next.clear();
          for (const auto& [offset, weight] : combos)
            for (int64_t t = axis.begin[o]; t < axis.begin[o + 1]; ++t)
              next.emplace_back(offset + axis.offset[t], weight * axis.weight[t]);
          combos.swap(next);
        }
        float* out = y + r * row_;
        if (copy_ && !outside) {
          // Nearest: each output element copies one input element. A row that reads the same
          // input row as the row before it (upscaling) copies that row.
          const int64_t base = combos[0].first;
          if (r > 0 && base == last_base && last_row == r - 1) {
            std::memcpy(out, out - row_, static_cast<size_t>(row_) * sizeof(float));
          } else {
            for (int64_t o = 0; o < row_; ++o) out[o] = x[base + last.offset[last.begin[o]]];
          }
          last_base = base;
          last_row = r;
          continue;
        }
        for (int64_t o = 0; o < row_; ++o) {
          if (outside || (!last.outside.empty() && last.outside[o] != 0)) {
            out[o] = extrapolation_;
            continue;
          }
          float acc = 0;
          for (const auto& [offset, weight] : combos) {
            float inner = 0;
            for (int64_t t = last.begin[o]; t < last.begin[o + 1]; ++t)
              inner += last.weight[t] * x[offset + last.offset[t]];
            acc += weight * inner;
          }
          out[o] = acc;
        }
      }
    }
  }

 private:
  struct Axis {
    std::vector<int64_t> begin;   // taps of output index o: [begin[o], begin[o + 1])
    std::vector<int64_t> offset;  // input element offset of each tap along this axis
    std::vector<float> weight;
    std::vector<uint8_t> outside;
  };
  TensorRef src_, dst_;
  float extrapolation_ = 0;
  std::vector<Axis> axes_;
  int64_t max_combinations_ = 1;
  int64_t row_ = 1, rows_ = 1;
  bool copy_ = false;
};

}  // namespace

std::unique_ptr<Kernel> build_resize(const BuildContext& c, const Chain& chain) {
  return std::make_unique<ResizeKernel>(c.ref(chain.head->inputs[0]), c.ref(chain.output),
                                        std::get<ir::ResizeAttrs>(chain.head->attrs));
}

std::unique_ptr<Kernel> build_erf(const BuildContext& c, const Chain& chain) {
  return std::make_unique<ErfKernel>(c.ref(chain.head->inputs[0]), c.ref(chain.output));
}

std::unique_ptr<Kernel> build_where(const BuildContext& c, const Chain& chain) {
  const ir::Node& node = *chain.head;
  const ir::Shape& ys = c.shape(chain.output);
  std::vector<Dims> strides;
  std::vector<TensorRef> src;
  for (ValueId v : node.inputs) {
    strides.push_back(RowWalk::broadcast_strides(c.shape(v), ys));
    src.push_back(c.ref(v));
  }
  return std::make_unique<WhereKernel>(std::move(src), c.ref(chain.output),
                                       RowWalk(ys, std::move(strides), {0, 0, 0}));
}

std::unique_ptr<Kernel> build_equal(const BuildContext& c, const Chain& chain) {
  const ir::Node& node = *chain.head;
  const ir::Shape& ys = c.shape(chain.output);
  std::vector<Dims> strides = {RowWalk::broadcast_strides(c.shape(node.inputs[0]), ys),
                               RowWalk::broadcast_strides(c.shape(node.inputs[1]), ys)};
  return std::make_unique<EqualKernel>(std::vector{c.ref(node.inputs[0]), c.ref(node.inputs[1])},
                                       c.ref(chain.output),
                                       RowWalk(ys, std::move(strides), {0, 0}));
}

std::unique_ptr<Kernel> build_not(const BuildContext& c, const Chain& chain) {
  return std::make_unique<NotKernel>(c.ref(chain.head->inputs[0]), c.ref(chain.output));
}

std::unique_ptr<Kernel> build_expand(const BuildContext& c, const Chain& chain) {
  const ir::Node& node = *chain.head;
  const ir::Shape& ys = c.shape(chain.output);
  return std::make_unique<CopyWalkKernel>(
      c.ref(node.inputs[0]), c.ref(chain.output),
      RowWalk(ys, {RowWalk::broadcast_strides(c.shape(node.inputs[0]), ys)}, {0}));
}

std::unique_ptr<Kernel> build_slice(const BuildContext& c, const Chain& chain) {
  const ir::Node& node = *chain.head;
  const ir::Shape& xs = c.shape(node.inputs[0]);
  const std::vector<ir::SliceDim> dims =
      ir::slice_dims(std::get<ir::SliceAttrs>(node.attrs), xs, node.name);
  // Output index k along dim d reads input index start + k * step.
  const Dims x_strides = row_major_strides(to_dims(xs));
  Dims strides(xs.size());
  int64_t base = 0;
  for (size_t d = 0; d < xs.size(); ++d) {
    strides[d] = dims[d].step * x_strides[d];
    base += dims[d].start * x_strides[d];
  }
  if (xs.empty()) strides = {1};
  return std::make_unique<CopyWalkKernel>(c.ref(node.inputs[0]), c.ref(chain.output),
                                          RowWalk(c.shape(chain.output), {strides}, {base}));
}

std::unique_ptr<Kernel> build_gather(const BuildContext& c, const Chain& chain) {
  const ir::Node& node = *chain.head;
  const auto& a = std::get<ir::GatherAttrs>(node.attrs);
  const int64_t rank = static_cast<int64_t>(c.shape(node.inputs[0]).size());
  const int64_t axis = a.axis < 0 ? a.axis + rank : a.axis;
  std::optional<TensorRef> indices;
  if (node.inputs.size() > 1) indices = c.ref(node.inputs[1]);
  return std::make_unique<GatherKernel>(c.ref(node.inputs[0]), indices, a.indices,
                                        c.ref(chain.output), axis);
}

std::unique_ptr<Kernel> build_cast(const BuildContext& c, const Chain& chain) {
  return std::make_unique<CastKernel>(c.ref(chain.head->inputs[0]), c.ref(chain.output));
}

}  // namespace braid::exec::cpu::detail
