// ONNX import, per-op translation: the table of ONNX op types braid imports (onnx_ops.cc), each
// with the opsets it covers, the attributes it understands and the function that turns a node's
// attributes and constant inputs into braid's typed ir::OpAttrs.
//
//   const OnnxOp* op = find_onnx_op("Conv");
//   NodeAttributes attrs(node, "node 'conv1'");
//   attrs.check_known(op->attributes);
//   ir::OpAttrs a = op->import(OpContext{node, attrs, opset, input_types, constants});
//
// Internal to the importer; `supported_onnx_ops()` (onnx_import.h) is the public view.
#pragma once

#include <onnx/onnx_pb.h>

#include <climits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/op.h"
#include "ir/tensor_type.h"
#include "models/onnx_attributes.h"
#include "models/onnx_tensor.h"

namespace braid::models::onnx_detail {

// What a per-op import function sees of the node it translates.
struct OpContext {
  const onnx::NodeProto& node;
  const NodeAttributes& attrs;             // attrs.who() names the node in messages
  int64_t opset;                           // of the model's default domain
  std::span<const ir::TensorType> inputs;  // types of the tensor operands
  const Constants& constants;

  const std::string& who() const { return attrs.who(); }
  // Input k as a constant of `dtype`, scalar or 1-D (Reshape shape, Split sizes, Pad pads);
  // nullopt when the input is omitted, kUnsupported when it is not a constant.
  std::optional<Tensor> const_input(int k, std::string_view role, ir::DType dtype) const;
  // `axis` normalized into [0, rank), kInvalidModel when out of range.
  int64_t checked_axis(int64_t axis, int64_t rank) const;
};

// How braid handles an op type.
enum class OnnxOpRole {
  kKernel,    // becomes a node of braid's graph (op_kind_from_onnx(op_type))
  kAlias,     // renames its input (inference-time Dropout)
  kConstant,  // becomes a constant (Constant)
  kReshape,   // becomes a Reshape to its static result shape (Unsqueeze, Squeeze)
  kRewrite,   // becomes a few braid ops (Einsum: Transposes and a MatMul), see RewriteStep
};

// One braid op of a kRewrite: the walk adds the steps in order, step j's node and output named
// "<node>/<suffix>", the last one after the ONNX node and its output.
struct RewriteStep {
  ir::OpKind kind;
  ir::OpAttrs attrs;
  std::vector<int> operands;  // k >= 0: the node's tensor operand k; -1 - j: step j's output
  std::string suffix;
};

struct OnnxOp {
  std::string_view op_type;
  int since_opset = 1;  // the first opset of the default domain whose form braid imports
  OnnxOpRole role = OnnxOpRole::kKernel;
  std::vector<std::string_view> attributes;  // the ones braid understands; others are rejected
  // Inputs that are tensors of the graph; the rest are constants `import` reads itself.
  int max_operands = INT_MAX;
  bool output_per_onnx_output = false;  // Split: one braid output per ONNX output, else one
  // Typed attributes for the node; nullptr for ops without any (ir::OpAttrs{} = monostate).
  ir::OpAttrs (*import)(const OpContext&) = nullptr;
  // The braid ops of a kRewrite (non-empty; the last one writes the node's output).
  std::vector<RewriteStep> (*rewrite)(const OpContext&) = nullptr;
  // A kRewrite: every kind its steps may use (what `braid ops --device` checks a backend for).
  std::vector<ir::OpKind> rewrite_kinds = {};
};

// Import functions of rows whose ops have a file of their own (onnx_ops_upsampling.cc).
ir::OpAttrs import_conv_transpose(const OpContext& c);
ir::OpAttrs import_resize(const OpContext& c);
std::vector<RewriteStep> import_upsample(const OpContext& c);

// Every ONNX op type braid imports, in the order `braid ops` lists them.
std::span<const OnnxOp> onnx_ops();
const OnnxOp* find_onnx_op(std::string_view op_type);

}  // namespace braid::models::onnx_detail
