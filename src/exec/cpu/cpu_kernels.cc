// The CPU kernel driver (fusion inside a unit, dispatch on OpKind) and the kernels for data
// movement, element-wise and normalization ops. Conv, pooling, MatMul and Gemm live in
// cpu_kernels_nn.cc. oneDNN 3.x API: primitive_desc(engine, ..., attr) -> primitive (ecosystem.md
// §2).
#include "exec/cpu/cpu_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>
#include <numeric>
#include <optional>
#include <set>
#include <string_view>

#include <spdlog/spdlog.h>

#include "base/error.h"
#include "exec/cpu/cpu_kernels_impl.h"
#include "exec/cpu/layout.h"
#include "ir/unit_graph.h"

namespace braid::exec::cpu {
namespace detail {

using dnnl::algorithm;
using dnnl::prop_kind;
using dt = memory::data_type;

Dims to_dims(const ir::Shape& shape) {
  if (shape.empty()) return {1};
  return Dims(shape.begin(), shape.end());
}

Dims pad_front(Dims dims, size_t rank) {
  if (dims.size() < rank) dims.insert(dims.begin(), rank - dims.size(), 1);
  return dims;
}

Dims row_major_strides(const Dims& dims) {
  Dims strides(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * dims[i];
  return strides;
}

memory::desc plain_md(const Dims& dims) {
  return memory::desc(dims, dt::f32, row_major_strides(dims));
}

memory::desc layout_md(const Dims& dims, TensorLayout layout) {
  using tag = memory::format_tag;
  BRAID_ASSERT(layout == TensorLayout::kPlain || dims.size() == 4, "a ", dims.size(),
               "-D tensor cannot be blocked");
  switch (layout) {
    case TensorLayout::kPlain:
      return plain_md(dims);
    case TensorLayout::kNhwc:
      return memory::desc(dims, dt::f32, tag::nhwc);
    case TensorLayout::kNChw8c:
      return memory::desc(dims, dt::f32, tag::nChw8c);
    case TensorLayout::kNChw16c:
      return memory::desc(dims, dt::f32, tag::nChw16c);
  }
  BRAID_ASSERT(false, "unhandled layout");
}

memory::desc arena_md(const TensorRef& ref) {
  return layout_md(to_dims(ref.type.shape), ref.layout);
}

bool is_reference(const dnnl::primitive_desc_base& pd) {
  return is_reference_implementation(pd.impl_info_str());
}

dnnl::primitive_attr make_attr(const dnnl::post_ops& post_ops) {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  attr.set_post_ops(post_ops);
  return attr;
}

constexpr Bytes kScratchAlignment = 64;

memory DnnlKernel::bind(const memory::desc& md, const TensorRef& ref) {
  if (!ref.in_arena()) return memory(md, engine_, const_cast<float*>(ref.fixed));
  memory m(md, engine_, DNNL_MEMORY_NONE);
  arena_.emplace_back(m, ref);
  return m;
}

memory DnnlKernel::view_of_last_temporary(const memory::desc& md) {
  BRAID_ASSERT(!temporaries_.empty(), "a view of no temporary");
  memory view(md, engine_, DNNL_MEMORY_NONE);
  temporaries_.emplace_back(view, temporaries_.back().second);
  return view;
}

memory DnnlKernel::temporary(const memory::desc& md) {
  memory m(md, engine_, DNNL_MEMORY_NONE);
  temporaries_.emplace_back(m, temporary_bytes_);
  temporary_bytes_ += (static_cast<Bytes>(md.get_size()) + kScratchAlignment - 1) /
                      kScratchAlignment * kScratchAlignment;
  return m;
}

void DnnlKernel::add(const dnnl::primitive_desc_base& pd, const dnnl::primitive& primitive,
                     Args args) {
  const memory::desc scratch = pd.scratchpad_desc();
  if (scratch.get_size() > 0) {
    memory m(scratch, engine_, DNNL_MEMORY_NONE);
    scratchpads_.push_back(m);
    args[DNNL_ARG_SCRATCHPAD] = m;
    call_scratchpad_bytes_ =
        std::max<Bytes>(call_scratchpad_bytes_, static_cast<Bytes>(scratch.get_size()));
  }
  calls_.push_back({primitive, std::move(args)});
  implementations_.emplace_back(pd.impl_info_str());
  auto pending = std::move(pending_outputs_);
  pending_outputs_.clear();
  for (const auto& [temporary, tensor] : pending) add_reorder(temporary, tensor);
}

memory DnnlKernel::input(const memory::desc& wanted, const TensorRef& ref) {
  // A plain tensor seen as plain, with any dims of the same size (a view): no copy.
  if (ref.layout == TensorLayout::kPlain && wanted == plain_md(wanted.get_dims()))
    return bind(wanted, ref);
  const memory stored = bind(arena_md(ref), ref);
  if (stored.get_desc() == wanted) return stored;
  const memory t = temporary(wanted);
  add_reorder(stored, t);
  return t;
}

memory DnnlKernel::output(const memory::desc& wanted, const TensorRef& ref) {
  // A plain tensor seen as plain, with any dims of the same size (a view): no copy.
  if (ref.layout == TensorLayout::kPlain && wanted == plain_md(wanted.get_dims()))
    return bind(wanted, ref);
  const memory stored = bind(arena_md(ref), ref);
  if (stored.get_desc() == wanted) return stored;
  const memory t = temporary(wanted);
  pending_outputs_.emplace_back(t, stored);
  return t;
}

memory DnnlKernel::flat_input(TensorLayout layout, const TensorRef& ref) {
  const memory::desc flat = plain_md({ref.type.elements()});
  if (ref.layout == layout) return bind(flat, ref);
  const memory t = temporary(layout_md(to_dims(ref.type.shape), layout));
  add_reorder(bind(arena_md(ref), ref), t);
  memory view(flat, engine_, DNNL_MEMORY_NONE);  // the same bytes as `t`
  temporaries_.emplace_back(view, temporaries_.back().second);
  return view;
}

void DnnlKernel::add_reorder(const memory& from, const memory& to) {
  dnnl::reorder::primitive_desc pd(engine_, from.get_desc(), engine_, to.get_desc(), make_attr());
  add(pd, dnnl::reorder(pd), {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}});
}

void DnnlKernel::execute(const KernelContext& context) const {
  auto& lane = *static_cast<LaneState*>(context.lane_state);
  for (const auto& [m, ref] : arena_) m.set_data_handle(ref.bytes(context));
  for (const auto& [m, offset] : temporaries_) m.set_data_handle(lane.scratchpad + offset);
  for (const memory& m : scratchpads_) m.set_data_handle(lane.scratchpad + temporary_bytes_);
  for (const Call& call : calls_) call.primitive.execute(lane.stream, call.args);
  lane.stream.wait();  // a no-op for the OpenMP CPU runtime, where execute() is synchronous
  if (epilogue_) epilogue_(context);
}

namespace {

// One oneDNN eltwise operation: alg(alpha, beta).
struct EltwiseStep {
  algorithm alg;
  float alpha = 0.0f;
  float beta = 0.0f;
};

// An activation op as oneDNN eltwise steps applied in order. HardSigmoid is linear
// (alpha * x + beta) then clip to [0, 1], the form from oneDNN 2.x, which had no hardsigmoid
// (3.x's eltwise_hardsigmoid computes the same in one step; the two steps are kept so the
// post-op chains, and the split joins_post_ops makes, stay as they were). 3.x's hardswish is
// x * max(0, min(1, alpha * x + beta)): ONNX's with alpha = 1/6, beta = 1/2. Clip is
// max(alpha, min(beta, x)).
std::vector<EltwiseStep> eltwise_steps(const ir::Node& node) {
  switch (node.kind) {
    case ir::OpKind::Relu:
      return {{algorithm::eltwise_relu}};
    case ir::OpKind::Sigmoid:
      return {{algorithm::eltwise_logistic}};
    case ir::OpKind::Tanh:
      return {{algorithm::eltwise_tanh}};
    case ir::OpKind::Gelu: {
      const auto* g = std::get_if<ir::GeluAttrs>(&node.attrs);
      return {{g != nullptr && g->tanh_approximation ? algorithm::eltwise_gelu_tanh
                                                     : algorithm::eltwise_gelu_erf}};
    }
    case ir::OpKind::Clip: {
      const auto& a = std::get<ir::ClipAttrs>(node.attrs);
      // ONNX applies max last (min > max gives max everywhere); oneDNN's clip applies min last.
      if (a.min > a.max) return {{algorithm::eltwise_linear, 0.0f, a.max}};
      return {{algorithm::eltwise_clip, a.min, a.max}};
    }
    case ir::OpKind::HardSigmoid: {
      const auto& a = std::get<ir::HardSigmoidAttrs>(node.attrs);
      return {{algorithm::eltwise_linear, a.alpha, a.beta}, {algorithm::eltwise_clip, 0.0f, 1.0f}};
    }
    case ir::OpKind::HardSwish:
      return {{algorithm::eltwise_hardswish, 1.0f / 6.0f, 0.5f}};
    case ir::OpKind::Sqrt:
      return {{algorithm::eltwise_sqrt}};
    case ir::OpKind::Mul:  // a SiLU's, x * Sigmoid(x): plan_chain took it only in that pattern
      return {{algorithm::eltwise_swish, 1.0f}};
    default:
      BRAID_ASSERT(false, "node '", node.name, "' is not an activation");
  }
}

}  // namespace

void append_activation(dnnl::post_ops& post_ops, const ir::Node& activation) {
  for (const EltwiseStep& step : eltwise_steps(activation))
    post_ops.append_eltwise(step.alg, step.alpha, step.beta);
}

void append_activation(dnnl::post_ops& post_ops, ir::Activation activation) {
  switch (activation) {
    case ir::Activation::kNone:
      return;
    case ir::Activation::kRelu:
      post_ops.append_eltwise(algorithm::eltwise_relu, 0, 0);
      return;
    case ir::Activation::kSigmoid:
      post_ops.append_eltwise(algorithm::eltwise_logistic, 0, 0);
      return;
    case ir::Activation::kTanh:
      post_ops.append_eltwise(algorithm::eltwise_tanh, 0, 0);
      return;
    case ir::Activation::kGelu:  // ONNX Gelu's default: the exact (erf) form
      post_ops.append_eltwise(algorithm::eltwise_gelu_erf, 0, 0);
      return;
  }
}

void append_activations(dnnl::post_ops& post_ops, const Chain& chain) {
  for (const ir::Node* a : chain.activations) append_activation(post_ops, *a);
}

memory prepare_weights(const BuildContext& c, const memory& user, const memory::desc& wanted,
                       bool user_is_stable) {
  if (user_is_stable && user.get_desc() == wanted) return user;
  memory owned(wanted, c.engine);
  dnnl::stream stream = c.stream;  // a handle: copying it is how to call non-const wait()
  dnnl::reorder(user, owned).execute(stream, const_cast<memory&>(user), owned);
  stream.wait();
  return owned;
}

namespace {

// ---- Plain-loop kernels ------------------------------------------------------------------

// Reshape/Flatten/Identity (and Sum of one input) when the output is not aliased to the input.
class CopyKernel final : public Kernel {
 public:
  CopyKernel(TensorRef src, TensorRef dst) : src_(std::move(src)), dst_(std::move(dst)) {}
  void execute(const KernelContext& context) const override {
    const float* src = src_.data(context);
    float* dst = dst_.data(context);
    if (src != dst) std::memmove(dst, src, static_cast<size_t>(dst_.type.bytes()));
  }

