// The CPU executor's layout pass: which activations live in the arena in a oneDNN layout other
// than plain nchw. oneDNN's fast convolutions want one: on plain tensors they reorder in and out
// of a scratch copy or fall back to im2col + GEMM. Keeping a run of convs, pools and
// element-wise ops in one layout end to end removes those copies; reorders are left only at
// boundaries, inside the kernel that crosses one (ONNX Runtime's NCHWc transformer does the
// same with MLAS's nChw8c/16c).
//
// The default is nhwc: oneDNN runs its brgemm convolutions (brgconv) on it, which measured
// faster than its direct nChw16c convolutions here on 2.6 (AVX-512, batch 1: Inception V3 1
// thread 70 vs 78 ms, NASNet 349 vs 413 ms, RandWire 131 vs 156 ms; GoogLeNet, SqueezeNet within
// 3%). 3.2 runs brgconv on nhwc on AVX2 too (2.6 ran jit:avx2 there).
// nChw16c keeps one advantage: a Concat's channel windows are contiguous whole blocks, so
// producers can write straight into them (nhwc windows interleave; a strided nhwc destination
// sends oneDNN's convolution to its reference implementation).
//
//   const auto layouts = cpu::choose_layouts(graph, {.blocked = TensorLayout::kNhwc});
//   ref.layout = layouts[index(value)];          // in the executor's TensorLocator
//
// The choice depends on the graph only (never on units or the schedule), so every schedule
// runs the same kernels on the same layouts and produces bit-identical outputs.
#pragma once

#include <string_view>
#include <vector>

#include "exec/kernel.h"
#include "ir/graph.h"

namespace braid::exec::cpu {

struct LayoutOptions {
  // The layout of every activation that can leave plain; kPlain turns the pass off.
  TensorLayout blocked = TensorLayout::kNhwc;
};

// A layout by name (plain, nhwc, nchw8c, nchw16c); throws kInvalidArgument on other names.
TensorLayout parse_layout(std::string_view name);
std::string_view layout_name(TensorLayout layout);

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

// Whether `input`, written in layouts[input] at `offset` elements into the concat axis of the
// Concat output `concat` (in layouts[concat]), lands exactly on its window: the same layout,
// and for a blocked one, a window of whole channel blocks. The memory plan checks the rest
// (a contiguous window: dims before the axis all 1).
bool can_write_into_concat(const ir::Graph& graph, const std::vector<TensorLayout>& layouts,
                           ValueId input, ValueId concat, int64_t offset);

// Channels per block of `layout`: 16 or 8, 1 for nhwc and plain.
int64_t channel_block(TensorLayout layout);

}  // namespace braid::exec::cpu
