// CPU kernels for the compute ops: Conv (+ folded BatchNormalization + activation post-ops),
// Max/AveragePool, GlobalAveragePool, MatMul (+ bias Add) and Gemm. Conv and pooling take their
// activations in the layout the arena has them in (layout.h); MatMul and Gemm only plain ones.
// ConvTranspose runs on oneDNN's deconvolution. Weights are reordered once, here, into the
// layout the primitive prefers.
#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "base/error.h"
#include "exec/cpu/cpu_kernels_impl.h"
#include "exec/cpu/layout.h"
#include "exec/merged_conv.h"

namespace braid::exec::cpu::detail {
namespace {

using dnnl::algorithm;
using dnnl::prop_kind;
using dt = memory::data_type;
using tag = memory::format_tag;

// Dense 1x1 convs with at least this many input channels stay on plain nchw (see build_conv).
constexpr int64_t kMinPlainChannels = 32;

// A kernel-owned copy of `data` in a plain layout (folded or rescaled parameters).
memory owned_copy(const BuildContext& c, const Dims& dims, std::span<const float> data) {
  memory m(plain_md(dims), c.engine);
  std::copy(data.begin(), data.end(), static_cast<float*>(m.get_data_handle()));
  return m;
}

std::span<const float> fixed_data(const BuildContext& c, ValueId v) {
  return {c.ref(v).fixed, static_cast<size_t>(c.graph.value(v).type.elements())};
}

// A BatchNormalization after a Conv or ConvTranspose, folded into it: returns the per-channel
// weight factor s = scale / sqrt(var + eps) and turns `bias` into (bias - mean) * s + shift.
std::vector<double> fold_batch_norm(const BuildContext& c, const ir::Node& bn,
                                    std::vector<double>& bias) {
  const float eps = std::get<ir::BatchNormAttrs>(bn.attrs).epsilon;
  const auto scale = fixed_data(c, bn.inputs[1]), shift = fixed_data(c, bn.inputs[2]);
  const auto mean = fixed_data(c, bn.inputs[3]), var = fixed_data(c, bn.inputs[4]);
  std::vector<double> s(bias.size());
  for (size_t o = 0; o < s.size(); ++o) {
    s[o] = scale[o] / std::sqrt(static_cast<double>(var[o]) + eps);
    bias[o] = (bias[o] - mean[o]) * s[o] + shift[o];
  }
  return s;
}

// oneDNN 3.2 lists its brgemm-based convolutions first on AVX2. For spatial kernels they are the
// fastest here (brgconv against 3.2's jit:avx2: 0.5-0.9x), but for 1x1 and depthwise convs they
// are not: on the zoo's shapes (nhwc, batch 1, this AMD EPYC), brgconv_1x1 took 1.0-1.3x the time
// of jit_1x1 and brdgmm_dw 1.0-1.35x that of jit_dw, at 1 and 2 threads, and NASNet (267 1x1 and
// 220 depthwise convs) ran 1.32x slower end to end (bench/onednn/README.md "Implementation
// choice"). Take jit_1x1 or jit_dw where oneDNN has them for the conv; elsewhere (a 1x1 conv
// that jit_1x1 does not take, such as NASNet's strided path convs) keep oneDNN's choice.
bool slower_brgemm_conv(std::string_view impl) {
  return impl.find("brgconv_1x1") != std::string_view::npos ||
         impl.find("brdgmm_dw") != std::string_view::npos;
}

template <typename MakePd>
void prefer_jit_conv(dnnl::convolution_forward::primitive_desc& pd, const MakePd& make_pd) {
  if (!slower_brgemm_conv(pd.impl_info_str())) return;
  // next_impl moves the handle (which a C++ copy shares): step a fresh one on pd's layouts.
  auto candidate = make_pd(pd.src_desc(), pd.dst_desc());
  while (candidate.next_impl()) {
    const std::string_view impl = candidate.impl_info_str();
    if (impl.starts_with("jit_1x1:") || impl.starts_with("jit_dw:")) {
      pd = std::move(candidate);
      return;
    }
  }
}

}  // namespace

namespace {

// A conv chain's fixed weights and bias with the BatchNormalization after the conv (if any)
// folded in: s = scale / sqrt(var + eps), w' = w * s[oc], b' = (b - mean) * s[oc] + shift; the
// bias is zeros where the conv has none.
std::pair<std::vector<float>, std::vector<float>> folded_conv(const BuildContext& c,
                                                              const Chain& chain) {
  const ir::Node& conv = *chain.head;
  const auto weights = fixed_data(c, conv.inputs[1]);
  const size_t oc = static_cast<size_t>(c.shape(conv.inputs[1])[0]);
  std::vector<double> bias(oc, 0.0);
  if (conv.inputs.size() > 2) {
    const auto given = fixed_data(c, conv.inputs[2]);
    bias.assign(given.begin(), given.end());
  }
  std::vector<double> s(oc, 1.0);
  if (chain.batch_norm != nullptr) s = fold_batch_norm(c, *chain.batch_norm, bias);
  const size_t per_oc = weights.size() / oc;
  std::vector<float> w(weights.size());
  for (size_t o = 0; o < oc; ++o)
    for (size_t i = 0; i < per_oc; ++i)
      w[o * per_oc + i] = static_cast<float>(weights[o * per_oc + i] * s[o]);
  return {std::move(w), std::vector<float>(bias.begin(), bias.end())};
}

}  // namespace

std::unique_ptr<Kernel> build_conv(const BuildContext& c, const Chain& chain) {
  const ir::Node& node = *chain.head;
  const auto& a = std::get<ir::ConvAttrs>(node.attrs);
  const ValueId x = node.inputs[0], w = node.inputs[1];
  const bool has_b = node.inputs.size() > 2;
  const ValueId b = has_b ? node.inputs[2] : ValueId{};
  const ir::Shape& ws = c.shape(w);
  const int64_t oc = ws[0], groups = a.groups;
  const Dims w_dims = groups > 1 ? Dims{groups, oc / groups, ws[1], ws[2], ws[3]} : to_dims(ws);
  const TensorRef src_ref = c.ref(x), dst_ref = c.ref(chain.output);
  const memory::desc src_md = arena_md(src_ref);
  const memory::desc dst_md = arena_md(dst_ref);
  const memory::desc user_w_md = plain_md(w_dims);
  const memory::desc bias_md = plain_md({oc});
  const bool w_fixed = c.is_fixed(w);
  // Fixed weights let the primitive choose its layout; we reorder them once below.
  const memory::desc w_md = w_fixed ? memory::desc(w_dims, dt::f32, tag::any) : user_w_md;
  // Activations already blocked in the arena (layout.h) are used as they are. A plain one: on
  // nchw, oneDNN runs a convolution as im2col + GEMM (x64:gemm:jit, 2.6 and 3.2). On 2.6 its
  // blocked kernels plus a reorder in and out of the lane scratchpad were faster on this machine
  // (1 and 2 threads) for spatial kernels (about 2x), grouped and depthwise convs (10x) and few
  // input channels; for dense 1x1 convs with 32+ channels the two were level, and plain saves
  // the copies.
  const bool blocked = groups > 1 || ws[2] * ws[3] > 1 || ws[1] < kMinPlainChannels ||
                       src_ref.layout != TensorLayout::kPlain ||
                       dst_ref.layout != TensorLayout::kPlain;
  auto conv_md = [&](const memory::desc& md, const TensorRef& ref) {
    if (!blocked || ref.layout != TensorLayout::kPlain) return md;
    return memory::desc(md.get_dims(), dt::f32, tag::any);
  };
  const memory::desc conv_src_md = conv_md(src_md, src_ref);
  const memory::desc conv_dst_md = conv_md(dst_md, dst_ref);

  std::vector<float> folded_w, folded_b;
  if (chain.batch_norm != nullptr) std::tie(folded_w, folded_b) = folded_conv(c, chain);
  const bool has_bias = has_b || chain.batch_norm != nullptr;

  dnnl::post_ops po;
  append_activation(po, a.activation);
  std::optional<int> residual_post_op;  // its index in the post-op chain
  for (size_t i = 0; i <= chain.activations.size(); ++i) {
    if (chain.residual != nullptr && i == chain.residual_after) {
      residual_post_op = po.len();
      po.append_binary(algorithm::binary_add, arena_md(c.ref(chain.residual_input)));
    }
    if (i < chain.activations.size()) append_activation(po, *chain.activations[i]);
  }
  const Dims strides{a.stride[0], a.stride[1]};
  const Dims dilation{a.dilation[0] - 1, a.dilation[1] - 1};  // oneDNN: 0 means dense
  const Dims pad_l{a.pads[0], a.pads[1]}, pad_r{a.pads[2], a.pads[3]};
  auto make_pd = [&](const memory::desc& conv_src, const memory::desc& conv_dst) {
    using pd_t = dnnl::convolution_forward::primitive_desc;
    if (has_bias)
      return pd_t(c.engine, prop_kind::forward_inference, algorithm::convolution_direct, conv_src,
                  w_md, bias_md, conv_dst, strides, dilation, pad_l, pad_r, make_attr(po));
    return pd_t(c.engine, prop_kind::forward_inference, algorithm::convolution_direct, conv_src,
                w_md, conv_dst, strides, dilation, pad_l, pad_r, make_attr(po));
  };
  dnnl::convolution_forward::primitive_desc pd = make_pd(conv_src_md, conv_dst_md);
  if (is_reference(pd)) {
    // The arena's layouts have only oneDNN's reference kernel for this conv. Grouped convs of
    // 8 channels per group did on 2.6: from nhwc to a plain (`any`) dst, measured here on 104
    // channels at 28x28, ref:any 83 ms against 0.13 ms for the jit kernel on nhwc to nhwc; and
    // in nChw16c (224 channels: 3.5 s against 2.6 ms on nChw8c). On 3.2 (AVX2) the first gets
    // jit:avx2, the second is still ref:any. Run it in a layout that has a
    // real kernel instead, reordering src and dst through the lane scratchpad: oneDNN's own
    // choice first, then each layout the executor knows. make_unit_kernels warns when none has.
    for (tag t : {tag::any, tag::nhwc, tag::nChw8c, tag::nChw16c, tag::nchw}) {
      try {
        auto candidate = make_pd(memory::desc(src_md.get_dims(), dt::f32, t),
                                 memory::desc(dst_md.get_dims(), dt::f32, t));
        if (!is_reference(candidate)) {
          pd = std::move(candidate);
          break;
        }
      } catch (const dnnl::error&) {  // no implementation at all for this layout
      }
    }
  }
  prefer_jit_conv(pd, make_pd);

  auto k = std::make_unique<DnnlKernel>(c.engine);
  Args args{{DNNL_ARG_SRC, k->input(pd.src_desc(), src_ref)},
            {DNNL_ARG_DST, k->output(pd.dst_desc(), dst_ref)}};
  if (!folded_w.empty()) {
    const memory user(user_w_md, c.engine, folded_w.data());
    args[DNNL_ARG_WEIGHTS] = prepare_weights(c, user, pd.weights_desc(), false);
    args[DNNL_ARG_BIAS] = owned_copy(c, {oc}, folded_b);
  } else {
    args[DNNL_ARG_WEIGHTS] =
        w_fixed ? prepare_weights(c, k->bind(user_w_md, c.ref(w)), pd.weights_desc(), true)
                : k->bind(user_w_md, c.ref(w));
    if (has_b) args[DNNL_ARG_BIAS] = k->bind(bias_md, c.ref(b));
  }
  if (residual_post_op)
    args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(*residual_post_op) | DNNL_ARG_SRC_1] =
        k->bind(arena_md(c.ref(chain.residual_input)), c.ref(chain.residual_input));
  k->add(pd, dnnl::convolution_forward(pd), std::move(args));
  return k;
}