 private:
  TensorRef src_, dst_;
};

// Add/Mul/Sub/Div whose inputs both broadcast (oneDNN's binary primitive needs src0 to have
// the output's shape; for Sub and Div that must be the first input), Pow (oneDNN has no binary
// pow) and Sum with broadcasting: numpy broadcasting by explicit strides, one output row at a
// time.
class BroadcastKernel final : public Kernel {
 public:
  BroadcastKernel(ir::OpKind kind, std::vector<TensorRef> src, TensorRef dst)
      : kind_(kind), src_(std::move(src)), dst_(std::move(dst)) {
    dims_ = detail::to_dims(dst_.type.shape);
    for (const TensorRef& s : src_) {
      const Dims in = pad_front(detail::to_dims(s.type.shape), dims_.size());
      Dims strides = row_major_strides(in);
      for (size_t d = 0; d < in.size(); ++d)
        if (in[d] == 1) strides[d] = 0;
      strides_.push_back(std::move(strides));
    }
  }

  void execute(const KernelContext& context) const override {
    const int64_t row = dims_.back();
    const int64_t rows =
        std::accumulate(dims_.begin(), dims_.end() - 1, int64_t{1}, std::multiplies<>());
    float* dst = dst_.data(context);
    for (int64_t r = 0; r < rows; ++r) {
      float* out = dst + r * row;
      for (size_t k = 0; k < src_.size(); ++k) {
        // Offset of this row's first element in input k.
        int64_t offset = 0;
        for (int64_t rest = r, d = static_cast<int64_t>(dims_.size()) - 2; d >= 0; --d) {
          offset += (rest % dims_[d]) * strides_[k][d];
          rest /= dims_[d];
        }
        const float* in = src_[k].data(context) + offset;
        const int64_t step = strides_[k].back();
        if (k == 0) {
          for (int64_t j = 0; j < row; ++j) out[j] = in[j * step];
          continue;
        }
        switch (kind_) {
          case ir::OpKind::Mul:
            for (int64_t j = 0; j < row; ++j) out[j] *= in[j * step];
            break;
          case ir::OpKind::Sub:
            for (int64_t j = 0; j < row; ++j) out[j] -= in[j * step];
            break;
          case ir::OpKind::Div:
            for (int64_t j = 0; j < row; ++j) out[j] /= in[j * step];
            break;
          case ir::OpKind::Pow:
            for (int64_t j = 0; j < row; ++j) out[j] = std::pow(out[j], in[j * step]);
            break;
          default:  // Add, Sum
            for (int64_t j = 0; j < row; ++j) out[j] += in[j * step];
            break;
        }
      }
    }
  }

 private:
  ir::OpKind kind_;
  std::vector<TensorRef> src_;
  TensorRef dst_;
  Dims dims_;
  std::vector<Dims> strides_;  // per input, over the output's dims; 0 where broadcast
};

// Constant Pad: fill the output, then copy the input's innermost rows into place.
class PadKernel final : public Kernel {
 public:
  PadKernel(TensorRef src, TensorRef dst, std::vector<int64_t> pads, float value)
      : src_(std::move(src)), dst_(std::move(dst)), pads_(std::move(pads)), value_(value) {}

  void execute(const KernelContext& context) const override {
    const ir::Shape& xs = src_.type.shape;
    const ir::Shape& ys = dst_.type.shape;
    float* y = dst_.data(context);
    const float* x = src_.data(context);
    std::fill_n(y, dst_.type.elements(), value_);
    if (xs.empty()) {
      y[0] = x[0];
      return;
    }
    const size_t r = xs.size();
    const Dims y_strides = row_major_strides(Dims(ys.begin(), ys.end()));
    const int64_t row = xs.back();
    const int64_t rows = src_.type.elements() / row;
    for (int64_t i = 0; i < rows; ++i) {
      int64_t offset = pads_[r - 1];
      for (int64_t rest = i, d = static_cast<int64_t>(r) - 2; d >= 0; --d) {
        offset += (rest % xs[d] + pads_[d]) * y_strides[d];
        rest /= xs[d];
      }
      std::copy_n(x + i * row, row, y + offset);
    }
  }

