// The ONNX op table: where a new op goes.
//
// To import a new ONNX op type:
//  1. add its kind to src/ir/op_kinds.inc (the one list of braid's ops) with its attribute struct
//     in ir/op.h, shape inference in ir/shape_inference.cc and kernels in exec/;
//  2. add one row to kOps below: the op type, the first opset whose form you implement, the
//     attributes you understand (anything else is rejected), how many inputs are tensors of the
//     graph (the rest are constants you read with OpContext::const_input), and, if the op has
//     attributes, an `import_<op>` function above the table that returns its ir::OpAttrs (or
//     in a file of its own, declared in onnx_ops.h, as the upsampling ops' are).
//  An op that braid computes with ops it already has is a kRewrite row instead: its
//  `import_<op>` returns the RewriteStep list (Einsum: Transposes and a MatMul).
// The graph walk (onnx_import.cc) does the rest: operands, outputs, names, shape checks.
// Ops that only rename (Dropout) or define constants (Constant) are rows with their role; the
// walk handles them. Ops that only relabel dims (Unsqueeze, Squeeze) are kReshape rows: their
// import function returns the ReshapeAttrs of a braid Reshape. An op exporters apply to constants
// (shape arithmetic, weight building) is folded at import instead: a row in kFoldable
// (onnx_fold.cc). An op may have both rows (Add, Reshape): it folds when its inputs are constants
// and runs otherwise. The test OnnxOps.EveryOpKindHasATableRow fails for a kind in op_kinds.inc
// without a row here.
#include "models/onnx_ops.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <utility>

#include "base/error.h"
#include "models/onnx_einsum.h"
#include "models/onnx_fold.h"
#include "models/onnx_import.h"