// Operator merge (ios.txt §4.2, as IOS's merged Conv builds it): the convs share their input,
// stride, dilation and output size (sched/merge.h). Each conv's weights (BatchNormalization
// folded in) are zero-padded, centered, to the largest kernel and concatenated along output
// channels, biases likewise; one convolution writes all of them into a temporary in the lane
// scratchpad (nhwc, so any channel window of it is a plain strided view), and one reorder per
// conv copies its window into that conv's output tensor, in whatever layout the arena has it.
std::unique_ptr<Kernel> build_merged_conv(const BuildContext& c, std::span<const Chain> chains,
                                          std::string* why) {
  auto fail = [&](auto&&... parts) -> std::unique_ptr<Kernel> {
    if (why != nullptr) *why = ::braid::detail::concat(parts...);
    return nullptr;
  };
  if (chains.size() < 2) return fail("a merge of ", chains.size(), " convs");
  // The post-ops of every chain: one sequence of eltwise steps, equal for all.
  auto post_ops_of = [](const Chain& chain) {
    dnnl::post_ops po;
    append_activation(po, std::get<ir::ConvAttrs>(chain.head->attrs).activation);
    append_activations(po, chain);
    return po;
  };
  auto eltwise = [](const dnnl::post_ops& po, int i) {
    algorithm alg;
    float alpha = 0, beta = 0;
    po.get_params_eltwise(i, alg, alpha, beta);
    return std::tuple{alg, alpha, beta};
  };
  const dnnl::post_ops po = post_ops_of(chains[0]);
  const ir::Node& first = *chains[0].head;
  const auto& a0 = std::get<ir::ConvAttrs>(first.attrs);
  const ValueId x = first.inputs[0];
  int64_t kh_max = 0, kw_max = 0, oc_total = 0;
  for (const Chain& chain : chains) {
    const ir::Node& node = *chain.head;
    if (node.kind != ir::OpKind::Conv) return fail("'", node.name, "' is not a Conv");
    const auto& a = std::get<ir::ConvAttrs>(node.attrs);
    if (a.groups != 1) return fail("'", node.name, "' is a grouped conv");
    if (chain.residual != nullptr) return fail("'", node.name, "' has a fused residual Add");
    if (node.inputs[0] != x) return fail("'", node.name, "' reads another input");
    if (!c.is_fixed(node.inputs[1]) || (node.inputs.size() > 2 && !c.is_fixed(node.inputs[2])))
      return fail("'", node.name, "' has weights computed at run time");
    if (a.stride != a0.stride || a.dilation != a0.dilation)
      return fail("'", node.name, "' has another stride or dilation");
    if (c.shape(chain.output)[2] != c.shape(chains[0].output)[2] ||
        c.shape(chain.output)[3] != c.shape(chains[0].output)[3])
      return fail("'", node.name, "' has another output size");
    const dnnl::post_ops p = post_ops_of(chain);
    if (p.len() != po.len()) return fail("'", node.name, "' has other activations");
    for (int i = 0; i < p.len(); ++i)
      if (p.kind(i) != dnnl::primitive::kind::eltwise || eltwise(p, i) != eltwise(po, i))
        return fail("'", node.name, "' has other activations");
    const ir::Shape& ws = c.shape(node.inputs[1]);
    kh_max = std::max(kh_max, ws[2]);
    kw_max = std::max(kw_max, ws[3]);
    oc_total += ws[0];
  }
  // The merged pads: each conv's pads widened by half its kernel's growth (times the dilation).
  Dims pad_l, pad_r;
  for (const Chain& chain : chains) {
    const auto& a = std::get<ir::ConvAttrs>(chain.head->attrs);
    const ir::Shape& ws = c.shape(chain.head->inputs[1]);
    const int64_t dh = (kh_max - ws[2]) / 2 * a.dilation[0],
                  dw = (kw_max - ws[3]) / 2 * a.dilation[1];
    if ((kh_max - ws[2]) % 2 != 0 || (kw_max - ws[3]) % 2 != 0)
      return fail("'", chain.head->name, "' cannot be centered in a ", kh_max, "x", kw_max,
                  " kernel");
    const Dims l{a.pads[0] + dh, a.pads[1] + dw}, r{a.pads[2] + dh, a.pads[3] + dw};
    if (pad_l.empty()) {
      pad_l = l;
      pad_r = r;
    } else if (l != pad_l || r != pad_r) {
      return fail("'", chain.head->name, "' is not centered in the merged kernel");
    }
  }
  // Each conv's weights with its BatchNormalization folded in, then centred and concatenated
  // (exec/merged_conv.h, shared with the CUDA executor).
  std::vector<std::vector<float>> folded_w, folded_b;
  std::vector<MergePart> parts;
  folded_w.reserve(chains.size());  // parts view them
  folded_b.reserve(chains.size());
  for (const Chain& chain : chains) {
    const ir::Shape& ws = c.shape(chain.head->inputs[1]);
    auto [w, b] = folded_conv(c, chain);
    parts.push_back({folded_w.emplace_back(std::move(w)),
                     folded_b.emplace_back(std::move(b)),
                     {ws[0], ws[1], ws[2], ws[3]}});
  }
  MergedConvParams params = merge_conv_params(parts);
  std::vector<float>& weights = params.weights;
  const std::vector<float>& bias = params.bias;
  const int64_t ic = params.shape[1];
  const TensorRef src_ref = c.ref(x);
  const ir::Shape& out0 = c.shape(chains[0].output);
  const Dims dst_dims{out0[0], oc_total, out0[2], out0[3]};
  const memory::desc dst_md(dst_dims, dt::f32, tag::nhwc);
  const Dims w_dims{oc_total, ic, kh_max, kw_max};
  const memory::desc w_md(w_dims, dt::f32, tag::any), bias_md = plain_md({oc_total});
  const Dims strides{a0.stride[0], a0.stride[1]};
  const Dims dilation{a0.dilation[0] - 1, a0.dilation[1] - 1};
  auto make_pd = [&](const memory::desc& src, const memory::desc& dst) {
    return dnnl::convolution_forward::primitive_desc(
        c.engine, prop_kind::forward_inference, algorithm::convolution_direct, src, w_md, bias_md,
        dst, strides, dilation, pad_l, pad_r, make_attr(po));
  };
  // A blocked input is read as it is; a plain one through oneDNN's choice of layout.
  const memory::desc src_md = arena_md(src_ref);
  dnnl::convolution_forward::primitive_desc pd = make_pd(
      src_ref.layout == TensorLayout::kPlain ? memory::desc(src_md.get_dims(), dt::f32, tag::any)
                                             : src_md,
      dst_md);
  if (is_reference(pd))
    for (tag t : {tag::nhwc, tag::nChw8c, tag::nChw16c}) {
      try {
        auto candidate = make_pd(memory::desc(src_md.get_dims(), dt::f32, t), dst_md);
        if (!is_reference(candidate)) {
          pd = std::move(candidate);
          break;
        }
      } catch (const dnnl::error&) {
      }
    }
  prefer_jit_conv(pd, make_pd);

  auto k = std::make_unique<DnnlKernel>(c.engine);
  Args args{{DNNL_ARG_SRC, k->input(pd.src_desc(), src_ref)}};
  const memory merged = k->temporary(pd.dst_desc());
  args[DNNL_ARG_DST] = merged;
  const memory user_w(plain_md(w_dims), c.engine, weights.data());
  args[DNNL_ARG_WEIGHTS] = prepare_weights(c, user_w, pd.weights_desc(), false);
  args[DNNL_ARG_BIAS] = owned_copy(c, {oc_total}, bias);
  k->add(pd, dnnl::convolution_forward(pd), std::move(args));
  int64_t oc_at = 0;
  std::vector<memory> windows;
  for (const Chain& chain : chains) {
    const ir::Shape& out = c.shape(chain.output);
    windows.push_back(k->view_of_last_temporary(
        pd.dst_desc().submemory_desc({out[0], out[1], out[2], out[3]}, {0, oc_at, 0, 0})));
    oc_at += out[1];
  }
  for (size_t i = 0; i < chains.size(); ++i) {
    const TensorRef out_ref = c.ref(chains[i].output);
    k->add_reorder(windows[i], k->bind(arena_md(out_ref), out_ref));
  }
  return k;
}