 private:
  TensorRef src_, dst_;
  std::vector<int64_t> pads_;  // ONNX order: begins then ends
  float value_;
};

// Pad of a 4-D tensor on H and W in any layouts: fill the output, then reorder the input into
// its window (a sub-tensor whose offsets stay clear of the channel blocks).
class WindowPadKernel final : public Kernel {
 public:
  WindowPadKernel(const detail::BuildContext& c, const TensorRef& src, const TensorRef& dst,
                  const std::vector<int64_t>& pads, float value)
      : copy_(c.engine), dst_(dst), value_(value) {
    const memory::desc window = arena_md(dst).submemory_desc(
        to_dims(src.type.shape), Dims{pads[0], pads[1], pads[2], pads[3]});
    copy_.add_reorder(copy_.bind(arena_md(src), src), copy_.bind(window, dst));
  }
  void execute(const KernelContext& context) const override {
    std::fill_n(dst_.data(context), dst_.type.elements(), value_);
    copy_.execute(context);
  }
  Bytes scratchpad_bytes() const { return copy_.scratchpad_bytes(); }
  const std::vector<std::string>& implementations() const { return copy_.implementations(); }

 private:
  DnnlKernel copy_;
  TensorRef dst_;
  float value_;
};

// ---- oneDNN kernels ----------------------------------------------------------------------

int64_t normalize_axis(int64_t axis, size_t rank) {
  return axis < 0 ? axis + static_cast<int64_t>(rank) : axis;
}

int64_t product(const ir::Shape& s, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= s[i];
  return p;
}

memory::desc flat_md(const ir::TensorType& t) {
  return plain_md({t.elements()});
}

std::unique_ptr<Kernel> build_eltwise(const BuildContext& c, const Chain& chain) {
  const ir::Node& node = *chain.head;
  const TensorRef src_ref = c.ref(node.inputs[0]), dst_ref = c.ref(chain.output);
  // Element by element, any layout without padding is a flat array; across layouts the op
  // runs in the input's and its result is reordered.
  const bool same_layout = src_ref.layout == dst_ref.layout;
  const memory::desc md = same_layout ? flat_md(src_ref.type) : arena_md(src_ref);
  auto k = std::make_unique<DnnlKernel>(c.engine);
  memory src = k->bind(md, src_ref);
  // Several steps (HardSigmoid) run as separate calls, the later ones in place on the result:
  // oneDNN takes eltwise post-ops on an eltwise primitive only in its reference kernel (2.6 and
  // 3.2: linear with a clip post-op is ref:any, each alone jit).
  // Across layouts the result is a temporary, reordered into the output after the last call.
  const std::vector<EltwiseStep> steps = eltwise_steps(node);
  memory dst = same_layout ? k->bind(md, dst_ref) : k->temporary(md);
  for (size_t i = 0; i < steps.size(); ++i) {
    dnnl::eltwise_forward::primitive_desc pd(c.engine, prop_kind::forward_inference, steps[i].alg,
                                             md, md, steps[i].alpha, steps[i].beta, make_attr());
    k->add(pd, dnnl::eltwise_forward(pd),
           {{DNNL_ARG_SRC, i == 0 ? src : dst}, {DNNL_ARG_DST, dst}});
  }
  if (!same_layout) k->add_reorder(dst, k->bind(arena_md(dst_ref), dst_ref));
  return k;
}

// ReduceMean on plain data (layout.cc keeps its input plain). oneDNN's jit reduction (2.6 and
// 3.2) takes plain sources whose reduced dims are the trailing ones; anything else goes to its
// reference kernel. So the kept dims are moved first and the reduced ones last (dims of size 1
// dropped): when that is a permutation, a reorder copies the source into a temporary in that order.
// The result, kept dims in their order, is the output's memory with or without keepdims.
std::unique_ptr<Kernel> build_reduce_mean(const BuildContext& c, const Chain& chain) {
  const ir::Node& node = *chain.head;
  const ir::Shape& xs = c.shape(node.inputs[0]);
  const auto& axes = std::get<ir::ReduceAttrs>(node.attrs).axes;
  const Dims x_strides = row_major_strides(to_dims(xs));
  Dims kept, reduced, kept_strides, reduced_strides;
  for (size_t d = 0; d < xs.size(); ++d) {
    if (xs[d] == 1) continue;
    const bool r = std::binary_search(axes.begin(), axes.end(), static_cast<int64_t>(d));
    (r ? reduced : kept).push_back(xs[d]);
    (r ? reduced_strides : kept_strides).push_back(x_strides[d]);
  }
  const TensorRef src_ref = c.ref(node.inputs[0]), dst_ref = c.ref(chain.output);
  // Only dims of size 1 reduced: a copy (oneDNN refuses a reduction whose dst equals its src).
  if (reduced.empty()) return std::make_unique<CopyKernel>(src_ref, dst_ref);
  Dims dims = kept, strides = kept_strides;
  dims.insert(dims.end(), reduced.begin(), reduced.end());
  strides.insert(strides.end(), reduced_strides.begin(), reduced_strides.end());
  Dims dst_dims = kept;
  dst_dims.resize(dims.size(), 1);
  const memory::desc md = plain_md(dims);
  auto k = std::make_unique<DnnlKernel>(c.engine);
  memory src = k->bind(memory::desc(dims, dt::f32, strides), src_ref);
  if (src.get_desc() != md) {  // the dims were permuted: gather them in order first
    const memory ordered = k->temporary(md);
    k->add_reorder(src, ordered);
    src = ordered;
  }
  const memory::desc dst_md = plain_md(dst_dims);
  dnnl::reduction::primitive_desc pd(c.engine, algorithm::reduction_mean, md, dst_md, 0.0f, 0.0f,
                                     make_attr());
  k->add(pd, dnnl::reduction(pd), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, k->bind(dst_md, dst_ref)}});
  return k;
}

// LRN across channels, always computed in nhwc: oneDNN 2.6 had a jit kernel for any size there
// (with beta = 0.75, as AlexNet and GoogLeNet use), for size 5 only in nchw and the blocked
// layouts; 3.2 has one for size 5 in nhwc, nchw and nChw8c alike, and only ref:any for size 3 in
// any of them (AVX2). Inputs and outputs laid out otherwise are reordered inside the kernel.
// oneDNN's window is (size - 1) / 2 channels on each side; ONNX's has one more above for even
// sizes, so those are refused rather than computed differently.
std::unique_ptr<Kernel> build_lrn(const BuildContext& c, const Chain& chain) {
  const ir::Node& node = *chain.head;
  const auto& a = std::get<ir::LrnAttrs>(node.attrs);
  BRAID_CHECK(a.size % 2 == 1, ErrorCode::kUnsupported, "node '", node.name,
              "' (LRN): the CPU executor supports odd sizes only (oneDNN's window is symmetric, "
              "ONNX's for size ",
              a.size, " is not)");
  const TensorRef src_ref = c.ref(node.inputs[0]), dst_ref = c.ref(chain.output);
  const memory::desc md = layout_md(to_dims(src_ref.type.shape), TensorLayout::kNhwc);
  dnnl::lrn_forward::primitive_desc pd(c.engine, prop_kind::forward_inference,
                                       algorithm::lrn_across_channels, md, md, a.size, a.alpha,
                                       a.beta, a.bias, make_attr());
  auto k = std::make_unique<DnnlKernel>(c.engine);
  const memory src = k->input(md, src_ref);
  k->add(pd, dnnl::lrn_forward(pd), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, k->output(md, dst_ref)}});
  return k;
}

// Whether every input of a Concat already lies in its window of the output, in the output's
// layout (the memory plan's in-place concat): then there is nothing to copy.
bool inputs_in_windows(const BuildContext& c, const ir::Node& node, int axis,
                       const TensorRef& dst) {
  const ir::Shape& ys = dst.type.shape;
  if (!dst.in_arena() || product(ys, 0, axis) != 1) return false;
  const int64_t slice_bytes = dst.type.bytes() / ys[axis];
  int64_t at = dst.arena_offset;
  for (ValueId v : node.inputs) {
    const TensorRef in = c.ref(v);
    if (!in.in_arena() || in.arena_offset != at || in.layout != dst.layout) return false;
    at += c.shape(v)[axis] * slice_bytes;
  }
  return true;
}

