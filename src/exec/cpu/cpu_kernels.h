// CPU kernels: the ops of one schedule unit compiled into oneDNN 3.x primitives (plus a few
// plain loops), once, at prepare time. execute() only binds arena pointers and runs.
//
//   omp_set_num_threads(threads_of_this_lane);            // fixed into the primitives here
//   cpu::KernelBuildContext build{dnnl::engine(dnnl::engine::kind::cpu, 0)};
//   Bytes scratch = 0;
//   auto kernels = cpu::make_unit_kernels(graph, unit.ops, locate, build, &scratch);
//   cpu::LaneState lane{dnnl::stream(build.engine), lane_scratchpad /* >= scratch bytes */};
//   for (auto& k : kernels) k->execute({.arena = arena, .lane_state = &lane});
//
// Contract with the executor:
//  - Activations live in the arena in plain row-major layout (nchw, nc, ...); parameters are
//    `fixed` pointers that outlive the kernels. Weights may be copied and reordered into the
//    primitive's preferred layout at build time; the kernel owns that copy.
//  - Every primitive uses scratchpad_mode::user: execute() hands it LaneState::scratchpad, so a
//    kernel may run on a thread other than the one that built it (ecosystem.md §2.5, pattern
//    B), provided that thread has the same omp_set_num_threads value as at build time. The
//    lane scratchpad also holds a kernel's temporaries (a conv's blocked nChw16c copies of its
//    src and dst), so a lane must run its kernels one at a time.
//  - A kernel instance must not be executed by two lanes at once (it rebinds its dnnl::memory
//    handles on every execute). Different kernels may run concurrently on different lanes.
//  - Fusion inside a unit (only between ops adjacent in `ops`, and only when the intermediate
//    has that single consumer and is not a graph output): Conv [-> BatchNormalization folded
//    into the weights] -> activations as eltwise post-ops; MatMul/Gemm [-> bias Add of a
//    parameter] -> activations; Add/Mul -> activations. A fused-away intermediate is never
//    written, though the executor still gives it an arena slot.
//  - Reshape/Flatten/Identity whose output the executor aliased to its input (same arena
//    offset) produce no kernel at all; otherwise they copy.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "base/ids.h"
#include "base/units.h"
#include "exec/kernel.h"
#include "ir/graph.h"

// The kernels use the 3.x API (primitive_desc(engine, ..., attr), runtime scales) only.
static_assert(DNNL_VERSION_MAJOR >= 3, "braid's CPU executor needs oneDNN 3.x (make deps)");

namespace braid::exec::cpu {

// What KernelContext::lane_state points to on the CPU executor: one per lane (thread).
struct LaneState {
  dnnl::stream stream;
  std::byte* scratchpad = nullptr;  // at least the unit's *scratchpad_bytes, 64-byte aligned
};

struct KernelBuildContext {
  dnnl::engine engine;
};

// Whether make_unit_kernels can compile `node` (every op kind of the IR on float32 tensors).
bool supports(const ir::Graph& graph, NodeId node);

// oneDNN's implementation of each primitive `kernel` runs ("brgconv:avx2", "ref:any", ...),
// in order; empty for the plain-loop kernels. make_unit_kernels warns (spdlog) about every
// reference one it could not avoid.
std::vector<std::string> implementation_names(const Kernel& kernel);

// Whether an implementation name is oneDNN's reference implementation (naive loops, one to
// three orders of magnitude slower than its jit kernels): "ref:any", alone or inside a
// composite name ("conv:any+ref:any": a deconvolution on the reference convolution), or 2.x's
// "lrn_ref:any", "bnorm_ref:any".
bool is_reference_implementation(std::string_view name);

// Compiles the ops of one schedule unit, in order, into kernels to execute in the returned
// order. Sets *scratchpad_bytes to the largest scratchpad any of them needs. Throws
// braid::Error(kUnsupported) naming the node when an op or attribute cannot be run.
std::vector<std::unique_ptr<Kernel>> make_unit_kernels(const ir::Graph& graph,
                                                       std::span<const NodeId> ops,
                                                       const TensorLocator& locate,
                                                       const KernelBuildContext& context,
                                                       Bytes* scratchpad_bytes);

// Operator merge (ios.txt §4.2): the units of one merge stage, each a Conv chain that
// make_unit_kernels would compile into one kernel (Conv [-> BatchNormalization] -> activations,
// nothing else), as ONE oneDNN convolution over their weights zero-padded (centered) to the
// largest kernel and concatenated along output channels, then one reorder per unit copying its
// channel window into its output tensor. Null, with `why`, when the units cannot be one kernel
// (then the executor runs them one after another). Sets *scratchpad_bytes like make_unit_kernels.
std::unique_ptr<Kernel> make_merged_conv_kernel(const ir::Graph& graph,
                                                std::span<const std::vector<NodeId>> unit_ops,
                                                const TensorLocator& locate,
                                                const KernelBuildContext& context,
                                                Bytes* scratchpad_bytes, std::string* why);

}  // namespace braid::exec::cpu