namespace {

// ConvTranspose as plain loops (an output past the natural size): each output element gathers
// the inputs that land on it, as the reference does. Output channels are split between the
// lane's OpenMP threads.
class DirectConvTransposeKernel final : public Kernel {
 public:
  DirectConvTransposeKernel(TensorRef x, TensorRef w, std::optional<TensorRef> b, TensorRef y,
                            ir::ConvTransposeAttrs a)
      : x_(std::move(x)), w_(std::move(w)), b_(std::move(b)), y_(std::move(y)), a_(a) {}

  void execute(const KernelContext& context) const override {
    const float* x = x_.data(context);
    const float* w = w_.data(context);
    const float* b = b_ ? b_->data(context) : nullptr;
    float* y = y_.data(context);
    const ir::Shape &xs = x_.type.shape, &ws = w_.type.shape, &ys = y_.type.shape;
    const int64_t batch = xs[0], ic_total = xs[1], h = xs[2], wd = xs[3];
    const int64_t oc_group = ws[1], kh_size = ws[2], kw_size = ws[3];
    const int64_t ic_group = ic_total / a_.groups, oc_total = ys[1], oh_size = ys[2],
                  ow_size = ys[3];
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t n = 0; n < batch; ++n)
      for (int64_t oc = 0; oc < oc_total; ++oc) {
        const int64_t g = oc / oc_group, ocl = oc % oc_group;
        float* out = y + (n * oc_total + oc) * oh_size * ow_size;
        for (int64_t oh = 0; oh < oh_size; ++oh)
          for (int64_t ow = 0; ow < ow_size; ++ow) {
            float acc = b != nullptr ? b[oc] : 0.0f;
            for (int64_t kh = 0; kh < kh_size; ++kh) {
              const int64_t th = oh + a_.pads[0] - kh * a_.dilation[0];
              if (th < 0 || th % a_.stride[0] != 0 || th / a_.stride[0] >= h) continue;
              for (int64_t kw = 0; kw < kw_size; ++kw) {
                const int64_t tw = ow + a_.pads[1] - kw * a_.dilation[1];
                if (tw < 0 || tw % a_.stride[1] != 0 || tw / a_.stride[1] >= wd) continue;
                const int64_t at = (th / a_.stride[0]) * wd + tw / a_.stride[1];
                for (int64_t icl = 0; icl < ic_group; ++icl) {
                  const int64_t ic = g * ic_group + icl;
                  acc += x[(n * ic_total + ic) * h * wd + at] *
                         w[((ic * oc_group + ocl) * kh_size + kh) * kw_size + kw];
                }
              }
            }
            out[oh * ow_size + ow] = acc;
          }
      }
  }