namespace braid::models::onnx_detail {
namespace {

using ir::OpKind;
constexpr auto kBad = ErrorCode::kInvalidModel;
constexpr auto kUnsupported = ErrorCode::kUnsupported;

// SAME_UPPER / SAME_LOWER: output = ceil(in / stride), the odd pad at the end (upper) or begin.
void same_pads(int64_t in, int64_t k, int64_t s, int64_t d, bool upper, int64_t* begin,
               int64_t* end) {
  int64_t out = (in + s - 1) / s;
  int64_t total = std::max<int64_t>(0, (out - 1) * s + (k - 1) * d + 1 - in);
  *begin = upper ? total / 2 : total - total / 2;
  *end = total - *begin;
}

void apply_auto_pad(const OpContext& c, const ir::Shape& x, const std::array<int64_t, 2>& kernel,
                    const std::array<int64_t, 2>& stride, const std::array<int64_t, 2>& dilation,
                    std::array<int64_t, 4>* pads) {
  const std::string mode = c.attrs.get_string("auto_pad", "NOTSET");
  if (mode == "NOTSET") return;
  BRAID_CHECK(!c.attrs.get_ints("pads"), kBad, c.who(), ": both pads and auto_pad=", mode,
              " are set");
  if (mode == "VALID") {
    *pads = {0, 0, 0, 0};
    return;
  }
  BRAID_CHECK(mode == "SAME_UPPER" || mode == "SAME_LOWER", kUnsupported, c.who(), ": auto_pad '",
              mode, "' is not supported");
  for (int k = 0; k < 2; ++k)
    same_pads(x[2 + k], kernel[k], stride[k], dilation[k], mode == "SAME_UPPER", &(*pads)[k],
              &(*pads)[2 + k]);
}

// ---- one import function per op with attributes, in table order ----

ir::OpAttrs import_conv(const OpContext& c) {
  BRAID_CHECK(c.inputs.size() >= 2, kBad, c.who(), " (Conv): needs input and weights");
  const ir::Shape& x = c.inputs[0].shape;
  const ir::Shape& w = c.inputs[1].shape;
  BRAID_CHECK(x.size() == 4 && w.size() == 4, kUnsupported, c.who(),
              ": only 2-D Conv is supported (input ", ir::to_string(x), ", weights ",
              ir::to_string(w), ")");
  ir::ConvAttrs a;
  a.kernel = c.attrs.get_array<2>("kernel_shape", {w[2], w[3]}, true);
  a.stride = c.attrs.get_array<2>("strides", {1, 1}, true);
  a.dilation = c.attrs.get_array<2>("dilations", {1, 1}, true);
  a.pads = c.attrs.get_array<4>("pads", {0, 0, 0, 0}, false);
  a.groups = c.attrs.get_int("group", 1);
  apply_auto_pad(c, x, a.kernel, a.stride, a.dilation, &a.pads);
  return a;
}

ir::PoolAttrs pool_attrs(const OpContext& c, bool average) {
  const ir::Shape& x = c.inputs[0].shape;
  BRAID_CHECK(x.size() == 4, kUnsupported, c.who(), ": only 2-D pooling is supported (input ",
              ir::to_string(x), ")");
  BRAID_CHECK(c.attrs.get_ints("kernel_shape"), kBad, c.who(), ": kernel_shape is required");
  ir::PoolAttrs a;
  a.kernel = c.attrs.get_array<2>("kernel_shape", {1, 1}, true);
  a.stride = c.attrs.get_array<2>("strides", {1, 1}, true);
  a.pads = c.attrs.get_array<4>("pads", {0, 0, 0, 0}, false);
  const auto dilation = c.attrs.get_array<2>("dilations", {1, 1}, true);
  BRAID_CHECK(dilation == (std::array<int64_t, 2>{1, 1}), kUnsupported, c.who(),
              ": pooling dilations other than 1 are not supported");
  BRAID_CHECK(c.attrs.get_int("storage_order", 0) == 0, kUnsupported, c.who(),
              ": storage_order=1 is not supported");
  a.ceil_mode = c.attrs.get_int("ceil_mode", 0) != 0;
  if (average) a.count_include_pad = c.attrs.get_int("count_include_pad", 0) != 0;
  apply_auto_pad(c, x, a.kernel, a.stride, dilation, &a.pads);
  return a;
}
ir::OpAttrs import_max_pool(const OpContext& c) {
  return pool_attrs(c, false);
}
ir::OpAttrs import_average_pool(const OpContext& c) {
  return pool_attrs(c, true);
}

ir::OpAttrs import_concat(const OpContext& c) {
  BRAID_CHECK(c.opset < 4 || c.attrs.find("axis", onnx::AttributeProto::INT), kBad, c.who(),
              ": Concat needs an axis");
  return ir::AxisAttrs{c.attrs.get_int("axis", 1)};
}

ir::OpAttrs import_flatten(const OpContext& c) {
  return ir::AxisAttrs{c.attrs.get_int("axis", 1)};
}

ir::OpAttrs import_softmax(const OpContext& c) {
  const int64_t rank = c.inputs[0].rank();
  if (c.opset >= 13) return ir::AxisAttrs{c.attrs.get_int("axis", -1)};
  // Before opset 13 Softmax normalizes over the flattened dims [axis, rank); that is the
  // per-axis softmax of opset 13 only when axis is the last dim. The graph walk imports the
  // other axes as Reshape-Softmax-Reshape (Importer::import_coerced_softmax).
  const int64_t axis = c.checked_axis(c.attrs.get_int("axis", 1), rank);
  BRAID_CHECK(axis == rank - 1, kUnsupported, c.who(), ": Softmax axis ", axis, " at opset ",
              c.opset, " normalizes over the flattened dims [", axis, ", ", rank,
              "); braid supports only the last axis there");
  return ir::AxisAttrs{axis};
}

ir::OpAttrs import_gemm(const OpContext& c) {
  return ir::GemmAttrs{c.attrs.get_float("alpha", 1.0f), c.attrs.get_float("beta", 1.0f),
                       c.attrs.get_int("transA", 0) != 0, c.attrs.get_int("transB", 0) != 0};
}

ir::OpAttrs import_batch_norm(const OpContext& c) {
  BRAID_CHECK(c.attrs.get_int("training_mode", 0) == 0, kUnsupported, c.who(),
              ": BatchNormalization in training mode is not supported");
  BRAID_CHECK(c.attrs.get_int("spatial", 1) == 1, kUnsupported, c.who(),
              ": BatchNormalization with spatial=0 is not supported");
  return ir::BatchNormAttrs{c.attrs.get_float("epsilon", 1e-5f)};
}

ir::OpAttrs import_layer_norm(const OpContext& c) {
  return ir::LayerNormAttrs{c.attrs.get_int("axis", -1), c.attrs.get_float("epsilon", 1e-5f)};
}

ir::OpAttrs import_reshape(const OpContext& c) {
  std::vector<int64_t> shape;
  if (c.opset < 5) {
    shape = c.attrs.get_ints("shape").value_or(std::vector<int64_t>{});
  } else {
    auto t = c.const_input(1, "shape", ir::DType::kInt64);
    BRAID_CHECK(t.has_value(), kBad, c.who(), ": Reshape needs a shape input");
    shape = t->ints;
  }
  const bool has_zero = std::find(shape.begin(), shape.end(), 0) != shape.end();
  BRAID_CHECK(c.attrs.get_int("allowzero", 0) == 0 || !has_zero, kUnsupported, c.who(),
              ": Reshape with allowzero=1 and a 0 in the shape is not supported");
  int64_t product = 1;
  for (int64_t d : c.attrs.bounded("shape", shape)) {
    BRAID_CHECK(product <= kMaxElements / std::max<int64_t>(d, 1), kBad, c.who(),
                ": Reshape to a shape too large");
    product *= std::max<int64_t>(d, 1);
  }
  return ir::ReshapeAttrs{shape};
}

ir::OpAttrs import_transpose(const OpContext& c) {
  return ir::TransposeAttrs{c.attrs.get_ints("perm").value_or(std::vector<int64_t>{})};
}

ir::OpAttrs import_split(const OpContext& c) {
  const ir::TensorType& x = c.inputs[0];
  ir::SplitAttrs a;
  a.axis = c.attrs.get_int("axis", 0);
  const int64_t axis = c.checked_axis(a.axis, x.rank());
  if (c.opset >= 13) {
    if (auto t = c.const_input(1, "split", ir::DType::kInt64))
      a.sizes = c.attrs.bounded("split", t->ints);
  } else if (auto s = c.attrs.get_ints("split")) {
    a.sizes = c.attrs.bounded("split", *s);
  }
  if (!a.sizes.empty()) return a;
  const int64_t parts = c.node.output_size(), dim = x.shape[axis];
  if (auto num = c.attrs.get_int("num_outputs", 0); num != 0)
    BRAID_CHECK(num == parts, kBad, c.who(), ": num_outputs=", num, " but ", parts, " outputs");
  BRAID_CHECK(parts >= 1, kBad, c.who(), ": Split has no outputs");
  // Opset 18: ceil(dim / parts) each, the last one smaller; before that, parts must divide dim.
  const int64_t chunk = c.opset >= 18 ? (dim + parts - 1) / parts : dim / parts;
  BRAID_CHECK(c.opset >= 18 || dim % parts == 0, kBad, c.who(), ": cannot split ", dim, " into ",
              parts, " equal parts");
  a.sizes.assign(parts, chunk);
  a.sizes.back() = dim - chunk * (parts - 1);
  return a;
}

ir::OpAttrs import_pad(const OpContext& c) {
  const ir::TensorType& x = c.inputs[0];
  const std::string mode = c.attrs.get_string("mode", "constant");
  BRAID_CHECK(mode == "constant", kUnsupported, c.who(), ": Pad mode '", mode,
              "' is not supported (only constant)");
  ir::PadAttrs a;
  if (c.opset < 11) {
    a.pads = c.attrs.bounded("pads", c.attrs.get_ints("pads").value_or(std::vector<int64_t>{}));
    a.value = c.attrs.get_float("value", 0.0f);
    return a;
  }
  auto pads = c.const_input(1, "pads", ir::DType::kInt64);
  BRAID_CHECK(pads.has_value(), kBad, c.who(), ": Pad needs a pads input");
  if (auto v = c.const_input(2, "constant_value", ir::DType::kFloat32)) {
    BRAID_CHECK(v->floats.size() == 1, kBad, c.who(), ": constant_value must hold one value");
    a.value = v->floats[0];
  }
  a.pads = c.attrs.bounded("pads", pads->ints);
  if (auto axes = c.const_input(3, "axes", ir::DType::kInt64)) {  // opset 18
    const int64_t r = x.rank(), na = static_cast<int64_t>(axes->ints.size());
    BRAID_CHECK(static_cast<int64_t>(pads->ints.size()) == 2 * na, kBad, c.who(), ": ",
                pads->ints.size(), " pads for ", na, " axes");
    a.pads.assign(2 * r, 0);
    for (int64_t j = 0; j < na; ++j) {
      const int64_t ax = c.checked_axis(axes->ints[j], r);
      a.pads[ax] = pads->ints[j];
      a.pads[r + ax] = pads->ints[na + j];
    }
  }
  return a;
}

ir::OpAttrs import_gelu(const OpContext& c) {
  const std::string approximate = c.attrs.get_string("approximate", "none");
  BRAID_CHECK(approximate == "none" || approximate == "tanh", kBad, c.who(), ": Gelu approximate='",
              approximate, "'");
  return ir::GeluAttrs{approximate == "tanh"};
}

// ---- Clip, HardSigmoid, HardSwish, ReduceMean, LRN (torchvision CNNs, ONNX zoo) ----
// Clip's bounds: attributes before opset 11, optional constant inputs from then on.
ir::OpAttrs import_clip(const OpContext& c) {
  ir::ClipAttrs a;
  if (c.opset < 11) {
    a.min = c.attrs.get_float("min", a.min);
    a.max = c.attrs.get_float("max", a.max);
    return a;
  }
  auto bound = [&](int k, std::string_view role, float fallback) {
    auto t = c.const_input(k, role, ir::DType::kFloat32);
    if (!t) return fallback;
    BRAID_CHECK(t->floats.size() == 1, kBad, c.who(), ": Clip ", role, " must hold one value, has ",
                t->floats.size());
    return t->floats[0];
  };
  a.min = bound(1, "min", a.min);
  a.max = bound(2, "max", a.max);
  return a;
}

ir::OpAttrs import_hard_sigmoid(const OpContext& c) {
  return ir::HardSigmoidAttrs{c.attrs.get_float("alpha", 0.2f), c.attrs.get_float("beta", 0.5f)};
}

// ReduceMean's axes: an attribute before opset 18, an optional constant input from then on.
ir::OpAttrs import_reduce_mean(const OpContext& c) {
  const ir::TensorType& x = c.inputs[0];
  ir::ReduceAttrs a;
  a.keepdims = c.attrs.get_int("keepdims", 1) != 0;
  std::vector<int64_t> axes;
  if (c.opset < 18) {
    axes = c.attrs.get_ints("axes").value_or(std::vector<int64_t>{});
  } else if (auto t = c.const_input(1, "axes", ir::DType::kInt64)) {
    axes = t->ints;
  }
  if (axes.empty()) {
    // Opset 18's noop_with_empty_axes makes "no axes" the identity; braid has no op for that.
    BRAID_CHECK(c.attrs.get_int("noop_with_empty_axes", 0) == 0, kUnsupported, c.who(),
                ": ReduceMean with noop_with_empty_axes=1 and no axes is not supported");
    for (int64_t d = 0; d < x.rank(); ++d) a.axes.push_back(d);
    return a;
  }
  for (int64_t axis : axes) a.axes.push_back(c.checked_axis(axis, x.rank()));
  std::sort(a.axes.begin(), a.axes.end());
  BRAID_CHECK(std::adjacent_find(a.axes.begin(), a.axes.end()) == a.axes.end(), kBad, c.who(),
              ": ReduceMean names an axis twice");
  return a;
}

ir::OpAttrs import_lrn(const OpContext& c) {
  const int64_t size = c.attrs.get_int("size", 0);
  BRAID_CHECK(size >= 1 && size <= kMaxSize, kBad, c.who(),
              ": LRN needs a positive size attribute, got ", size);
  return ir::LrnAttrs{size, c.attrs.get_float("alpha", 1e-4f), c.attrs.get_float("beta", 0.75f),
                      c.attrs.get_float("bias", 1.0f)};
}

// ---- Expand, Gather, Cast, Slice, Unsqueeze/Squeeze (BERT, ViT, GPT-2 on activations) ----
ir::OpAttrs import_expand(const OpContext& c) {
  auto t = c.const_input(1, "shape", ir::DType::kInt64);
  BRAID_CHECK(t.has_value(), kBad, c.who(), ": Expand needs a shape input");
  return ir::ExpandAttrs{c.attrs.bounded("shape", t->ints)};
}

// The indices are the node's second tensor operand (read at run time, e.g. BERT's token ids) or
// a constant (ViT's class-token select), then held in GatherAttrs; the graph walk passes one
// operand for a constant.
ir::OpAttrs import_gather(const OpContext& c) {
  ir::GatherAttrs a;
  a.axis = c.checked_axis(c.attrs.get_int("axis", 0), c.inputs[0].rank());
  BRAID_CHECK(c.node.input_size() == 2 && !c.node.input(1).empty(), kBad, c.who(),
              ": Gather needs data and indices");
  if (c.inputs.size() == 2) return a;
  const Constant* k = c.constants.find(c.node.input(1));
  BRAID_ASSERT(k != nullptr, "the walk passes one operand only for constant indices");
  Tensor t = read_constant(*k);
  BRAID_CHECK(t.dtype == ir::DType::kInt64 && t.elem_type != onnx::TensorProto::BOOL, kUnsupported,
              c.who(), ": indices '", c.node.input(1), "' are ", onnx_type_name(t.elem_type),
              "; braid takes int64 or int32 indices");
  a.indices = std::move(t.ints);
  a.indices_shape = t.shape;
  return a;
}

// A Cast to the type its input already has (float32 to FLOAT16 or back, as FP16 models cast
// their inputs and outputs, braid computing both as float32) is an Identity: a view, no copy.
std::vector<RewriteStep> import_cast(const OpContext& c) {
  const auto* to = c.attrs.find("to", onnx::AttributeProto::INT);
  BRAID_CHECK(to != nullptr, kBad, c.who(), ": Cast needs a 'to' attribute");
  std::optional<ir::DType> dtype = dtype_of_onnx(static_cast<int>(to->i()));
  BRAID_CHECK(
      dtype.has_value(), kUnsupported, c.who(), ": Cast to ",
      onnx_type_name(static_cast<int>(to->i())),
      "; braid casts to float32 (float16, bfloat16 computed as float32), int64 and bool only");
  if (*dtype == c.inputs[0].dtype) return {{OpKind::Identity, {}, {0}, "identity"}};
  return {{OpKind::Cast, ir::CastAttrs{*dtype}, {0}, "cast"}};
}

// Opset 10+ takes starts/ends/axes/steps as constant inputs, opset 1-9 as attributes. Ends
// like INT64_MAX ("to the end") stay as they are: ir::slice_dims clamps them.
ir::OpAttrs import_slice(const OpContext& c) {
  ir::SliceAttrs a;
  if (c.opset < 10) {
    a.starts = c.attrs.get_ints("starts").value_or(std::vector<int64_t>{});
    a.ends = c.attrs.get_ints("ends").value_or(std::vector<int64_t>{});
    a.axes = c.attrs.get_ints("axes").value_or(std::vector<int64_t>{});
    return a;
  }
  auto starts = c.const_input(1, "starts", ir::DType::kInt64);
  auto ends = c.const_input(2, "ends", ir::DType::kInt64);
  BRAID_CHECK(starts && ends, kBad, c.who(), ": Slice needs starts and ends");
  a.starts = std::move(starts->ints);
  a.ends = std::move(ends->ints);
  if (auto axes = c.const_input(3, "axes", ir::DType::kInt64)) a.axes = std::move(axes->ints);
  if (auto steps = c.const_input(4, "steps", ir::DType::kInt64))
    a.steps = c.attrs.bounded("steps", steps->ints);
  return a;
}

// Unsqueeze and Squeeze only relabel dims: a Reshape to the static result shape (axes from the
// attribute before opset 13, from a constant input after; Squeeze without axes drops every 1).
ir::OpAttrs squeeze_attrs(const OpContext& c, bool unsqueeze) {
  const ir::Shape& x = c.inputs[0].shape;
  std::optional<std::vector<int64_t>> axes;
  if (c.opset < 13) {
    axes = c.attrs.get_ints("axes");
  } else if (auto t = c.const_input(1, "axes", ir::DType::kInt64)) {
    axes = t->ints;
  }
  BRAID_CHECK(axes || !unsqueeze, kBad, c.who(), ": Unsqueeze needs axes");
  const int64_t out_rank =
      static_cast<int64_t>(x.size()) + (unsqueeze ? static_cast<int64_t>(axes->size()) : 0);
  std::vector<bool> listed(unsqueeze ? out_rank : x.size(), false);
  for (int64_t a : axes.value_or(std::vector<int64_t>{})) {
    const int64_t axis = c.checked_axis(a, static_cast<int64_t>(listed.size()));
    BRAID_CHECK(!listed[axis], kBad, c.who(), ": axis ", a, " repeats");
    listed[axis] = true;
  }
  ir::Shape shape;
  if (unsqueeze) {
    for (int64_t d = 0, k = 0; d < out_rank; ++d) shape.push_back(listed[d] ? 1 : x[k++]);
  } else {
    for (size_t d = 0; d < x.size(); ++d) {
      const bool drop = axes ? listed[d] : x[d] == 1;
      BRAID_CHECK(!drop || x[d] == 1, kBad, c.who(), ": cannot squeeze dim ", d, " of size ", x[d]);
      if (!drop) shape.push_back(x[d]);
    }
  }
  return ir::ReshapeAttrs{shape};
}
ir::OpAttrs import_unsqueeze(const OpContext& c) {
  return squeeze_attrs(c, true);
}
ir::OpAttrs import_squeeze(const OpContext& c) {
  return squeeze_attrs(c, false);
}

// Einsum-12 in the form attention exporters write (MaxViT): Transposes and a MatMul.
std::vector<RewriteStep> import_einsum(const OpContext& c) {
  const auto* equation = c.attrs.find("equation", onnx::AttributeProto::STRING);
  BRAID_CHECK(equation != nullptr, kBad, c.who(), ": Einsum needs an equation");
  const EinsumMatMul e = parse_einsum_matmul(equation->s(), c.who());
  BRAID_CHECK(c.inputs.size() == 2, kBad, c.who(), ": Einsum equation '", equation->s(),
              "' names 2 operands, the node has ", c.inputs.size());
  return einsum_matmul_steps(e, c.inputs[0].shape, c.inputs[1].shape, c.who());
}

constexpr auto kAlias = OnnxOpRole::kAlias;
constexpr auto kConstant = OnnxOpRole::kConstant;
constexpr auto kKernel = OnnxOpRole::kKernel;
constexpr auto kReshape = OnnxOpRole::kReshape;
constexpr auto kRewrite = OnnxOpRole::kRewrite;
constexpr int kAll = INT_MAX;

// Every ONNX op type braid imports. Columns: op type, first opset, role, attributes,
// max tensor operands, one output per ONNX output, import function.
const std::vector<OnnxOp> kOps = {
    {"Conv",
     1,
     kKernel,
     {"kernel_shape", "strides", "dilations", "pads", "group", "auto_pad"},
     kAll,
     false,
     import_conv},
    {"Relu", 1, kKernel, {}},
    {"Sigmoid", 1, kKernel, {}},
    {"Tanh", 1, kKernel, {}},
    {"Gelu", 20, kKernel, {"approximate"}, kAll, false, import_gelu},
    {"Clip", 6, kKernel, {"min", "max"}, 1, false, import_clip},
    {"HardSigmoid", 6, kKernel, {"alpha", "beta"}, kAll, false, import_hard_sigmoid},
    {"HardSwish", 14, kKernel, {}},
    {"ReduceMean",
     1,
     kKernel,
     {"axes", "keepdims", "noop_with_empty_axes"},
     1,
     false,
     import_reduce_mean},
    {"LRN", 1, kKernel, {"alpha", "beta", "bias", "size"}, kAll, false, import_lrn},
    {"MaxPool",
     1,
     kKernel,
     {"kernel_shape", "strides", "pads", "auto_pad", "ceil_mode", "dilations", "storage_order"},
     kAll,
     false,
     import_max_pool},
    {"AveragePool",
     1,
     kKernel,
     {"kernel_shape", "strides", "pads", "auto_pad", "ceil_mode", "dilations", "count_include_pad"},
     kAll,
     false,
     import_average_pool},
    {"GlobalAveragePool", 1, kKernel, {}},
    {"Concat", 1, kKernel, {"axis"}, kAll, false, import_concat},
    {"Add", 1, kKernel, {}},
    {"Mul", 1, kKernel, {}},
    {"Sum", 1, kKernel, {}},
    {"MatMul", 1, kKernel, {}},
    {"Gemm",
     1,
     kKernel,
     {"alpha", "beta", "transA", "transB", "broadcast"},
     kAll,
     false,
     import_gemm},
    {"BatchNormalization",
     1,
     kKernel,
     {"epsilon", "momentum", "training_mode", "spatial", "is_test", "consumed_inputs"},
     kAll,
     false,
     import_batch_norm},
    {"Softmax", 1, kKernel, {"axis"}, kAll, false, import_softmax},
    {"LayerNormalization",
     17,
     kKernel,
     {"axis", "epsilon", "stash_type"},
     kAll,
     false,
     import_layer_norm},
    {"Reshape", 1, kKernel, {"shape", "allowzero"}, 1, false, import_reshape},
    {"Flatten", 1, kKernel, {"axis"}, kAll, false, import_flatten},
    {"Transpose", 1, kKernel, {"perm"}, kAll, false, import_transpose},
    {"Split", 2, kKernel, {"axis", "split", "num_outputs"}, 1, true, import_split},
    {"Identity", 1, kKernel, {}},
    {"Pad", 2, kKernel, {"mode", "pads", "value"}, 1, false, import_pad},
    {"Erf", 9, kKernel, {}},
    {"Sub", 1, kKernel, {}},
    {"Div", 1, kKernel, {}},
    {"Pow", 1, kKernel, {}},
    {"Sqrt", 1, kKernel, {}},
    {"Where", 9, kKernel, {}},
    {"Equal", 1, kKernel, {}},
    {"Not", 1, kKernel, {}},
    {"Expand", 8, kKernel, {}, 1, false, import_expand},
    // Two operands when the indices are computed at run time, one when they are a constant.
    {"Gather", 1, kKernel, {"axis"}, kAll, false, import_gather},
    {"Cast",
     6,
     kRewrite,
     {"to", "saturate"},
     kAll,
     false,
     nullptr,
     import_cast,
     {OpKind::Identity, OpKind::Cast}},
    {"Slice", 1, kKernel, {"starts", "ends", "axes"}, 1, false, import_slice},
    {"Unsqueeze", 1, kReshape, {"axes"}, 1, false, import_unsqueeze},
    {"Squeeze", 1, kReshape, {"axes"}, 1, false, import_squeeze},
    {"Einsum",
     12,
     kRewrite,
     {"equation"},
     kAll,
     false,
     nullptr,
     import_einsum,
     {OpKind::Transpose, OpKind::MatMul}},
    {"ConvTranspose",
     1,
     kKernel,
     {"kernel_shape", "strides", "dilations", "pads", "group", "auto_pad", "output_padding",
      "output_shape"},
     3,
     false,
     import_conv_transpose},
    {"Resize",
     10,
     kKernel,
     {"mode", "coordinate_transformation_mode", "nearest_mode", "cubic_coeff_a", "exclude_outside",
      "extrapolation_value", "antialias", "axes", "keep_aspect_ratio_policy"},
     1,
     false,
     import_resize},
    {"Upsample",
     7,
     kRewrite,
     {"mode", "scales"},
     1,
     false,
     nullptr,
     import_upsample,
     {OpKind::Resize}},
    {"Dropout", 1, kAlias, {"ratio", "seed", "is_test"}},
    {"Constant", 1, kConstant, {"value", "value_float", "value_floats", "value_int", "value_ints"}},
};

}  // namespace

std::optional<Tensor> OpContext::const_input(int k, std::string_view role, ir::DType dtype) const {
  if (k >= node.input_size() || node.input(k).empty()) return std::nullopt;
  const Constant* c = constants.find(node.input(k));
  BRAID_CHECK(c != nullptr, kUnsupported, who(), ": ", role, " input '", node.input(k),
              "' must be a constant (initializer or Constant node)");
  Tensor t = read_constant(*c);
  BRAID_CHECK(t.dtype == dtype && t.shape.size() <= 1, kBad, who(), ": ", role, " input '",
              node.input(k), "' must be a ", ir::to_string(dtype), " scalar or 1-D tensor");
  return t;
}

int64_t OpContext::checked_axis(int64_t axis, int64_t rank) const {
  BRAID_CHECK(axis >= -rank && axis < rank, kBad, who(), ": axis ", axis, " out of range for rank ",
              rank);
  return axis < 0 ? axis + rank : axis;
}

std::span<const OnnxOp> onnx_ops() {
  return kOps;
}

const OnnxOp* find_onnx_op(std::string_view op_type) {
  for (const OnnxOp& op : kOps)
    if (op.op_type == op_type) return &op;
  return nullptr;
}

}  // namespace braid::models::onnx_detail

