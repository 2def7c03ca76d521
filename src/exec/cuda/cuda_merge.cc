// Operator merge on the GPU (ios.txt §4.2): Compiler::compile_merge (cuda_compiler.h). The CPU
// executor's counterpart is cpu::make_merged_conv_kernel; both build their weights with
// exec/merged_conv.h. Which units merge is sched/merge.h's (merge_difference, misaligned_merge),
// plus what cuDNN needs (symmetric pads). Compiled without a GPU, never run on one yet.
//
// The merged convolution runs in NHWC when every merged conv was chosen NHWC (16-bit plans,
// conv_layout.h), else NCHW. It reads its input as the arena stores it (transformed into scratch
// where an NHWC convolution finds it NCHW), writes [N, sum K, H, W] into the lane's scratch after
// the cuDNN workspace, and copies each unit's channel window out: one cudaMemcpy2DAsync where the
// unit's output is stored in the merged layout (NCHW: one contiguous run per image; NHWC: one
// run of K_i channels per pixel), else one cudnnTransformTensor from the strided window.
#include <algorithm>
#include <array>

#include "base/error.h"
#include "exec/cuda/cuda_compiler.h"
#include "exec/merged_conv.h"
#include "sched/merge.h"

namespace braid::exec::cuda {
std::string Compiler::merge_refusal(std::span<const std::vector<NodeId>> unit_ops,
                                    std::vector<MergeUnit>* out) const {
  if (unit_ops.size() < 2) return ::braid::detail::concat("a merge of ", unit_ops.size(), " units");
  auto is_param = [&](ValueId v) {
    return g_.value(v).kind == ir::ValueKind::kParameter && weights_.has(v);
  };
  // Each unit: one Conv chain (what compile_unit fuses into one convolution), 2-D, its
  // parameters known now, symmetric pads (cuDNN's), groups 1.
  std::vector<MergeUnit> parts;
  for (const std::vector<NodeId>& ops : unit_ops) {
    if (ops.empty() || g_.node(ops[0]).kind != ir::OpKind::Conv)
      return "a unit that does not start with a Conv";
    const ir::Node& conv = g_.node(ops[0]);
    const auto& a = std::get<ir::ConvAttrs>(conv.attrs);
    const ConvChain chain = match_conv(ops);
    if (chain.used != ops.size())
      return ::braid::detail::concat("the unit of '", conv.name, "' is more than one Conv chain");
    if (chain.residual) return ::braid::detail::concat("'", conv.name, "' adds a residual");
    if (shape(conv.inputs[0]).size() != 4)
      return ::braid::detail::concat("'", conv.name, "' is not 2-D");
    if (a.groups != 1) return ::braid::detail::concat("'", conv.name, "' is a grouped conv");
    if (a.pads[0] != a.pads[2] || a.pads[1] != a.pads[3])
      return ::braid::detail::concat("'", conv.name, "' has asymmetric pads");
    for (size_t i = 1; i < conv.inputs.size(); ++i)
      if (!is_param(conv.inputs[i]))
        return ::braid::detail::concat("'", conv.name, "' has weights computed at run time");
    const bool bn = chain.used > 1 && g_.node(ops[1]).kind == ir::OpKind::BatchNormalization;
    if (bn)
      for (size_t i = 1; i < 5; ++i)
        if (!is_param(g_.node(ops[1]).inputs[i]))
          return ::braid::detail::concat("'", conv.name,
                                         "' has a BatchNormalization computed at run time");
    MergeUnit p{.ops = ops, .chain = chain, .conv = {&conv, &a, ir::activation_op(a.activation)}};
    p.activation = unary_of(a.activation);
    if (chain.activation != nullptr) {
      p.conv.activation = chain.activation->kind;
      p.activation = unary_of(chain.activation->kind, chain.activation->attrs);
    }
    parts.push_back(p);
  }
  // One input, stride, dilation, output size and activation (sched/merge.h), with the same
  // parameters (a Clip's bounds, a LeakyRelu's slope); kernels that centre.
  std::vector<const ir::ConvAttrs*> attrs;
  for (const MergeUnit& p : parts) {
    if (std::string d = sched::merge_difference(g_, parts[0].conv, p.conv); !d.empty())
      return ::braid::detail::concat("'", p.conv.conv->name, "' and '", parts[0].conv.conv->name,
                                     "': ", d);
    const auto &u = p.activation, &f = parts[0].activation;
    if (u.has_value() != f.has_value() ||
        (u && (u->kind != f->kind || u->alpha != f->alpha || u->beta != f->beta)))
      return ::braid::detail::concat("'", p.conv.conv->name, "' has another activation");
    attrs.push_back(p.conv.attrs);
  }
  if (const std::optional<size_t> k = sched::misaligned_merge(attrs))
    return ::braid::detail::concat("'", parts[*k].conv.conv->name,
                                   "' is not centered in the merged kernel");
  // misaligned_merge centres undilated kernels: a dilated one grows by (K - k) / 2 * dilation
  // each side, which it does not check.
  for (const ir::ConvAttrs* c : attrs)
    if (c->dilation != std::array<int64_t, 2>{1, 1} && c->kernel != attrs[0]->kernel)
      return "dilated convs of different kernel sizes";
  if (out != nullptr) *out = std::move(parts);
  return {};
}

std::vector<Op> Compiler::compile_merge(std::span<const std::vector<NodeId>> unit_ops,
                                        std::string* why) {
  std::vector<MergeUnit> parts;
  if (std::string refusal = merge_refusal(unit_ops, &parts); !refusal.empty()) {
    if (why != nullptr) *why = std::move(refusal);
    return {};
  }

  // The weights, BatchNormalization folded, centred and concatenated.
  std::vector<std::pair<std::vector<float>, std::vector<float>>> folded;
  folded.reserve(parts.size());
  std::vector<MergePart> merge_parts;
  for (const MergeUnit& p : parts) {
    const auto& [w, b] = folded.emplace_back(folded_conv(p.ops, p.chain.used));
    const ir::Shape& ws = shape(p.conv.conv->inputs[1]);
    merge_parts.push_back({w, b, {ws[0], ws[1], ws[2], ws[3]}});
  }
  MergedConvParams merged = merge_conv_params(merge_parts);
  const ir::Shape ws{merged.shape[0], merged.shape[1], merged.shape[2], merged.shape[3]};
  const ir::Node& first = *parts[0].conv.conv;
  ir::ConvAttrs a = *parts[0].conv.attrs;  // the merged conv's: the largest kernel, widened pads
  for (int d = 0; d < 2; ++d) {
    a.pads[d] += (ws[2 + d] - a.kernel[d]) / 2 * a.dilation[d];
    a.pads[d + 2] = a.pads[d];
    a.kernel[d] = ws[2 + d];
  }
  const ValueId x = first.inputs[0];
  const ir::Shape& xs = shape(x);
  const ir::Shape& y0 = shape(parts[0].chain.y);
  const ir::Shape ys{y0[0], ws[0], y0[2], y0[3]};

  // NHWC only where every merged conv runs NHWC on its own (so an input stored NHWC, which only
  // NHWC convolutions read, is always read NHWC).
  bool nhwc = true;
  for (const MergeUnit& p : parts) {
    const auto site = site_of_conv_.find(index(p.ops[0]));
    nhwc = nhwc && site != site_of_conv_.end() &&
           conv_layouts_.layout[site->second] == ConvLayout::kNhwc;
  }
  BRAID_ASSERT(nhwc || !stored_nhwc(x), "cuda: an NHWC input read by an NCHW convolution");
  const ConvLayout layout = nhwc ? ConvLayout::kNhwc : ConvLayout::kNchw;
  const cudnnTensorFormat_t format = nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  if (nhwc) merged.weights = to_krsc(merged.weights, ws);
  cudnnTensorDescriptor_t x_desc = tensor4(xs[0], xs[1], xs[2], xs[3], format);
  cudnnTensorDescriptor_t y_desc = tensor4(ys[0], ys[1], ys[2], ys[3], format);
  cudnnTensorDescriptor_t b_desc = tensor4(1, ys[1], 1, 1, format);
  cudnnTensorDescriptor_t x_nchw =
      nhwc && !stored_nhwc(x) ? tensor4(xs[0], xs[1], xs[2], xs[3]) : nullptr;
  const auto [w_desc, c_desc] =
      conv_descriptors(ws, a.pads[0], a.pads[1], a.stride, a.dilation, 1, format);
  int n = 0, c = 0, h = 0, wd = 0;
  BRAID_CU(cudnnGetConvolution2dForwardOutputDim(c_desc, x_desc, w_desc, &n, &c, &h, &wd));
  BRAID_CHECK(n == ys[0] && c == ys[1] && h == ys[2] && wd == ys[3], ErrorCode::kInternal,
              "cuda: cuDNN's output shape of the merge of '", first.name,
              "' differs from the graph's");
  std::byte* w_dev = keep_as(merged.weights, elem_);
  const std::string name = "merge of " + first.name;
  const auto algo =
      conv_algo(conv_key(xs, ws, a, layout), x_desc, w_desc, w_dev, c_desc, y_desc, xs, ys, name);
  const cudnnConvolutionFwdAlgo_t chosen = algo.first;
  const size_t workspace = algo.second;
  // The lane's scratch: the cuDNN workspace, an NCHW-stored input transformed to NHWC, the
  // merged output.
  auto aligned = [](int64_t bytes) { return (bytes + 255) / 256 * 256; };
  const int64_t workspace_aligned = aligned(int64_t(workspace));
  const int64_t x_scratch_bytes = x_nchw != nullptr ? aligned(ir::num_elements(xs) * esize_) : 0;
  const int64_t merged_bytes = aligned(ir::num_elements(ys) * esize_);
  scratch_bytes_ = std::max(scratch_bytes_, workspace_aligned + x_scratch_bytes + merged_bytes);

  // The shared activation fused as compile_conv fuses a single conv's: ReLU into cuDNN's call
  // where cuDNN runs it, anything else through channel_affine with the bias.
  const std::optional<UnaryOp> activation = parts[0].activation;
  bool fused = activation && activation->kind == Unary::kRelu;
  cudnnActivationDescriptor_t act_desc =
      fused ? activation_descriptor(CUDNN_ACTIVATION_RELU) : nullptr;
  if (fused)
    fused = fused_call_runs(x_desc, w_desc, w_dev, c_desc, chosen, workspace, y_desc, b_desc,
                            act_desc, /*relu=*/true, xs, ys);
  std::byte* b_dev = fused ? keep_as(merged.bias, elem_) : keep_as(merged.bias, Elem::kF32);
  const int64_t outer = nhwc ? ys[0] * ys[2] * ys[3] : ys[0], channels = ys[1],
                inner = nhwc ? 1 : ys[2] * ys[3];

  // Each unit's window of the merged output, copied into its output as the arena stores it.
  struct Slice {
    Locator y;
    int64_t offset = 0;  // bytes into the merged output
    // Same layout: a 2-D copy of `height` rows of `width` bytes.
    size_t width = 0, height = 0, src_pitch = 0, dst_pitch = 0;
    // Another layout: cudnnTransformTensor from the strided window.
    cudnnTensorDescriptor_t window = nullptr, dst = nullptr;
  };
  std::vector<Slice> slices;
  const int64_t hw = ys[2] * ys[3];
  int64_t channel = 0;
  for (const MergeUnit& p : parts) {
    const int64_t k = shape(p.chain.y)[1];
    Slice s{.y = locate(p.chain.y)};
    const bool y_nhwc = stored_nhwc(p.chain.y);
    s.offset = (nhwc ? channel : channel * hw) * esize_;
    if (y_nhwc == nhwc) {
      s.width = size_t((nhwc ? k : k * hw) * esize_);
      s.height = size_t(nhwc ? ys[0] * hw : ys[0]);
      s.src_pitch = size_t((nhwc ? ys[1] : ys[1] * hw) * esize_);
      s.dst_pitch = s.width;
    } else {
      BRAID_CU(cudnnCreateTensorDescriptor(&s.window));
      tensor_descs_.push_back(s.window);
      const int64_t n_stride = ys[1] * hw, c_stride = nhwc ? 1 : hw,
                    h_stride = nhwc ? ys[3] * ys[1] : ys[3], w_stride = nhwc ? ys[1] : 1;
      BRAID_CU(cudnnSetTensor4dDescriptorEx(s.window, cudnn_type(elem_), int(ys[0]), int(k),
                                            int(ys[2]), int(ys[3]), int(n_stride), int(c_stride),
                                            int(h_stride), int(w_stride)));
      s.dst = tensor4(ys[0], k, ys[2], ys[3], y_nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW);
    }
    slices.push_back(std::move(s));
    channel += k;
  }

  const ConvLaunch launch{.x_desc = x_desc,
                          .y_desc = y_desc,
                          .b_desc = b_desc,
                          .w_desc = w_desc,
                          .c_desc = c_desc,
                          .algo = chosen,
                          .workspace = workspace,
                          .w_dev = w_dev,
                          .fused = fused,
                          .act_desc = act_desc,
                          .b_dev = b_dev,
                          .activation = activation,
                          .elem = elem_,
                          .outer = outer,
                          .channels = channels,
                          .inner = inner};
  auto x_ptr = locate(x);
  return {[=](const LaneContext& lane, std::byte* arena) {
    const float one = 1.0f, zero = 0.0f;
    const std::byte* src = x_ptr(arena);
    std::byte* x_scratch = lane.workspace + workspace_aligned;
    if (x_nchw != nullptr) {
      BRAID_CU(cudnnTransformTensor(lane.cudnn, &one, x_nchw, src, &zero, x_desc, x_scratch));
      src = x_scratch;
    }
    std::byte* out = x_scratch + x_scratch_bytes;
    launch.run(lane, src, out);
    for (const Slice& s : slices) {
      if (s.window == nullptr) {
        BRAID_CU(cudaMemcpy2DAsync(s.y(arena), s.dst_pitch, out + s.offset, s.src_pitch, s.width,
                                   s.height, cudaMemcpyDeviceToDevice, lane.stream));
      } else {
        BRAID_CU(cudnnTransformTensor(lane.cudnn, &one, s.window, out + s.offset, &zero, s.dst,
                                      s.y(arena)));
      }
    }
  }};
}

}  // namespace braid::exec::cuda