 private:
  TensorRef x_, w_;
  std::optional<TensorRef> b_;
  TensorRef y_;
  ir::ConvTransposeAttrs a_;
};

}  // namespace

bool deconvolution_fits(const BuildContext& c, const ir::Node& node) {
  const auto& a = std::get<ir::ConvTransposeAttrs>(node.attrs);
  return c.is_fixed(node.inputs[1]) && a.pads[2] >= a.output_padding[0] &&
         a.pads[3] >= a.output_padding[1];
}

// oneDNN's deconvolution: its weights are (g)oihw by dims, ONNX's [IC, OC/g, KH, KW] is
// (g)iohw in memory, so the user memory says that tag and the primitive picks its own layout.
std::unique_ptr<Kernel> build_conv_transpose(const BuildContext& c, const Chain& chain) {
  const ir::Node& node = *chain.head;
  const auto& a = std::get<ir::ConvTransposeAttrs>(node.attrs);
  const ValueId x = node.inputs[0], w = node.inputs[1];
  const bool has_b = node.inputs.size() > 2;
  if (!deconvolution_fits(c, node)) {
    BRAID_ASSERT(chain.activations.empty(), "plain-loop ConvTranspose fuses no activation");
    std::optional<TensorRef> b;
    if (has_b) b = c.ref(node.inputs[2]);
    return std::make_unique<DirectConvTransposeKernel>(c.ref(x), c.ref(w), b, c.ref(chain.output),
                                                       a);
  }
  const ir::Shape& ws = c.shape(w);
  const int64_t groups = a.groups, ic = ws[0], oc = ws[1] * groups;
  const Dims w_dims = groups > 1 ? Dims{groups, oc / groups, ic / groups, ws[2], ws[3]}
                                 : Dims{oc, ic, ws[2], ws[3]};
  const memory::desc user_w_md(w_dims, dt::f32, groups > 1 ? tag::giohw : tag::iohw);
  const memory::desc w_md(w_dims, dt::f32, tag::any);
  const TensorRef src_ref = c.ref(x), dst_ref = c.ref(chain.output);
  const memory::desc src_md(arena_md(src_ref).get_dims(), dt::f32, tag::any);
  const memory::desc dst_md(arena_md(dst_ref).get_dims(), dt::f32, tag::any);
  // The Add of a per-channel bias and the BatchNormalization plan_chain took, folded:
  // s = scale / sqrt(var + eps), w' = w * s[oc], b' = (b + add - mean) * s + shift. ONNX's
  // weights are [IC, OC/g, KH, KW]: input channel i of group g feeds output g * OC/g + ocl.
  std::vector<float> folded_w, folded_b;
  if (chain.batch_norm != nullptr || chain.bias_add != nullptr) {
    const auto weights = fixed_data(c, w);
    std::vector<double> s(static_cast<size_t>(oc), 1.0), b(static_cast<size_t>(oc), 0.0);
    for (size_t o = 0; o < s.size(); ++o) {
      if (has_b) b[o] = fixed_data(c, node.inputs[2])[o];
      if (chain.bias_add != nullptr) {
        const ir::Node& add = *chain.bias_add;
        b[o] += fixed_data(c, *ir::other_input(add, node.outputs[0]))[o];
      }
    }
    if (chain.batch_norm != nullptr) s = fold_batch_norm(c, *chain.batch_norm, b);
    const int64_t ic_group = ic / groups, oc_group = oc / groups, taps = ws[2] * ws[3];
    folded_w.resize(weights.size());
    for (int64_t i = 0; i < ic; ++i)
      for (int64_t ocl = 0; ocl < oc_group; ++ocl) {
        const double f = s[static_cast<size_t>((i / ic_group) * oc_group + ocl)];
        for (int64_t t = 0; t < taps; ++t) {
          const auto at = static_cast<size_t>((i * oc_group + ocl) * taps + t);
          folded_w[at] = static_cast<float>(weights[at] * f);
        }
      }
    folded_b.assign(b.begin(), b.end());
  }
  const Dims strides{a.stride[0], a.stride[1]};
  const Dims dilation{a.dilation[0] - 1, a.dilation[1] - 1};
  const Dims pad_l{a.pads[0], a.pads[1]};
  const Dims pad_r{a.pads[2] - a.output_padding[0], a.pads[3] - a.output_padding[1]};
  const dnnl::deconvolution_forward::primitive_desc pd(
      c.engine, prop_kind::forward_inference, algorithm::deconvolution_direct, src_md, w_md, dst_md,
      strides, dilation, pad_l, pad_r, make_attr());
  auto k = std::make_unique<DnnlKernel>(c.engine);
  Args args{{DNNL_ARG_SRC, k->input(pd.src_desc(), src_ref)}};
  if (!folded_w.empty()) {
    const memory user(user_w_md, c.engine, folded_w.data());
    args[DNNL_ARG_WEIGHTS] = prepare_weights(c, user, pd.weights_desc(), false);
  } else {
    args[DNNL_ARG_WEIGHTS] =
        prepare_weights(c, k->bind(user_w_md, c.ref(w)), pd.weights_desc(), true);
  }
  args[DNNL_ARG_DST] = k->output(pd.dst_desc(), dst_ref);
  k->add(pd, dnnl::deconvolution_forward(pd), std::move(args));
  if (!has_b && folded_b.empty() && chain.activations.empty()) return k;
  // Bias and activations as a binary add with eltwise post-ops, in place on the (plain) output:
  // oneDNN 2.6's deconvolution applies its own bias and post-ops in a slow loop, and its binary
  // broadcasts a channel vector over a blocked tensor only with ref:any (PaddleOCR's detector,
  // 24 -> 24 channels, 80x80 -> 160x160: 0.65 ms bare, 5 ms with its bias, 45 ms with a ReLU,
  // 66 ms as a binary on nChw8c). oneDNN 3.2 (AVX2, 1 thread) applies them inside its strided
  // brgconv deconvolution at no cost (that shape: 0.57 ms bare and with bias + ReLU), but still
  // in the slow loop for its stride-1 and depthwise ones (64 -> 64 3x3 at 28x28: 0.64 -> 5.4 ms;
  // FCN's depthwise 4x4/2 upsampling of 21x32x32: 0.03 -> 8.7 ms), and its channel-vector binary
  // on nChw8c is still ref:any (155 ms on that shape); so this stays.
  BRAID_ASSERT(dst_ref.layout == TensorLayout::kPlain, "a ConvTranspose output is never blocked");
  const Dims bias_dims{1, oc, 1, 1};
  memory bias;
  if (!folded_b.empty()) {
    bias = owned_copy(c, bias_dims, folded_b);
  } else if (has_b) {
    bias = k->bind(plain_md(bias_dims), c.ref(node.inputs[2]));
  } else {
    bias = owned_copy(c, bias_dims, std::vector<float>(static_cast<size_t>(oc), 0.0f));
  }
  dnnl::post_ops po;
  append_activations(po, chain);
  const memory::desc y_md = plain_md(to_dims(c.shape(chain.output)));
  const memory y = k->bind(y_md, dst_ref);
  const dnnl::binary::primitive_desc add_pd(c.engine, algorithm::binary_add, y_md,
                                            plain_md(bias_dims), y_md, make_attr(po));
  k->add(add_pd, dnnl::binary(add_pd),
         {{DNNL_ARG_SRC_0, y}, {DNNL_ARG_SRC_1, bias}, {DNNL_ARG_DST, y}});
  return k;
}