std::unique_ptr<Kernel> build_concat(const BuildContext& c, const Chain& chain) {
  const ir::Node& node = *chain.head;
  const ir::Shape& ys = c.shape(chain.output);
  const int axis =
      static_cast<int>(normalize_axis(std::get<ir::AxisAttrs>(node.attrs).axis, ys.size()));
  // oneDNN copies each input into its window of the output: a plain copy when all share one
  // layout, its reference kernel (slow) otherwise. So it concatenates in the inputs' common
  // layout (or the output's, or plain, when they differ), reordering the result when the
  // output's differs, and needs every window of a blocked layout to start at a whole block.
  const TensorRef dst_ref = c.ref(chain.output);
  if (inputs_in_windows(c, node, axis, dst_ref)) return nullptr;  // the memory plan did it
  std::vector<memory::desc> src_mds;
  const TensorLayout common = c.ref(node.inputs[0]).layout;
  bool same = true;
  for (ValueId v : node.inputs) {
    src_mds.push_back(arena_md(c.ref(v)));
    same = same && c.ref(v).layout == common;
  }
  auto aligned = [&](TensorLayout layout) {
    return std::all_of(node.inputs.begin(), node.inputs.end(),
                       [&](ValueId v) { return c.shape(v)[axis] % channel_block(layout) == 0; });
  };
  const TensorLayout layout = same && aligned(common)   ? common
                              : aligned(dst_ref.layout) ? dst_ref.layout
                                                        : TensorLayout::kPlain;
  const memory::desc dst_md = layout_md(to_dims(ys), layout);
  auto k = std::make_unique<DnnlKernel>(c.engine);
  // Inputs in other layouts are reordered into the concat's first: a concat of mixed layouts
  // has only oneDNN's reference kernel (DeepLabV3's ASPP: four blocked branches and a plain
  // resized pooling branch).
  std::vector<memory> srcs;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const TensorRef in = c.ref(node.inputs[i]);
    srcs.push_back(same ? k->bind(src_mds[i], in)
                        : k->input(layout_md(to_dims(c.shape(node.inputs[i])), layout), in));
    src_mds[i] = srcs.back().get_desc();
  }
  dnnl::concat::primitive_desc pd(c.engine, dst_md, axis, src_mds, make_attr());
  Args args{{DNNL_ARG_DST, k->output(dst_md, dst_ref)}};  // after the inputs' reorders
  for (size_t i = 0; i < srcs.size(); ++i)
    args[DNNL_ARG_MULTIPLE_SRC + static_cast<int>(i)] = srcs[i];
  k->add(pd, dnnl::concat(pd), std::move(args));
  return k;
}

// Whether Add/Mul/Sub/Div maps onto oneDNN's binary primitive: src0 must have the output's
// dims; src1 may broadcast. Returns the inputs in (src0, src1) order; Add and Mul commute, so
// either input may be src0; Pow has no binary primitive.
std::optional<std::pair<ValueId, ValueId>> binary_operands(const BuildContext& c,
                                                           const ir::Node& node) {
  const Dims out = to_dims(c.shape(node.outputs[0]));
  if (out.size() > DNNL_MAX_NDIMS) return std::nullopt;
  if (node.kind == ir::OpKind::Pow) return std::nullopt;
  const ValueId a = node.inputs[0], b = node.inputs[1];
  if (pad_front(to_dims(c.shape(a)), out.size()) == out) return std::pair{a, b};
  const bool commutes = node.kind == ir::OpKind::Add || node.kind == ir::OpKind::Mul;
  if (commutes && pad_front(to_dims(c.shape(b)), out.size()) == out) return std::pair{b, a};
  return std::nullopt;
}

// A broadcasting binary op on plain tensors, its dims folded to a form oneDNN 2.6's jit binary
// took (3.2's also took the unfolded [2, 128, 768] against [2, 128, 1] and [1, 1, 768]; folding
// costs nothing): src1 constant along the trailing dims becomes a per-channel operand ({1, P, S}
// against {1, P, 1}: a decomposed LayerNorm's x - mean over [B, N, C] and [B, N, 1], which
// otherwise gets ref:any), src1 varying only along them a row ({P, S} against {1, S}), a scalar {P}
// against {1}. Consecutive dims where src1 broadcasts, or where it does not, merge; dims of size 1
// drop. nullopt for other patterns (several alternations), which keep their dims.
std::optional<std::pair<Dims, Dims>> fold_broadcast(const Dims& out, const Dims& src1) {
  std::vector<std::pair<memory::dim, bool>> runs;  // (elements, src1 broadcasts there)
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == 1) continue;
    const bool broadcast = src1[i] == 1;
    if (!runs.empty() && runs.back().second == broadcast)
      runs.back().first *= out[i];
    else
      runs.emplace_back(out[i], broadcast);
  }
  if (runs.size() == 1 && runs[0].second) return std::pair{Dims{runs[0].first}, Dims{1}};
  if (runs.size() != 2) return std::nullopt;
  const memory::dim p = runs[0].first, s = runs[1].first;
  if (runs[1].second) return std::pair{Dims{1, p, s}, Dims{1, p, 1}};
  return std::pair{Dims{p, s}, Dims{1, s}};
}

std::unique_ptr<Kernel> build_binary(const BuildContext& c, const Chain& chain) {
  const ir::Node& node = *chain.head;
  const auto operands = binary_operands(c, node);
  if (!operands) {
    return std::make_unique<BroadcastKernel>(
        node.kind, std::vector{c.ref(node.inputs[0]), c.ref(node.inputs[1])}, c.ref(chain.output));
  }
  const Dims out = to_dims(c.shape(chain.output));
  const TensorRef src0 = c.ref(operands->first), src1 = c.ref(operands->second);
  const TensorRef dst = c.ref(chain.output);
  const algorithm alg = node.kind == ir::OpKind::Mul   ? algorithm::binary_mul
                        : node.kind == ir::OpKind::Sub ? algorithm::binary_sub
                        : node.kind == ir::OpKind::Div ? algorithm::binary_div
                                                       : algorithm::binary_add;
  dnnl::post_ops po;
  append_activations(po, chain);
  auto k = std::make_unique<DnnlKernel>(c.engine);
  if (to_dims(c.shape(operands->second)) == out) {
    // Same shapes: element by element in the output's layout, seen as a flat array (an input
    // laid out otherwise is reordered first). Never as 4-D blocked tensors: oneDNN 2.6.3's
    // jit:uni binary with an eltwise post-op on nChw8c data whose channel blocks are odd in
    // number (8, 24, 40 channels) writes past the tensor's end and misplaces elements on
    // AVX-512 (measured: 1x24x7x7 + Relu writes 192 floats past the end). 3.2 on AVX2 writes
    // it correctly; AVX-512 is unchecked, and the flat form is as fast.
    const memory::desc flat = plain_md({dst.type.elements()});
    dnnl::binary::primitive_desc pd(c.engine, alg, flat, flat, flat, make_attr(po));
    Args args{{DNNL_ARG_SRC_0, k->flat_input(dst.layout, src0)},
              {DNNL_ARG_SRC_1, k->flat_input(dst.layout, src1)},
              {DNNL_ARG_DST, k->bind(flat, dst)}};
    k->add(pd, dnnl::binary(pd), std::move(args));
    return k;
  }
  // Broadcasting: plain only (layout.h keeps such operands plain).
  const Dims src1_dims = pad_front(to_dims(c.shape(operands->second)), out.size());
  const auto folded =
      dst.layout == TensorLayout::kPlain ? fold_broadcast(out, src1_dims) : std::nullopt;
  const memory::desc src0_md = folded ? plain_md(folded->first) : layout_md(out, dst.layout);
  const memory::desc src1_md = plain_md(folded ? folded->second : src1_dims);
  dnnl::binary::primitive_desc pd(c.engine, alg, src0_md, src1_md, src0_md, make_attr(po));
  Args args{{DNNL_ARG_SRC_0, k->input(src0_md, src0)},
            {DNNL_ARG_SRC_1, k->bind(src1_md, src1)},
            {DNNL_ARG_DST, k->bind(src0_md, dst)}};
  k->add(pd, dnnl::binary(pd), std::move(args));
  return k;
}

