// ONNX import, constant folding: exporters compute shapes at run time (Shape -> Gather ->
// Unsqueeze -> Concat -> Reshape) and build weights with ConstantOfShape / Expand. braid's shapes
// are static, so such subgraphs are evaluated once at import and their results become
// constants, as if the file had held them as initializers. Folded nodes leave no trace in the
// graph; a float result used by an op becomes a parameter like any initializer.
//
//   if (const FoldableOp* f = find_foldable_op(node.op_type()))
//     std::vector<Tensor> outs = f->fold(FoldContext{node, attrs, opset, inputs, max_elements});
//
// A node folds when every input is a constant (Shape and Size need only the input's static
// shape). The evaluator covers int64, int32, bool and float32 tensors and follows ONNX's
// semantics (numpy broadcasting, Slice clamping, integer Div truncating toward zero like ONNX
// Runtime). Internal to the importer.
#pragma once

#include <onnx/onnx_pb.h>

#include <span>
#include <string_view>
#include <vector>

#include "models/onnx_attributes.h"
#include "models/onnx_tensor.h"

namespace braid::models::onnx_detail {

struct FoldContext {
  const onnx::NodeProto& node;
  const NodeAttributes& attrs;
  int64_t opset;
  // One per ONNX input; nullptr for an omitted optional one. For Shape and Size of a value
  // computed at run time, a tensor that carries only the shape (no data).
  std::vector<const Tensor*> inputs;
  int64_t max_elements;  // a larger result is an error (OnnxImportOptions::limits)

  const std::string& who() const { return attrs.who(); }
};

struct FoldableOp {
  std::string_view op_type;
  int since_opset = 1;
  std::vector<std::string_view> attributes;  // the ones the evaluator understands
  bool needs_only_shape = false;             // Shape, Size: the input's data is not read
  std::vector<Tensor> (*fold)(const FoldContext&) = nullptr;  // one tensor per ONNX output
};

std::span<const FoldableOp> foldable_ops();
const FoldableOp* find_foldable_op(std::string_view op_type);

}  // namespace braid::models::onnx_detail