std::unique_ptr<Kernel> build_pool(const BuildContext& c, const Chain& chain) {
  const ir::Node& node = *chain.head;
  const auto& a = std::get<ir::PoolAttrs>(node.attrs);
  const ir::Shape& xs = c.shape(node.inputs[0]);
  const ir::Shape& ys = c.shape(chain.output);
  const bool is_max = node.kind == ir::OpKind::MaxPool;
  // Max pooling on nhwc too: braid ran its own loop there while oneDNN 2.6's jit:avx2 nhwc max
  // pool took 2.8-3.9 ms on each of Inception V3's two big 3x3/2 pools; 3.2's is 1.5-1.9x faster
  // than that loop was (1 thread, AVX2: 64x147x147 213 against 375 us, 192x71x71 147 against
  // 240 us), with the same outputs.
  const algorithm alg = is_max                ? algorithm::pooling_max
                        : a.count_include_pad ? algorithm::pooling_avg_include_padding
                                              : algorithm::pooling_avg_exclude_padding;
  // ceil_mode: enlarge the right padding until oneDNN's floor formula gives the IR's size.
  Dims pad_r(2);
  bool clipped_windows = false;
  for (int i = 0; i < 2; ++i) {
    const int64_t needed = (ys[2 + i] - 1) * a.stride[i] + a.kernel[i] - xs[2 + i] - a.pads[i];
    pad_r[i] = std::max(a.pads[2 + i], needed);
    clipped_windows = clipped_windows || pad_r[i] > a.pads[2 + i];
  }
  // The pool runs in its input's layout; a different output layout costs a reorder after it.
  const TensorRef src_ref = c.ref(node.inputs[0]), dst_ref = c.ref(chain.output);
  const memory::desc src_md = arena_md(src_ref);
  const memory::desc dst_md = layout_md(to_dims(ys), src_ref.layout);
  const dnnl::pooling_forward::primitive_desc pd(
      c.engine, prop_kind::forward_inference, alg, src_md, dst_md, Dims{a.stride[0], a.stride[1]},
      Dims{a.kernel[0], a.kernel[1]}, Dims{0, 0}, Dims{a.pads[0], a.pads[1]}, pad_r, make_attr());
  auto k = std::make_unique<DnnlKernel>(c.engine);
  k->add(pd, dnnl::pooling_forward(pd),
         {{DNNL_ARG_SRC, k->bind(src_md, src_ref)}, {DNNL_ARG_DST, k->output(dst_md, dst_ref)}});

  if (!is_max && a.count_include_pad && clipped_windows) {
    // oneDNN divides by the whole kernel; ONNX Runtime and PyTorch by the part of the window
    // inside the padded input, which is smaller only for the windows ceil_mode added. Rescale
    // those outputs: factor = kernel extent / clipped extent, per axis.
    std::array<std::vector<float>, 2> factor;
    for (int i = 0; i < 2; ++i) {
      factor[i].assign(static_cast<size_t>(ys[2 + i]), 1.0f);
      for (int64_t o = 0; o < ys[2 + i]; ++o) {
        const int64_t begin = o * a.stride[i] - a.pads[i];
        const int64_t end = std::min(begin + a.kernel[i], xs[2 + i] + a.pads[2 + i]);
        factor[i][o] = static_cast<float>(a.kernel[i]) / static_cast<float>(end - begin);
      }
    }
    // The loop indexes nchw; layout.h keeps the outputs of such pools plain.
    BRAID_ASSERT(dst_ref.layout == TensorLayout::kPlain, "node '", node.name,
                 "': a ceil_mode average pool must write a plain output");
    const TensorRef dst = dst_ref;
    const int64_t planes = ys[0] * ys[1], oh = ys[2], ow = ys[3];
    k->set_epilogue([dst, factor, planes, oh, ow](const KernelContext& context) {
      float* y = dst.data(context);
      for (int64_t p = 0; p < planes; ++p)
        for (int64_t h = 0; h < oh; ++h)
          for (int64_t w = 0; w < ow; ++w) {
            const float f = factor[0][h] * factor[1][w];
            if (f != 1.0f) y[(p * oh + h) * ow + w] *= f;
          }
    });
  }
  return k;
}

