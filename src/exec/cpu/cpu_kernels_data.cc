// Data-movement kernels: views (Reshape/Flatten/Identity) when not aliased, Pad (a plain loop,
// or a reorder into a window of the output), Concat, Transpose and Split. CopyKernel and
// WindowPadKernel are in cpu_kernels_impl.h.
#include <algorithm>

#include "base/error.h"
#include "exec/cpu/cpu_kernels_impl.h"
#include "exec/cpu/layout.h"

namespace braid::exec::cpu::detail {

using dt = memory::data_type;

namespace {

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

}  // namespace

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

std::unique_ptr<Kernel> build_pad(const BuildContext& c, const Chain& chain) {
  const ir::Node& node = *chain.head;
  const auto& a = std::get<ir::PadAttrs>(node.attrs);
  const TensorRef src = c.ref(node.inputs[0]), dst = c.ref(chain.output);
  if (src.layout == TensorLayout::kPlain && dst.layout == TensorLayout::kPlain)
    return std::make_unique<PadKernel>(src, dst, a.pads, a.value);
  return std::make_unique<WindowPadKernel>(c, src, dst, a.pads, a.value);
}

}  // namespace braid::exec::cpu::detail