std::unique_ptr<Kernel> build_sum(const BuildContext& c, const Chain& chain) {
  const ir::Node& node = *chain.head;
  const ir::Shape& ys = c.shape(chain.output);
  std::vector<TensorRef> refs;
  bool same_shapes = true;
  for (ValueId v : node.inputs) {
    refs.push_back(c.ref(v));
    same_shapes = same_shapes && c.shape(v) == ys;
  }
  if (node.inputs.size() == 1) {
    const TensorRef dst = c.ref(chain.output);
    if (refs[0].layout == dst.layout) return std::make_unique<CopyKernel>(refs[0], dst);
    auto k = std::make_unique<DnnlKernel>(c.engine);
    k->add_reorder(k->bind(arena_md(refs[0]), refs[0]), k->bind(arena_md(dst), dst));
    return k;
  }
  if (!same_shapes) return std::make_unique<BroadcastKernel>(node.kind, refs, c.ref(chain.output));
  // One layout throughout: a flat array. Mixed layouts: oneDNN's sum reorders each input into
  // the output (an accumulating reorder), slower but rare (layout.h blocks a Sum only when one
  // of its inputs is blocked).
  const TensorRef dst = c.ref(chain.output);
  const bool same_layout = std::all_of(refs.begin(), refs.end(),
                                       [&](const TensorRef& r) { return r.layout == dst.layout; });
  const memory::desc dst_md = same_layout ? flat_md(dst.type) : arena_md(dst);
  std::vector<memory::desc> src_mds;
  for (const TensorRef& r : refs) src_mds.push_back(same_layout ? dst_md : arena_md(r));
  const std::vector<float> scales(node.inputs.size(), 1.0f);
  dnnl::sum::primitive_desc pd(c.engine, dst_md, scales, src_mds, make_attr());
  auto k = std::make_unique<DnnlKernel>(c.engine);
  Args args{{DNNL_ARG_DST, k->bind(dst_md, dst)}};
  for (size_t i = 0; i < refs.size(); ++i)
    args[DNNL_ARG_MULTIPLE_SRC + static_cast<int>(i)] = k->bind(src_mds[i], refs[i]);
  k->add(pd, dnnl::sum(pd), std::move(args));
  return k;
}

std::unique_ptr<Kernel> build_batch_norm(const BuildContext& c, const Chain& chain) {
  const ir::Node& node = *chain.head;
  const ir::Shape& xs = c.shape(node.inputs[0]);
  const TensorRef src_ref = c.ref(node.inputs[0]), dst_ref = c.ref(chain.output);
  // 4-D: as laid out in the arena (a different output layout costs a reorder after). Other
  // ranks are plain, viewed as [N, C, spatial, 1]: oneDNN 2.6 had a jit kernel for nchw but
  // only its reference kernel for 3-D (ncw) data (3.2 runs both on ncsp_bnorm).
  const bool four_d = xs.size() == 4;
  const memory::desc md =
      four_d ? arena_md(src_ref) : plain_md({xs[0], xs[1], product(xs, 2, xs.size()), 1});
  const memory::desc channel_md = plain_md({xs[1]});
  auto flags = dnnl::normalization_flags::use_global_stats | dnnl::normalization_flags::use_scale |
               dnnl::normalization_flags::use_shift;
  if (!chain.activations.empty()) flags = flags | dnnl::normalization_flags::fuse_norm_relu;
  dnnl::batch_normalization_forward::primitive_desc pd(
      c.engine, prop_kind::forward_inference, md, md,
      std::get<ir::BatchNormAttrs>(node.attrs).epsilon, flags, make_attr());
  auto k = std::make_unique<DnnlKernel>(c.engine);
  k->add(pd, dnnl::batch_normalization_forward(pd),
         {{DNNL_ARG_SRC, k->bind(md, src_ref)},
          {DNNL_ARG_SCALE, k->bind(channel_md, c.ref(node.inputs[1]))},
          {DNNL_ARG_SHIFT, k->bind(channel_md, c.ref(node.inputs[2]))},
          {DNNL_ARG_MEAN, k->bind(channel_md, c.ref(node.inputs[3]))},
          {DNNL_ARG_VARIANCE, k->bind(channel_md, c.ref(node.inputs[4]))},
          {DNNL_ARG_DST, four_d ? k->output(md, dst_ref) : k->bind(md, dst_ref)}});
  return k;
}

std::unique_ptr<Kernel> build_softmax(const BuildContext& c, const Chain& chain) {
  const ir::Node& node = *chain.head;
  const ir::Shape& xs = c.shape(node.inputs[0]);
  const auto axis =
      static_cast<size_t>(normalize_axis(std::get<ir::AxisAttrs>(node.attrs).axis, xs.size()));
  // Opset-13 softmax normalizes one axis: view the tensor as [outer, axis, inner].
  const int64_t outer = product(xs, 0, axis), inner = product(xs, axis + 1, xs.size());
  const Dims dims = inner == 1 ? Dims{outer, xs[axis]} : Dims{outer, xs[axis], inner};
  const memory::desc md = plain_md(dims);
  dnnl::softmax_forward::primitive_desc pd(c.engine, prop_kind::forward_inference,
                                           algorithm::softmax_accurate, md, md, 1, make_attr());
  auto k = std::make_unique<DnnlKernel>(c.engine);
  k->add(pd, dnnl::softmax_forward(pd),
         {{DNNL_ARG_SRC, k->bind(md, c.ref(node.inputs[0]))},
          {DNNL_ARG_DST, k->bind(md, c.ref(chain.output))}});
  return k;
}

std::unique_ptr<Kernel> build_layer_norm(const BuildContext& c, const Chain& chain) {
  const ir::Node& node = *chain.head;
  const auto& a = std::get<ir::LayerNormAttrs>(node.attrs);
  const ir::Shape& xs = c.shape(node.inputs[0]);
  const auto axis = static_cast<size_t>(normalize_axis(a.axis, xs.size()));
  // oneDNN normalizes the last dim: view the tensor as [outer, inner].
  const int64_t outer = product(xs, 0, axis), inner = product(xs, axis, xs.size());
  const memory::desc md = plain_md({outer, inner});
  const memory::desc param_md = plain_md({inner});
  const bool has_bias = node.inputs.size() > 2;
  auto flags = dnnl::normalization_flags::use_scale;
  if (has_bias) flags = flags | dnnl::normalization_flags::use_shift;
  dnnl::layer_normalization_forward::primitive_desc pd(c.engine, prop_kind::forward_inference, md,
                                                       md, a.epsilon, flags, make_attr());
  auto k = std::make_unique<DnnlKernel>(c.engine);
  Args args{{DNNL_ARG_SRC, k->bind(md, c.ref(node.inputs[0]))},
            {DNNL_ARG_SCALE, k->bind(param_md, c.ref(node.inputs[1]))},
            {DNNL_ARG_DST, k->bind(md, c.ref(chain.output))}};
  if (has_bias) args[DNNL_ARG_SHIFT] = k->bind(param_md, c.ref(node.inputs[2]));
  // Statistics are outputs of inference too; the kernel owns them (one lane at a time).
  if (pd.mean_desc().get_size() > 0) {
    args[DNNL_ARG_MEAN] = memory(pd.mean_desc(), c.engine);
    args[DNNL_ARG_VARIANCE] = memory(pd.variance_desc(), c.engine);
  }
  k->add(pd, dnnl::layer_normalization_forward(pd), std::move(args));
  return k;
}

std::unique_ptr<Kernel> build_transpose(const BuildContext& c, const Chain& chain) {
  const ir::Node& node = *chain.head;
  const ir::Shape& xs = c.shape(node.inputs[0]);
  std::vector<int64_t> perm = std::get<ir::TransposeAttrs>(node.attrs).perm;
  if (perm.empty())
    for (size_t i = xs.size(); i-- > 0;) perm.push_back(static_cast<int64_t>(i));
  const Dims dims = to_dims(xs);
  const Dims y_strides = row_major_strides(to_dims(c.shape(chain.output)));
  // The output seen with the input's axes: input axis perm[i] is output axis i.
  Dims strides(dims.size());
  for (size_t i = 0; i < perm.size(); ++i) strides[perm[i]] = y_strides[i];
  if (xs.empty()) strides = {1};
  const memory::desc src_md = plain_md(dims);
  const memory::desc dst_md(dims, dt::f32, strides);
  dnnl::reorder::primitive_desc pd(c.engine, src_md, c.engine, dst_md, make_attr());
  auto k = std::make_unique<DnnlKernel>(c.engine);
  k->add(pd, dnnl::reorder(pd),
         {{DNNL_ARG_FROM, k->bind(src_md, c.ref(node.inputs[0]))},
          {DNNL_ARG_TO, k->bind(dst_md, c.ref(chain.output))}});
  return k;
}