std::unique_ptr<Kernel> build_global_average_pool(const BuildContext& c, const Chain& chain) {
  const ir::Node& node = *chain.head;
  const ir::Shape& xs = c.shape(node.inputs[0]);
  const TensorRef src_ref = c.ref(node.inputs[0]), dst_ref = c.ref(chain.output);
  const memory::desc src_md = arena_md(src_ref);
  const memory::desc dst_md = layout_md(to_dims(c.shape(chain.output)), src_ref.layout);
  // One window covering the whole plane.
  const dnnl::pooling_forward::primitive_desc pd(
      c.engine, prop_kind::forward_inference, algorithm::pooling_avg_exclude_padding, src_md,
      dst_md, Dims{1, 1}, Dims{xs[2], xs[3]}, Dims{0, 0}, Dims{0, 0}, Dims{0, 0}, make_attr());
  auto k = std::make_unique<DnnlKernel>(c.engine);
  k->add(pd, dnnl::pooling_forward(pd),
         {{DNNL_ARG_SRC, k->bind(src_md, src_ref)}, {DNNL_ARG_DST, k->output(dst_md, dst_ref)}});
  return k;
}

namespace {

// A matmul primitive, letting it pick the weights layout when the weights are fixed; falls back
// to the plain layout if no implementation accepts `any` for this problem.
dnnl::matmul::primitive_desc make_matmul_pd(const BuildContext& c, const memory::desc& src_md,
                                            const memory::desc& user_w_md, bool w_fixed,
                                            const std::optional<memory::desc>& bias_md,
                                            const memory::desc& dst_md,
                                            const dnnl::primitive_attr& attr) {
  auto make = [&](const memory::desc& w_md) {
    if (bias_md)
      return dnnl::matmul::primitive_desc(c.engine, src_md, w_md, *bias_md, dst_md, attr);
    return dnnl::matmul::primitive_desc(c.engine, src_md, w_md, dst_md, attr);
  };
  if (w_fixed) {
    try {
      return make(memory::desc(user_w_md.get_dims(), dt::f32, tag::any));
    } catch (const dnnl::error&) {
    }
  }
  return make(user_w_md);
}

memory matmul_weights(const BuildContext& c, DnnlKernel& k, const memory::desc& user_w_md,
                      ValueId w, const dnnl::matmul::primitive_desc& pd) {
  if (!c.is_fixed(w)) return k.bind(user_w_md, c.ref(w));
  return prepare_weights(c, k.bind(user_w_md, c.ref(w)), pd.weights_desc(), true);
}

}  // namespace

