// Internals of the CPU kernels, shared by cpu_kernels.cc (driver), cpu_kernels_dnnl.cc (oneDNN
// helpers, DnnlKernel), cpu_kernels_fusion.cc (plan_chain), cpu_kernels_eltwise.cc,
// cpu_kernels_norm.cc, cpu_kernels_data.cc, cpu_kernels_nn.cc (conv, pooling, matmul, gemm) and
// cpu_kernels_tensor.cc. Not a public header.
#pragma once

#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "exec/cpu/cpu_kernels.h"

namespace braid::exec::cpu::detail {

using dnnl::memory;
using Dims = memory::dims;
using Args = std::unordered_map<int, memory>;

// Shape -> oneDNN dims; a rank-0 tensor becomes {1} (oneDNN has no scalars).
Dims to_dims(const ir::Shape& shape);
// `dims` with leading 1s up to `rank` (numpy broadcasting aligns shapes on the right).
Dims pad_front(Dims dims, size_t rank);
Dims row_major_strides(const Dims& dims);
// A plain row-major float32 descriptor (nchw, nc, abc... for any rank).
memory::desc plain_md(const Dims& dims);
// `dims` laid out as `layout`; a layout other than kPlain needs 4-D dims.
memory::desc layout_md(const Dims& dims, TensorLayout layout);
// An arena tensor as it is laid out.
memory::desc arena_md(const TensorRef& ref);
// Whether oneDNN chose its reference implementation (is_reference_implementation).
bool is_reference(const dnnl::primitive_desc_base& pd);
// Every primitive uses a user scratchpad, so it can run on any lane (ecosystem.md §2.5 B).
dnnl::primitive_attr make_attr(const dnnl::post_ops& post_ops = {});
int64_t normalize_axis(int64_t axis, size_t rank);
// The product of s[begin, end).
int64_t product(const ir::Shape& s, size_t begin, size_t end);

// One or more oneDNN calls run back to back on the lane's stream and scratchpad, then an
// optional plain-loop epilogue. Memories over arena tensors get their data handle at each
// execute(); that rebinding is why one instance must not run on two lanes at once.
class DnnlKernel final : public Kernel {
 public:
  explicit DnnlKernel(dnnl::engine engine) : engine_(std::move(engine)) {}

  // A memory over `ref`: fixed data is bound now, arena data at every execute().
  memory bind(const memory::desc& md, const TensorRef& ref);
  // A temporary in the lane's scratchpad (e.g. a blocked copy of src), valid only while this
  // kernel executes; lanes run their kernels one at a time, so kernels share that space.
  memory temporary(const memory::desc& md);
  // Another view (`md`, e.g. a submemory_desc of it) of the bytes of the last temporary().
  memory view_of_last_temporary(const memory::desc& md);
  // Adds a call; its scratchpad (if any) lies in LaneState::scratchpad after the temporaries.
  void add(const dnnl::primitive_desc_base& pd, const dnnl::primitive& primitive, Args args);
  // Adds a reorder from `from` to `to` (a layout change inside the kernel).
  void add_reorder(const memory& from, const memory& to);
  // `ref` as an operand described by `wanted` (same dims as the tensor): the tensor itself when
  // it is laid out that way, else a temporary it is reordered into first (a call added now).
  memory input(const memory::desc& wanted, const TensorRef& ref);
  // `ref` as the result `wanted` of the next add(): the tensor itself when it is laid out that
  // way, else a temporary that add() reorders into the tensor after its call.
  memory output(const memory::desc& wanted, const TensorRef& ref);
  // `ref` as a flat 1-D operand of an element-wise op computed in `layout`: the tensor itself
  // when it is laid out that way, else a temporary it is reordered into first (a call added
  // now). Layouts never pad (exec/kernel.h), so the flat view covers exactly its elements.
  memory flat_input(TensorLayout layout, const TensorRef& ref);
  void set_epilogue(std::function<void(const KernelContext&)> epilogue) {
    epilogue_ = std::move(epilogue);
  }
  Bytes scratchpad_bytes() const { return temporary_bytes_ + call_scratchpad_bytes_; }
  // oneDNN's implementation of each call, in order (pd.impl_info_str()).
  const std::vector<std::string>& implementations() const { return implementations_; }
  const dnnl::engine& engine() const { return engine_; }

