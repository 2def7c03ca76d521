#include "ir/limits.h"

#include "base/error.h"

namespace braid::ir {

void check_limits(const Graph& graph, const TensorLimits& limits) {
  BRAID_CHECK(limits.max_tensor_elements >= 1 && limits.max_activation_bytes >= 1,
              ErrorCode::kInvalidArgument, "tensor limits must be >= 1, got ",
              limits.max_tensor_elements, " elements and ", limits.max_activation_bytes, " bytes");
  int64_t total = 0;
  for (const Value& v : graph.values()) {
    // GraphBuilder refuses values whose size overflows int64, so these products are exact.
    const int64_t elements = v.type.elements();
    BRAID_CHECK(elements <= limits.max_tensor_elements, ErrorCode::kUnsupported, "tensor '", v.name,
                "' of shape ", to_string(v.type.shape), " has ", elements,
                " elements, which exceeds the limit of ", limits.max_tensor_elements,
                " (raise with --max-tensor-elements)");
    if (v.kind == ValueKind::kParameter) continue;
    total += v.type.bytes();
    BRAID_CHECK(total <= limits.max_activation_bytes, ErrorCode::kUnsupported,
                "the model's activations need more than ", limits.max_activation_bytes,
                " bytes in total (", total, " bytes up to tensor '", v.name,
                "'), which exceeds the limit (raise with --max-activation-bytes)");
  }
}

}  // namespace braid::ir