namespace braid::models {

std::vector<SupportedOnnxOp> supported_onnx_ops() {
  std::vector<SupportedOnnxOp> out;
  auto entry = [&out](std::string_view type, int since) -> SupportedOnnxOp& {
    for (SupportedOnnxOp& op : out)
      if (op.op_type == type) {
        op.min_opset = std::min(op.min_opset, since);
        return op;
      }
    out.push_back({std::string(type), since, kMaxOnnxOpset, false, false});
    return out.back();
  };
  for (const onnx_detail::OnnxOp& op : onnx_detail::onnx_ops()) {
    SupportedOnnxOp& e = entry(op.op_type, op.since_opset);
    e.runs = true;
    switch (op.role) {
      case onnx_detail::OnnxOpRole::kKernel:
        e.kinds = {*ir::op_kind_from_onnx(op.op_type)};
        break;
      case onnx_detail::OnnxOpRole::kAlias:
        e.kinds = {ir::OpKind::Identity};
        break;
      case onnx_detail::OnnxOpRole::kReshape:
        e.kinds = {ir::OpKind::Reshape};
        break;
      case onnx_detail::OnnxOpRole::kConstant:
        break;
      case onnx_detail::OnnxOpRole::kRewrite:
        e.kinds = op.rewrite_kinds;
        break;
    }
  }
  for (const onnx_detail::FoldableOp& op : onnx_detail::foldable_ops())
    entry(op.op_type, op.since_opset).folds = true;
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return a.op_type < b.op_type; });
  return out;
}

}  // namespace braid::models