  void execute(const KernelContext& context) const override;

 private:
  struct Call {
    dnnl::primitive primitive;
    Args args;
  };
  dnnl::engine engine_;
  std::vector<Call> calls_;
  std::vector<std::string> implementations_;                // per call
  std::vector<std::pair<memory, memory>> pending_outputs_;  // (temporary, tensor) for add()
  std::vector<std::pair<memory, TensorRef>> arena_;         // (memory, its tensor) per run
  std::vector<std::pair<memory, int64_t>> temporaries_;     // (memory, scratchpad offset)
  std::vector<memory> scratchpads_;  // calls' scratchpads, at temporary_bytes_ (sequential)
  Bytes temporary_bytes_ = 0;
  Bytes call_scratchpad_bytes_ = 0;
  std::function<void(const KernelContext&)> epilogue_;
};

// Everything a builder needs: the graph, where tensors are, and a stream to run build-time
// weight reorders on.
struct BuildContext {
  const ir::Graph& graph;
  const TensorLocator& locate;
  dnnl::engine engine;
  dnnl::stream stream;

  TensorRef ref(ValueId v) const { return locate(v); }
  bool is_fixed(ValueId v) const { return !locate(v).in_arena(); }
  const ir::Shape& shape(ValueId v) const { return graph.value(v).type.shape; }
};

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

// The ops one kernel computes: a head op plus the ops fused into it, all from one unit.
struct Chain {
  const ir::Node* head = nullptr;
  const ir::Node* batch_norm = nullptr;  // Conv, ConvTranspose: folded into the weights and bias
  const ir::Node* bias_add = nullptr;    // MatMul/Gemm, ConvTranspose: Add of a parameter
  std::vector<const ir::Node*> activations;  // eltwise post-ops, in order
  // Conv: a residual Add of another activation (a binary post-op), after the first
  // `residual_after` activations.
  const ir::Node* residual = nullptr;
  ValueId residual_input{};
  size_t residual_after = 0;
  ValueId output{};   // the tensor the kernel writes
  size_t length = 1;  // ops of the unit consumed
};

// One oneDNN eltwise operation: alg(alpha, beta).
struct EltwiseStep {
  dnnl::algorithm alg;
  float alpha = 0.0f;
  float beta = 0.0f;
};

// An activation op as oneDNN eltwise steps applied in order. HardSigmoid is linear
// (alpha * x + beta) then clip to [0, 1], the form from oneDNN 2.x, which had no hardsigmoid
// (3.x's eltwise_hardsigmoid computes the same in one step; the two steps are kept so the
// post-op chains, and the split joins_post_ops makes, stay as they were). 3.x's hardswish is
// x * max(0, min(1, alpha * x + beta)): ONNX's with alpha = 1/6, beta = 1/2. Clip is
// max(alpha, min(beta, x)).
std::vector<EltwiseStep> eltwise_steps(const ir::Node& node);

// Appends the eltwise post-op of an activation op (Relu, Sigmoid, Tanh, Gelu) or attribute.
void append_activation(dnnl::post_ops& post_ops, const ir::Node& activation);
void append_activation(dnnl::post_ops& post_ops, ir::Activation activation);
void append_activations(dnnl::post_ops& post_ops, const Chain& chain);

// Copies `pd`'s preferred weights layout from `user` (plain, possibly strided) at build time,
// or returns `user` when it already has that layout and `user_is_stable` (fixed memory that
// outlives the kernel).
memory prepare_weights(const BuildContext& c, const memory& user, const memory::desc& wanted,
                       bool user_is_stable);

// Which ops one kernel computes, starting at ops[at] (cpu_kernels_fusion.cc).
Chain plan_chain(const BuildContext& c, std::span<const NodeId> ops, size_t at);

// Builders in cpu_kernels_eltwise.cc.
std::unique_ptr<Kernel> build_eltwise(const BuildContext& c, const Chain& chain);
// Whether Add/Mul/Sub/Div maps onto oneDNN's binary primitive: src0 must have the output's
// dims; src1 may broadcast. Returns the inputs in (src0, src1) order; Add and Mul commute, so
// either input may be src0; Pow has no binary primitive.
std::optional<std::pair<ValueId, ValueId>> binary_operands(const BuildContext& c,
                                                           const ir::Node& node);
std::unique_ptr<Kernel> build_binary(const BuildContext& c, const Chain& chain);
std::unique_ptr<Kernel> build_sum(const BuildContext& c, const Chain& chain);

// Builders in cpu_kernels_norm.cc.
std::unique_ptr<Kernel> build_reduce_mean(const BuildContext& c, const Chain& chain);
std::unique_ptr<Kernel> build_lrn(const BuildContext& c, const Chain& chain);
std::unique_ptr<Kernel> build_batch_norm(const BuildContext& c, const Chain& chain);
std::unique_ptr<Kernel> build_softmax(const BuildContext& c, const Chain& chain);
std::unique_ptr<Kernel> build_layer_norm(const BuildContext& c, const Chain& chain);

// Builders in cpu_kernels_data.cc.
std::unique_ptr<Kernel> build_view(const BuildContext& c, const Chain& chain);
std::unique_ptr<Kernel> build_pad(const BuildContext& c, const Chain& chain);
std::unique_ptr<Kernel> build_concat(const BuildContext& c, const Chain& chain);
std::unique_ptr<Kernel> build_transpose(const BuildContext& c, const Chain& chain);
std::unique_ptr<Kernel> build_split(const BuildContext& c, const Chain& chain);

// Builders in cpu_kernels_nn.cc.
std::unique_ptr<Kernel> build_conv(const BuildContext& c, const Chain& chain);
// Operator merge (ios.txt §4.2): the conv chains as one oneDNN convolution (cpu_kernels.h,
// make_merged_conv_kernel); null with `why` when they cannot be one.
std::unique_ptr<Kernel> build_merged_conv(const BuildContext& c, std::span<const Chain> chains,
                                          std::string* why);
std::unique_ptr<Kernel> build_pool(const BuildContext& c, const Chain& chain);
std::unique_ptr<Kernel> build_global_average_pool(const BuildContext& c, const Chain& chain);
std::unique_ptr<Kernel> build_matmul(const BuildContext& c, const Chain& chain);
std::unique_ptr<Kernel> build_gemm(const BuildContext& c, const Chain& chain);
std::unique_ptr<Kernel> build_conv_transpose(const BuildContext& c, const Chain& chain);
// Whether oneDNN's deconvolution computes this ConvTranspose (fixed weights; its right padding,
// the end pad less output_padding, is not negative); build_conv_transpose runs the others as
// plain loops, without fused activations.
bool deconvolution_fits(const BuildContext& c, const ir::Node& node);

// Builders in cpu_kernels_tensor.cc: plain loops, any dtype.
std::unique_ptr<Kernel> build_erf(const BuildContext& c, const Chain& chain);
std::unique_ptr<Kernel> build_where(const BuildContext& c, const Chain& chain);
std::unique_ptr<Kernel> build_equal(const BuildContext& c, const Chain& chain);
std::unique_ptr<Kernel> build_not(const BuildContext& c, const Chain& chain);
std::unique_ptr<Kernel> build_expand(const BuildContext& c, const Chain& chain);
std::unique_ptr<Kernel> build_slice(const BuildContext& c, const Chain& chain);
std::unique_ptr<Kernel> build_gather(const BuildContext& c, const Chain& chain);
std::unique_ptr<Kernel> build_cast(const BuildContext& c, const Chain& chain);
std::unique_ptr<Kernel> build_resize(const BuildContext& c, const Chain& chain);

}  // namespace braid::exec::cpu::detail
