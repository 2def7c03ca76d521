// Fusion inside a unit: plan_chain decides which ops one kernel computes, a head op plus the
// BatchNormalization, bias Add, residual Add and activations that follow it and can be folded
// into it or run as oneDNN post-ops.
#include <algorithm>
#include <optional>

#include "base/error.h"
#include "exec/cpu/cpu_kernels_impl.h"
#include "exec/cpu/layout.h"
#include "ir/unit_graph.h"

namespace braid::exec::cpu::detail {

namespace {

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
  const std::optional<ValueId> param = ir::other_input(add, value);
  if (add.kind != ir::OpKind::Add || !param || !c.is_fixed(*param)) return std::nullopt;
  const ValueId other = *param;
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
  const std::optional<ValueId> z = ir::other_input(add, value);
  if (add.kind != ir::OpKind::Add || !z || c.is_fixed(*z)) return std::nullopt;
  const ValueId other = *z;
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

}  // namespace

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
      const std::optional<ValueId> other = n != nullptr && n->kind == ir::OpKind::Add
                                               ? ir::other_input(*n, chain.output)
                                               : std::nullopt;
      if (other && c.is_fixed(*other)) {
        const ir::Shape& bias = c.shape(*other);
        const bool per_channel = bias.size() <= 4 && ir::num_elements(bias) == oc &&
                                 bias.size() >= 3 && bias[bias.size() - 3] == oc &&
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

}  // namespace braid::exec::cpu::detail
