// Limits on tensor sizes, checked when a model is built or imported, so that an absurd shape
// (a 100000x100000 input, --batch 2147483647) is a clear error naming the tensor and the flag
// that raises the limit, rather than std::bad_alloc or an overflowed size later.
//
//   ir::check_limits(graph, {.max_tensor_elements = int64_t{1} << 32});
#pragma once

#include <cstdint>

#include "ir/graph.h"

namespace braid::ir {

struct TensorLimits {
  // 2^31 elements (8 GiB of float32) in one tensor; larger ones only come from mistyped shapes
  // or batch sizes on the machines braid targets.
  int64_t max_tensor_elements = int64_t{1} << 31;
  // Sum of all activations (graph inputs and op outputs, counted before memory planning lets
  // them share buffers, so an upper bound of what a run allocates): 64 GiB.
  int64_t max_activation_bytes = int64_t{64} << 30;
};

// Throws Error(kUnsupported) naming the first tensor over `limits`, or the total, with the
// CLI flag that raises it (--max-tensor-elements, --max-activation-bytes).
void check_limits(const Graph& graph, const TensorLimits& limits);

}  // namespace braid::ir