std::unique_ptr<Kernel> build_split(const BuildContext& c, const Chain& chain) {
  const ir::Node& node = *chain.head;
  const ir::Shape& xs = c.shape(node.inputs[0]);
  const auto& a = std::get<ir::SplitAttrs>(node.attrs);
  const auto axis = static_cast<size_t>(normalize_axis(a.axis, xs.size()));
  const memory::desc src_md = plain_md(to_dims(xs));
  auto k = std::make_unique<DnnlKernel>(c.engine);
  Dims offsets(xs.size(), 0);
  // One reorder per output, each from a window (submemory) of the input.
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    const Dims dims = to_dims(c.shape(node.outputs[i]));
    const memory::desc window = src_md.submemory_desc(dims, offsets);
    const memory::desc dst_md = plain_md(dims);
    dnnl::reorder::primitive_desc pd(c.engine, window, c.engine, dst_md, make_attr());
    k->add(pd, dnnl::reorder(pd),
           {{DNNL_ARG_FROM, k->bind(window, c.ref(node.inputs[0]))},
            {DNNL_ARG_TO, k->bind(dst_md, c.ref(node.outputs[i]))}});
    offsets[axis] += dims[axis];
  }
  return k;
}

std::unique_ptr<Kernel> build_view(const BuildContext& c, const Chain& chain) {
  const TensorRef src = c.ref(chain.head->inputs[0]);
  const TensorRef dst = c.ref(chain.output);
  // The executor aliased the output to the input: nothing to run.
  if (src.in_arena() && dst.in_arena() && src.arena_offset == dst.arena_offset) return nullptr;
  return std::make_unique<CopyKernel>(src, dst);
}

std::unique_ptr<Kernel> build(const BuildContext& c, const Chain& chain) {
  const ir::Node& node = *chain.head;
  // The layout pass (layout.h) gives blocked tensors only to kernels that take them.
  const bool reads_blocked = accepts_blocked(c.graph, node, false);
  for (size_t i = 0; i < node.inputs.size(); ++i)
    BRAID_ASSERT(c.ref(node.inputs[i]).layout == TensorLayout::kPlain || reads_blocked, "node '",
                 node.name, "' cannot read input #", i, " blocked");
  BRAID_ASSERT(
      c.ref(chain.output).layout == TensorLayout::kPlain || accepts_blocked(c.graph, node, true),
      "node '", node.name, "' cannot write its output blocked");
  switch (node.kind) {
    case ir::OpKind::Conv:
      return build_conv(c, chain);
    case ir::OpKind::Relu:
    case ir::OpKind::Sigmoid:
    case ir::OpKind::Tanh:
    case ir::OpKind::Gelu:
    case ir::OpKind::Clip:
    case ir::OpKind::HardSigmoid:
    case ir::OpKind::HardSwish:
      return build_eltwise(c, chain);
    case ir::OpKind::ReduceMean:
      return build_reduce_mean(c, chain);
    case ir::OpKind::LRN:
      return build_lrn(c, chain);
    case ir::OpKind::MaxPool:
    case ir::OpKind::AveragePool:
      return build_pool(c, chain);
    case ir::OpKind::GlobalAveragePool:
      return build_global_average_pool(c, chain);
    case ir::OpKind::Concat:
      return build_concat(c, chain);
    case ir::OpKind::Add:
    case ir::OpKind::Mul:
      return build_binary(c, chain);
    case ir::OpKind::Sum:
      return build_sum(c, chain);
    case ir::OpKind::MatMul:
      return build_matmul(c, chain);
    case ir::OpKind::Gemm:
      return build_gemm(c, chain);
    case ir::OpKind::BatchNormalization:
      return build_batch_norm(c, chain);
    case ir::OpKind::Softmax:
      return build_softmax(c, chain);
    case ir::OpKind::LayerNormalization:
      return build_layer_norm(c, chain);
    case ir::OpKind::Reshape:
    case ir::OpKind::Flatten:
    case ir::OpKind::Identity:
      return build_view(c, chain);
    case ir::OpKind::Transpose:
      return build_transpose(c, chain);
    case ir::OpKind::Split:
      return build_split(c, chain);
    case ir::OpKind::Pad: {
      const auto& a = std::get<ir::PadAttrs>(node.attrs);
      const TensorRef src = c.ref(node.inputs[0]), dst = c.ref(chain.output);
      if (src.layout == TensorLayout::kPlain && dst.layout == TensorLayout::kPlain)
        return std::make_unique<PadKernel>(src, dst, a.pads, a.value);
      return std::make_unique<WindowPadKernel>(c, src, dst, a.pads, a.value);
    }
    case ir::OpKind::Erf:
      return build_erf(c, chain);
    case ir::OpKind::Sub:
    case ir::OpKind::Div:
    case ir::OpKind::Pow:
      return build_binary(c, chain);
    case ir::OpKind::Sqrt:
      return build_eltwise(c, chain);
    case ir::OpKind::Where:
      return build_where(c, chain);
    case ir::OpKind::Expand:
      return build_expand(c, chain);
    case ir::OpKind::Gather:
      return build_gather(c, chain);
    case ir::OpKind::Cast:
      return build_cast(c, chain);
    case ir::OpKind::Equal:
      return build_equal(c, chain);
    case ir::OpKind::Not:
      return build_not(c, chain);
    case ir::OpKind::Slice:
      return build_slice(c, chain);
    case ir::OpKind::ConvTranspose:
      return build_conv_transpose(c, chain);
    case ir::OpKind::Resize:
      return build_resize(c, chain);
  }
  BRAID_ASSERT(false, "unhandled op kind");
}

// ---- Fusion -------------------------------------------------------------------------------

// The op after ops[at] when it is the only reader of `value` (and `value` is not a graph
// output), so computing it inside the producer's kernel skips writing `value`. Fusion is
// limited to adjacent ops so a kernel never writes a tensor earlier than the unit's order.
const ir::Node* sole_next_consumer(const BuildContext& c, std::span<const NodeId> ops, size_t at,
                                   ValueId value) {
  if (at + 1 >= ops.size()) return nullptr;
  const ir::Value& v = c.graph.value(value);
  if (c.graph.is_output(value) || v.consumers.size() != 1 || v.consumers[0] != ops[at + 1])
    return nullptr;
  return &c.graph.node(ops[at + 1]);
}

// The parameter of an Add that adds a fixed tensor to `value` without changing its shape.
std::optional<ValueId> bias_of(const BuildContext& c, const ir::Node& add, ValueId value) {
  if (add.kind != ir::OpKind::Add || add.inputs.size() != 2) return std::nullopt;
  const ValueId other = add.inputs[0] == value ? add.inputs[1] : add.inputs[0];
  if (other == value || !c.is_fixed(other)) return std::nullopt;
  if (c.shape(add.outputs[0]) != c.shape(value)) return std::nullopt;
  if (c.shape(other).size() > c.shape(value).size()) return std::nullopt;
  // oneDNN's matmul (2.6 and 3.2) has a real kernel (brgemm, gemm) only for a bias of shape
  // [1, ..., 1, N]; for any other (a scalar, MaxViT's relative-position bias [heads, 49, 49]) it
  // falls back to ref:any, which made MaxViT's 22 attention-score MatMuls take 1.8 s of its 2.6 s.
  // Such an Add runs as its own kernel.
  const ir::Shape& bias = c.shape(other);
  if (bias.empty() || bias.back() != c.shape(value).back() ||
      std::any_of(bias.begin(), bias.end() - 1, [](int64_t d) { return d != 1; }))
    return std::nullopt;
  return other;
}

