// Element-wise kernels: the activation ops as oneDNN eltwise steps (eltwise_steps, which
// append_activation turns into the post-ops other kernels fuse), binary Add/Mul/Sub/Div/Pow on
// oneDNN's binary primitive or, when both inputs broadcast, as a plain loop (BroadcastKernel),
// and Sum.
#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <optional>

#include "base/error.h"
#include "exec/cpu/cpu_kernels_impl.h"

namespace braid::exec::cpu::detail {

using dnnl::algorithm;
using dnnl::prop_kind;

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

namespace {

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

memory::desc flat_md(const ir::TensorType& t) {
  return plain_md({t.elements()});
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

}  // namespace

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

}  // namespace braid::exec::cpu::detail