std::unique_ptr<Kernel> build_matmul(const BuildContext& c, const Chain& chain) {
  const ir::Node& node = *chain.head;
  const ValueId a = node.inputs[0], b = node.inputs[1];
  Dims y_dims = to_dims(c.shape(chain.output));
  size_t rank = y_dims.size();
  // Batch dims broadcast numpy-style; oneDNN wants equal ranks with 1s where broadcast.
  Dims a_dims = pad_front(to_dims(c.shape(a)), rank), b_dims = pad_front(to_dims(c.shape(b)), rank);
  std::optional<ValueId> bias;
  Dims bias_dims;
  if (chain.bias_add != nullptr) {
    const ir::Node& add = *chain.bias_add;
    bias = ir::other_input(add, node.outputs[0]);
    bias_dims = pad_front(to_dims(c.shape(*bias)), rank);
  }
  // Weights shared by every batch row (a linear layer: [B..., M, K] x [K, N]) are a 2-D
  // problem [B*M, K] x [K, N]: oneDNN 2.6's brgemm matmul (AVX-512) then packs the weights,
  // which it does not for a 3-D problem (measured: BERT 12x128 at 1 thread, 237 -> 128 ms). On
  // AVX2, 3.2 runs both forms on gemm:jit:f32; the 2-D one is kept for brgemm.
  const bool shared_weights =
      rank > 2 && std::all_of(b_dims.begin(), b_dims.end() - 2, [](int64_t d) { return d == 1; });
  const bool bias_row = !bias || std::all_of(bias_dims.begin(), bias_dims.end() - 1,
                                             [](int64_t d) { return d == 1; });
  if (shared_weights && bias_row) {
    int64_t rows = 1;
    for (size_t i = 0; i + 1 < rank; ++i) rows *= y_dims[i];
    a_dims = {rows, a_dims[rank - 1]};
    b_dims = {b_dims[rank - 2], b_dims[rank - 1]};
    y_dims = {rows, y_dims[rank - 1]};
    if (bias) bias_dims = {1, bias_dims[rank - 1]};
    rank = 2;
  }
  const memory::desc a_md = plain_md(a_dims), b_md = plain_md(b_dims), y_md = plain_md(y_dims);
  std::optional<memory::desc> bias_md;
  if (bias) bias_md = plain_md(bias_dims);
  dnnl::post_ops po;
  append_activations(po, chain);
  const auto pd = make_matmul_pd(c, a_md, b_md, c.is_fixed(b), bias_md, y_md, make_attr(po));
  auto k = std::make_unique<DnnlKernel>(c.engine);
  Args args{{DNNL_ARG_SRC, k->bind(a_md, c.ref(a))},
            {DNNL_ARG_WEIGHTS, matmul_weights(c, *k, b_md, b, pd)},
            {DNNL_ARG_DST, k->bind(y_md, c.ref(chain.output))}};
  if (bias) args[DNNL_ARG_BIAS] = k->bind(*bias_md, c.ref(*bias));
  k->add(pd, dnnl::matmul(pd), std::move(args));
  return k;
}