// The other input of an Add that adds an activation of the same shape and blocked layout to
// `value` (a residual connection; ir::fuse puts it in the convolution's unit): the convolution
// adds it as a binary post-op, read in the arena's layout. A plain output is excluded: the
// convolution then writes a blocked copy whose layout the operand would not share. So is
// nChw16c below AVX-512: oneDNN 3.2's AVX2 kernels have no binary post-op there (ref:any for
// every ResNet-50 conv3, seen here), only for nhwc and nChw8c.
std::optional<ValueId> residual_of(const BuildContext& c, const ir::Node& add, ValueId value) {
  if (add.kind != ir::OpKind::Add || add.inputs.size() != 2) return std::nullopt;
  const ValueId other = add.inputs[0] == value ? add.inputs[1] : add.inputs[0];
  if (other == value || c.is_fixed(other)) return std::nullopt;
  if (c.shape(other) != c.shape(value) || c.shape(add.outputs[0]) != c.shape(value))
    return std::nullopt;
  const TensorLayout layout = c.ref(add.outputs[0]).layout;
  if (layout == TensorLayout::kPlain || c.ref(other).layout != layout ||
      c.ref(value).layout != layout)
    return std::nullopt;
  static const bool has_avx512 = dnnl::get_effective_cpu_isa() >= dnnl::cpu_isa::avx512_core;
  if (layout == TensorLayout::kNChw16c && !has_avx512) return std::nullopt;
  return other;
}

// The Mul of a SiLU that follows ops[at] in the unit: ops[at + 1] is Sigmoid(value) and
// ops[at + 2] the Mul that ir::silu_mul pairs with it (ir::fuse groups them so). oneDNN
// computes it as one eltwise_swish (alpha 1) post-op.
const ir::Node* silu_after(const BuildContext& c, std::span<const NodeId> ops, size_t at,
                           ValueId value) {
  if (at + 2 >= ops.size()) return nullptr;
  const ir::Node& sigmoid = c.graph.node(ops[at + 1]);
  if (sigmoid.kind != ir::OpKind::Sigmoid || sigmoid.inputs[0] != value) return nullptr;
  const ir::Node* mul = ir::silu_mul(c.graph, sigmoid);
  return mul == &c.graph.node(ops[at + 2]) ? mul : nullptr;
}

// Whether `activation` can extend `chain`'s eltwise post-ops. oneDNN 2.x's post-op chain gives
// every eltwise step of one algorithm the first such step's alpha and beta (seen on Debian 12's
// oneDNN 2.6: Conv, Clip(0, 6), Clip(0, 1) clipped to 6), so a step that would repeat an
// algorithm with other parameters ends the chain and runs as its own kernel. oneDNN 3.2 computed
// such chains right in every AVX2 kernel tried (brgconv, jit_1x1, jit_dw, brdgmm_dw, gemm, the
// matmul and binary ones; 2.6 did not on the same machine); AVX-512 is unchecked, so the split
// stays.
bool joins_post_ops(const Chain& chain, const ir::Node& activation) {
  for (const EltwiseStep& step : eltwise_steps(activation))
    for (const ir::Node* earlier : chain.activations)
      for (const EltwiseStep& before : eltwise_steps(*earlier))
        if (before.alg == step.alg && (before.alpha != step.alpha || before.beta != step.beta))
          return false;
  return true;
}

Chain plan_chain(const BuildContext& c, std::span<const NodeId> ops, size_t at) {
  Chain chain;
  chain.head = &c.graph.node(ops[at]);
  chain.output = chain.head->outputs[0];
  const ir::Node& head = *chain.head;
  // The next op, when it can join: the kernel writes the chain's last output, so it must be
  // one the head can write in the layout the arena has it in.
  auto next = [&]() -> const ir::Node* {
    const ir::Node* n = sole_next_consumer(c, ops, at + chain.length - 1, chain.output);
    if (n == nullptr || c.ref(n->outputs[0]).layout == TensorLayout::kPlain ||
        accepts_blocked(c.graph, *chain.head, true))
      return n;
    return nullptr;
  };
  auto take = [&](const ir::Node* n) {
    chain.output = n->outputs[0];
    ++chain.length;
  };

  bool post_ops = false;
  switch (head.kind) {
    case ir::OpKind::ConvTranspose: {
      // Folded into the weights and bias like Conv's: an Add of a per-channel parameter (as
      // paddle2onnx writes the bias) and a BatchNormalization; then activation post-ops.
      post_ops = deconvolution_fits(c, head);
      if (!post_ops) break;
      const int64_t oc = c.shape(chain.output)[1];
      const ir::Node* n = next();
      if (n != nullptr && n->kind == ir::OpKind::Add && n->inputs.size() == 2) {
        const ValueId other = n->inputs[0] == chain.output ? n->inputs[1] : n->inputs[0];
        const ir::Shape bias = c.shape(other);
        const bool per_channel = other != chain.output && c.is_fixed(other) && bias.size() <= 4 &&
                                 ir::num_elements(bias) == oc && bias.size() >= 3 &&
                                 bias[bias.size() - 3] == oc &&
                                 c.shape(n->outputs[0]) == c.shape(chain.output);
        if (per_channel) {
          chain.bias_add = n;
          take(n);
          n = next();
        }
      }
      if (n != nullptr && n->kind == ir::OpKind::BatchNormalization &&
          n->inputs[0] == chain.output &&
          std::all_of(n->inputs.begin() + 1, n->inputs.end(),
                      [&](ValueId v) { return c.is_fixed(v); })) {
        chain.batch_norm = n;
        take(n);
      }
      break;
    }
    case ir::OpKind::Conv: {
      post_ops = true;
      const auto& a = std::get<ir::ConvAttrs>(head.attrs);
      const bool fixed =
          c.is_fixed(head.inputs[1]) && (head.inputs.size() < 3 || c.is_fixed(head.inputs[2]));
      const ir::Node* n = next();
      if (a.activation == ir::Activation::kNone && fixed && n != nullptr &&
          n->kind == ir::OpKind::BatchNormalization && n->inputs[0] == chain.output &&
          std::all_of(n->inputs.begin() + 1, n->inputs.end(),
                      [&](ValueId v) { return c.is_fixed(v); })) {
        chain.batch_norm = n;
        take(n);
      }
      break;
    }
    case ir::OpKind::MatMul:
    case ir::OpKind::Gemm: {
      post_ops = true;
      const ir::Node* n = next();
      if (n != nullptr && (head.kind == ir::OpKind::MatMul || head.inputs.size() == 2) &&
          bias_of(c, *n, chain.output)) {
        chain.bias_add = n;
        take(n);
      }
      break;
    }
    case ir::OpKind::Add:
    case ir::OpKind::Mul:
    case ir::OpKind::Sub:
    case ir::OpKind::Div:
      post_ops = binary_operands(c, head).has_value();
      break;
    case ir::OpKind::BatchNormalization: {
      // oneDNN fuses only ReLU into batch normalization (fuse_norm_relu).
      const ir::Node* n = next();
      if (n != nullptr && n->kind == ir::OpKind::Relu) {
        chain.activations.push_back(n);
        take(n);
      }
      break;
    }
    default:
      break;
  }
  while (post_ops) {
    if (const ir::Node* mul = silu_after(c, ops, at + chain.length - 1, chain.output);
        mul != nullptr && joins_post_ops(chain, *mul) &&
        (c.ref(mul->outputs[0]).layout == TensorLayout::kPlain ||
         accepts_blocked(c.graph, *chain.head, true))) {
      take(&c.graph.node(ops[at + chain.length]));  // the Sigmoid
      take(mul);
      chain.activations.push_back(mul);  // eltwise_swish
      continue;
    }
    const ir::Node* n = next();
    if (n == nullptr) break;
    if (head.kind == ir::OpKind::Conv && chain.residual == nullptr) {
      if (std::optional<ValueId> other = residual_of(c, *n, chain.output)) {
        chain.residual = n;
        chain.residual_input = *other;
        chain.residual_after = chain.activations.size();
        take(n);
        continue;
      }
    }
    if (!ir::is_activation(n->kind) || !joins_post_ops(chain, *n)) break;
    chain.activations.push_back(n);
    take(n);
  }
  return chain;
}

