// Kernels: the compiled form of a unit's ops, made once at prepare time and replayed per run.
// A kernel knows where its tensors live as integers (arena offsets) or fixed pointers, so
// execute() does no lookup, allocation or string handling.
//
//   TensorLocator locate = [&](ValueId v) { return TensorRef{...}; };
//   auto kernels = cpu::make_unit_kernels(graph, unit.ops, locate, context);
//   for (auto& k : kernels) k->execute({.arena = arena, .lane_state = &lane});
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "base/ids.h"
#include "base/units.h"
#include "ir/tensor_type.h"

namespace braid::exec {

// How a tensor's elements are ordered in memory. Parameters, graph inputs and graph outputs are
// always plain; the CPU executor's layout pass (exec/cpu/layout.h) may keep 4-D activations in
// a oneDNN layout. No layout pads: a blocked tensor's channel count is a multiple of its block,
// so every layout of a tensor has the same size in bytes.
enum class TensorLayout : uint8_t {
  kPlain,    // row-major: nchw, nc, ...
  kNhwc,     // channels last (oneDNN acdb)
  kNChw8c,   // channels in blocks of 8: [N][C/8][H][W][8]
  kNChw16c,  // channels in blocks of 16: [N][C/16][H][W][16]
};

// What one execute() call needs. `lane_state` is executor-specific (the CPU executor passes
// its per-lane oneDNN stream and scratchpad).
struct KernelContext {
  std::byte* arena = nullptr;
  // Per graph input (in ir::Graph::inputs() order): where its storage is in this run, its arena
  // slot or a caller's buffer read in place (PreparedModel::bind_input). Only tensors whose
  // TensorRef::input is set are found through it.
  std::byte* const* inputs = nullptr;
  void* lane_state = nullptr;
};

// Where a tensor is at run time: an activation at `arena_offset` bytes into the request's arena,
// or a parameter at `fixed` (memory the prepared model owns; never written by kernels).
struct TensorRef {
  int64_t arena_offset = -1;
  const float* fixed = nullptr;
  ir::TensorType type;
  TensorLayout layout = TensorLayout::kPlain;
  // >= 0: the tensor lies in the storage of graph input #input (the input itself or a view of
  // it), `within_input` bytes into it, and a run finds that storage in KernelContext::inputs
  // (the input may be the caller's buffer). `arena_offset` still says where its arena slot is,
  // so offsets compare as before.
  int32_t input = -1;
  int64_t within_input = 0;

  bool in_arena() const { return arena_offset >= 0; }
  std::byte* bytes(const KernelContext& c) const {
    if (input >= 0) return c.inputs[input] + within_input;
    return in_arena() ? c.arena + arena_offset
                      : reinterpret_cast<std::byte*>(const_cast<float*>(fixed));
  }
  float* data(const KernelContext& c) const { return reinterpret_cast<float*>(bytes(c)); }
};

using TensorLocator = std::function<TensorRef(ValueId)>;

class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual void execute(const KernelContext& context) const = 0;
};

}  // namespace braid::exec
