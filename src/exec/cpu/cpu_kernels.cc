// The CPU kernel driver: which ops the CPU executor supports, dispatch on OpKind to the
// builders (cpu_kernels_nn.cc, _eltwise, _norm, _data, _tensor), the kernels of a unit as
// planned by plan_chain (cpu_kernels_fusion.cc), merged convolutions, and a warning where oneDNN
// has only its reference implementation. oneDNN 3.x API: primitive_desc(engine, ..., attr) ->
// primitive (ecosystem.md §2).
#include "exec/cpu/cpu_kernels.h"

#include <algorithm>
#include <mutex>
#include <set>
#include <string_view>

#include <spdlog/spdlog.h>

#include "base/error.h"
#include "exec/cpu/cpu_kernels_impl.h"
#include "exec/cpu/layout.h"

namespace braid::exec::cpu {
namespace detail {
namespace {

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
    case ir::OpKind::Pad:
      return build_pad(c, chain);
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