// Warns once per node and implementation: the profiler prepares the same units many times.
void warn_if_reference(const ir::Node& node, const std::vector<std::string>& implementations) {
  static std::mutex mutex;
  static std::set<std::string> warned;
  for (const std::string& impl : implementations) {
    if (!is_reference_implementation(impl)) continue;
    const std::string key = node.name + "\n" + impl;
    std::lock_guard lock(mutex);
    if (!warned.insert(key).second) continue;
    spdlog::warn(
        "node '{}' ({}): oneDNN has only its reference implementation ({}) for this op in the "
        "layouts the CPU executor can give it; expect it to be slow",
        node.name, ir::to_onnx_name(node.kind), impl);
  }
}

}  // namespace
}  // namespace detail

bool is_reference_implementation(std::string_view name) {
  return name.starts_with("ref:") || name.find("+ref:") != std::string_view::npos ||
         name.find("_ref:") != std::string_view::npos;
}

std::vector<std::string> implementation_names(const Kernel& kernel) {
  if (const auto* k = dynamic_cast<const detail::DnnlKernel*>(&kernel)) return k->implementations();
  if (const auto* k = dynamic_cast<const detail::WindowPadKernel*>(&kernel))
    return k->implementations();
  return {};
}

bool supports(const ir::Graph& graph, NodeId id) {
  const ir::Node& node = graph.node(id);
  // Data movement and comparisons run on any dtype; arithmetic on float32 only.
  const bool any_dtype = node.kind == ir::OpKind::Where || node.kind == ir::OpKind::Expand ||
                         node.kind == ir::OpKind::Gather || node.kind == ir::OpKind::Cast ||
                         node.kind == ir::OpKind::Equal || node.kind == ir::OpKind::Not ||
                         node.kind == ir::OpKind::Slice || ir::is_view(node.kind);
  auto ok = [&](ValueId v) {
    const ir::TensorType& t = graph.value(v).type;
    return (any_dtype || t.dtype == ir::DType::kFloat32) && t.rank() <= DNNL_MAX_NDIMS;
  };
  if (!std::all_of(node.inputs.begin(), node.inputs.end(), ok) ||
      !std::all_of(node.outputs.begin(), node.outputs.end(), ok))
    return false;
  switch (node.kind) {
    case ir::OpKind::Conv:
    case ir::OpKind::Relu:
    case ir::OpKind::Sigmoid:
    case ir::OpKind::Tanh:
    case ir::OpKind::Gelu:
    case ir::OpKind::Clip:
    case ir::OpKind::HardSigmoid:
    case ir::OpKind::HardSwish:
    case ir::OpKind::ReduceMean:
    case ir::OpKind::LRN:
    case ir::OpKind::MaxPool:
    case ir::OpKind::AveragePool:
    case ir::OpKind::GlobalAveragePool:
    case ir::OpKind::Concat:
    case ir::OpKind::Add:
    case ir::OpKind::Mul:
    case ir::OpKind::Sum:
    case ir::OpKind::MatMul:
    case ir::OpKind::Gemm:
    case ir::OpKind::BatchNormalization:
    case ir::OpKind::Softmax:
    case ir::OpKind::LayerNormalization:
    case ir::OpKind::Reshape:
    case ir::OpKind::Flatten:
    case ir::OpKind::Transpose:
    case ir::OpKind::Split:
    case ir::OpKind::Identity:
    case ir::OpKind::Pad:
      return true;
    case ir::OpKind::Erf:
    case ir::OpKind::Sub:
    case ir::OpKind::Div:
    case ir::OpKind::Pow:
    case ir::OpKind::Sqrt:
    case ir::OpKind::Where:
    case ir::OpKind::Expand:
    case ir::OpKind::Gather:
    case ir::OpKind::Cast:
    case ir::OpKind::Equal:
    case ir::OpKind::Not:
    case ir::OpKind::Slice:
    case ir::OpKind::ConvTranspose:
    case ir::OpKind::Resize:
      return true;
  }
  return false;
}

std::vector<std::unique_ptr<Kernel>> make_unit_kernels(const ir::Graph& graph,
                                                       std::span<const NodeId> ops,
                                                       const TensorLocator& locate,
                                                       const KernelBuildContext& context,
                                                       Bytes* scratchpad_bytes) {
  const detail::BuildContext c{graph, locate, context.engine, dnnl::stream(context.engine)};
  std::vector<std::unique_ptr<Kernel>> kernels;
  Bytes scratch = 0;
  for (NodeId id : ops) {  // all of them first: fused ops are never dispatched on their own
    const ir::Node& node = graph.node(id);
    BRAID_CHECK(
        supports(graph, id), ErrorCode::kUnsupported, "node '", node.name, "' (",
        ir::to_onnx_name(node.kind), "): the CPU executor runs tensors of rank <= ", DNNL_MAX_NDIMS,
        ", and int64/bool ones only in Gather, Cast, Equal, Not, Where, Expand, Slice and views");
  }
  for (size_t at = 0; at < ops.size();) {
    const ir::Node& node = graph.node(ops[at]);
    const detail::Chain chain = detail::plan_chain(c, ops, at);
    std::unique_ptr<Kernel> kernel;
    try {
      kernel = detail::build(c, chain);
    } catch (const dnnl::error& e) {
      BRAID_THROW(ErrorCode::kUnsupported, "node '", node.name, "' (", ir::to_onnx_name(node.kind),
                  "): oneDNN cannot create its primitive: ", e.what());
    }
    if (const auto* k = dynamic_cast<const detail::DnnlKernel*>(kernel.get()))
      scratch = std::max(scratch, k->scratchpad_bytes());
    if (const auto* k = dynamic_cast<const detail::WindowPadKernel*>(kernel.get()))
      scratch = std::max(scratch, k->scratchpad_bytes());
    if (kernel) {
      detail::warn_if_reference(node, implementation_names(*kernel));
      kernels.push_back(std::move(kernel));
    }
    at += chain.length;
  }
  if (scratchpad_bytes != nullptr) *scratchpad_bytes = scratch;
  return kernels;
}

std::unique_ptr<Kernel> make_merged_conv_kernel(const ir::Graph& graph,
                                                std::span<const std::vector<NodeId>> unit_ops,
                                                const TensorLocator& locate,
                                                const KernelBuildContext& context,
                                                Bytes* scratchpad_bytes, std::string* why) {
  const detail::BuildContext c{graph, locate, context.engine, dnnl::stream(context.engine)};
  std::vector<detail::Chain> chains;
  for (const std::vector<NodeId>& ops : unit_ops) {
    for (NodeId id : ops)
      if (!supports(graph, id)) {
        if (why != nullptr)
          *why = ::braid::detail::concat("node '", graph.node(id).name, "' is not supported");
        return nullptr;
      }
    if (ops.empty()) {
      if (why != nullptr) *why = "a unit without ops";
      return nullptr;
    }
    chains.push_back(detail::plan_chain(c, ops, 0));
    if (chains.back().length != ops.size()) {
      if (why != nullptr)
        *why = ::braid::detail::concat("the unit of '", graph.node(ops[0]).name,
                                       "' is more than one Conv chain");
      return nullptr;
    }
  }
  std::unique_ptr<Kernel> kernel;
  try {
    kernel = detail::build_merged_conv(c, chains, why);
  } catch (const dnnl::error& e) {
    if (why != nullptr) *why = ::braid::detail::concat("oneDNN cannot create it: ", e.what());
    return nullptr;
  }
  if (kernel == nullptr) return nullptr;
  if (scratchpad_bytes != nullptr)
    *scratchpad_bytes = static_cast<const detail::DnnlKernel&>(*kernel).scratchpad_bytes();
  detail::warn_if_reference(graph.node(unit_ops[0][0]), implementation_names(*kernel));
  return kernel;
}

}  // namespace braid::exec::cpu