// Gemm: Y = alpha * A' * B' + beta * C. The PyTorch Linear form (transB=1, alpha=beta=1, C of
// shape [N]) is an inner product; everything else is a matmul whose transposes are strides, with
// beta * C as a bias when alpha = 1, or as eltwise_linear/binary_add post-ops otherwise.
std::unique_ptr<Kernel> build_gemm(const BuildContext& c, const Chain& chain) {
  const ir::Node& node = *chain.head;
  const auto& g = std::get<ir::GemmAttrs>(node.attrs);
  const ValueId a = node.inputs[0], b = node.inputs[1];
  const ir::Shape& ys = c.shape(chain.output);
  const int64_t m = ys[0], n = ys[1];
  const int64_t kk = g.trans_a ? c.shape(a)[0] : c.shape(a)[1];
  // C comes from the node, or from an Add fused after a Gemm without C (then beta = 1).
  std::optional<ValueId> cv;
  float beta = g.beta;
  if (node.inputs.size() > 2) {
    cv = node.inputs[2];
  } else if (chain.bias_add != nullptr) {
    const ir::Node& add = *chain.bias_add;
    cv = ir::other_input(add, node.outputs[0]);
    beta = 1.0f;
  }
  if (beta == 0.0f) cv.reset();
  const Dims c_dims = cv ? pad_front(to_dims(c.shape(*cv)), 2) : Dims{};
  const memory::desc y_md = plain_md({m, n});
  auto k = std::make_unique<DnnlKernel>(c.engine);

  const bool linear_form = !g.trans_a && g.trans_b && g.alpha == 1.0f && c.is_fixed(b) &&
                           (!cv || (beta == 1.0f && c_dims[0] == 1 && c_dims[1] == n));
  if (linear_form) {
    const memory::desc src_md = plain_md({m, kk});
    const memory::desc user_w_md = plain_md({n, kk});  // B as stored: [N, K]
    const memory::desc w_md(Dims{n, kk}, dt::f32, tag::any);
    const memory::desc bias_md = plain_md({n});
    dnnl::post_ops po;
    append_activations(po, chain);
    using pd_t = dnnl::inner_product_forward::primitive_desc;
    const pd_t pd =
        cv ? pd_t(c.engine, prop_kind::forward_inference, src_md, w_md, bias_md, y_md,
                  make_attr(po))
           : pd_t(c.engine, prop_kind::forward_inference, src_md, w_md, y_md, make_attr(po));
    Args args{{DNNL_ARG_SRC, k->bind(src_md, c.ref(a))},
              {DNNL_ARG_WEIGHTS,
               prepare_weights(c, k->bind(user_w_md, c.ref(b)), pd.weights_desc(), true)},
              {DNNL_ARG_DST, k->bind(y_md, c.ref(chain.output))}};
    if (cv) args[DNNL_ARG_BIAS] = k->bind(bias_md, c.ref(*cv));
    k->add(pd, dnnl::inner_product_forward(pd), std::move(args));
    return k;
  }

  // Transposed operands are plain tensors read through swapped strides.
  const memory::desc a_md =
      g.trans_a ? memory::desc({m, kk}, dt::f32, Dims{1, m}) : plain_md({m, kk});
  const memory::desc b_md =
      g.trans_b ? memory::desc({kk, n}, dt::f32, Dims{1, kk}) : plain_md({kk, n});
  const memory::desc c_md = cv ? plain_md(c_dims) : memory::desc();
  dnnl::post_ops po;
  std::optional<memory::desc> bias_md;
  memory c_mem;  // bias or binary post-op operand
  int c_post_op = -1;
  float src_scale = 1.0f;
  if (cv) {
    const bool c_fixed = c.is_fixed(*cv);
    if (c_fixed && beta != 1.0f) {
      std::vector<float> scaled(fixed_data(c, *cv).begin(), fixed_data(c, *cv).end());
      for (float& v : scaled) v *= beta;
      c_mem = owned_copy(c, c_dims, scaled);
    } else {
      c_mem = k->bind(c_md, c.ref(*cv));
    }
    if (g.alpha == 1.0f && (c_fixed || beta == 1.0f)) {
      bias_md = c_md;
    } else if (c_fixed || beta == 1.0f) {
      // c_mem already holds beta * C.
      po.append_eltwise(algorithm::eltwise_linear, g.alpha, 0.0f);
      c_post_op = po.len();
      po.append_binary(algorithm::binary_add, c_md);
    } else {
      // beta * (alpha / beta * A'B' + C), since a binary post-op cannot scale its operand.
      // alpha / beta is a scale of A (a runtime scale; 2.x had output scales), not a first
      // eltwise_linear: oneDNN 2.6's brgemm matmul applied two eltwise_linear post-ops both with
      // the first one's alpha (verified here: linear(4), linear(0.25) on all-ones 5x5x8 gave 80,
      // not 5); 3.2 gets that right on AVX2, AVX-512 is unchecked (joins_post_ops).
      src_scale = g.alpha / beta;
      c_post_op = po.len();
      po.append_binary(algorithm::binary_add, c_md);
      po.append_eltwise(algorithm::eltwise_linear, beta, 0.0f);
    }
  } else if (g.alpha != 1.0f) {
    po.append_eltwise(algorithm::eltwise_linear, g.alpha, 0.0f);
  }
  append_activations(po, chain);
  dnnl::primitive_attr attr = make_attr(po);
  if (src_scale != 1.0f) attr.set_scales_mask(DNNL_ARG_SRC, 0);  // one scale, given below
  const auto pd = make_matmul_pd(c, a_md, b_md, c.is_fixed(b), bias_md, y_md, attr);
  Args args{{DNNL_ARG_SRC, k->bind(a_md, c.ref(a))},
            {DNNL_ARG_WEIGHTS, matmul_weights(c, *k, b_md, b, pd)},
            {DNNL_ARG_DST, k->bind(y_md, c.ref(chain.output))}};
  if (bias_md) args[DNNL_ARG_BIAS] = c_mem;
  if (c_post_op >= 0) args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(c_post_op) | DNNL_ARG_SRC_1] = c_mem;
  if (src_scale != 1.0f)
    args[DNNL_ARG_ATTR_SCALES | DNNL_ARG_SRC] = owned_copy(c, {1}, {&src_scale, 1});
  k->add(pd, dnnl::matmul(pd), std::move(args));
  return k;
}

}  // namespace braid::exec::cpu::detail
