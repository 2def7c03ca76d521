// The CPU executor's layout pass: which activations live in the arena in a oneDNN blocked layout
// (nChw16c by default) instead of plain nchw. oneDNN's direct convolutions run on blocked
// tensors; on plain ones they either reorder in and out of a scratch copy or fall back to
// im2col + GEMM. Keeping a run of convs, pools and element-wise ops blocked end to end removes
// those copies; reorders are left only at plain/blocked boundaries, inside the kernel that
// crosses one (ONNX Runtime's NCHWc transformer does the same with MLAS's nChw8c/16c).
//
//   const auto layouts = cpu::choose_layouts(graph, cpu::layout_options_from_env());
//   ref.layout = layouts[index(value)];          // in the executor's TensorLocator
//
// The choice depends on the graph only (never on units or the schedule), so every schedule
// runs the same kernels on the same layouts and produces bit-identical outputs.
#pragma once

#include <vector>

#include "exec/kernel.h"
#include "ir/graph.h"

namespace braid::exec::cpu {

struct LayoutOptions {
  // The layout of every activation that can be blocked; kPlain turns the pass off.
  TensorLayout blocked = TensorLayout::kNChw16c;
};

// LayoutOptions with `blocked` from BRAID_CPU_LAYOUT (plain, nhwc, nchw8c, nchw16c), for
// side-by-side measurements; unset: the default. Throws kInvalidArgument on other values.
LayoutOptions layout_options_from_env();

// Whether the CPU kernel of `node` reads a blocked activation as its data input(s)
// (`as_output` false) or writes its output blocked (`as_output` true) without a reorder of its
// own. Ops not listed (MatMul, Softmax, views, ...) are plain only.
bool accepts_blocked(const ir::Graph& graph, const ir::Node& node, bool as_output);

// Whether the CPU kernels can take `value` in `layout`: a 4-D float32 tensor whose channels
// are a multiple of the layout's block, written blocked by its producer (graph inputs: by
// the caller) and read blocked by every consumer. Says nothing about whether that pays.
bool can_be_blocked(const ir::Graph& graph, ValueId value, TensorLayout layout);

// The layout of every value (indexed by ValueId). A value is blocked when it is a 4-D
// activation, neither a graph input nor a graph output, its channel count is a multiple of the
// block (no padded channels anywhere), its producer writes and all its consumers read it
// blocked, and, unless its producer is a Conv (which converts for free), one of the producer's
// activation inputs is blocked too (Concat: all of them). Views (Reshape, Flatten) read plain
// only, so the value they alias is always plain.
std::vector<TensorLayout> choose_layouts(const ir::Graph& graph, const LayoutOptions& options);

// Channels per block of `layout`: 16 or 8, 1 for nhwc and plain.
int64_t channel_block(TensorLayout layout);

}  // namespace braid::exec::cpu
