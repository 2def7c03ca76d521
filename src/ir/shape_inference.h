// Shape inference for every op of the IR. Validates arity, ranks and attribute ranges and
// throws braid::Error(kInvalidModel) naming the node on a mismatch.
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "ir/op.h"
#include "ir/tensor_type.h"

namespace braid::ir {

std::vector<TensorType> infer_output_types(OpKind kind, const OpAttrs& attrs,
                                           std::span<const TensorType> inputs,
                                           size_t num_outputs, std::string_view node_name);

// Output spatial size of a convolution or pooling window along one axis.
int64_t window_output_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad_begin,
                           int64_t pad_end, int64_t dilation, bool ceil_mode);

// One output dim of a Slice: element k reads input index start + k * step.
struct SliceDim {
  int64_t start = 0;
  int64_t step = 1;
  int64_t size = 0;
};
// Resolves a Slice's starts/ends/axes/steps against `shape` (ONNX clamping rules); one entry per
// dim, untouched dims as {0, 1, dim}. Throws kInvalidModel on bad axes or a zero step.
std::vector<SliceDim> slice_dims(const SliceAttrs& attrs, const Shape& shape,
                                 std::string_view node_name);

}  // namespace braid::ir
