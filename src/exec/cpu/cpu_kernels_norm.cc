// Reduction and normalization kernels on oneDNN: ReduceMean, LRN, BatchNormalization (when not
// folded into a convolution), Softmax and LayerNormalization.
#include <algorithm>
#include <numeric>
#include <optional>

#include "base/error.h"
#include "exec/cpu/cpu_kernels_impl.h"
#include "exec/cpu/layout.h"

namespace braid::exec::cpu::detail {

using dnnl::algorithm;
using dnnl::prop_kind;
using dt = memory::data_type;

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

}  // namespace braid::exec::cpu::detail
