#include "models/onnx_shape_check.h"

#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include "base/error.h"
#include "models/onnx_tensor.h"

namespace braid::models::onnx_detail {
namespace {

// Float initializers up to this size keep their data in the copy given to ONNX shape inference.
constexpr int64_t kSmallConstant = 64;

std::string shape_string(const onnx::TensorShapeProto& s) {
  std::string out = "[";
  for (int i = 0; i < s.dim_size(); ++i) {
    if (i > 0) out += ",";
    const auto& d = s.dim(i);
    out += d.has_dim_value()   ? std::to_string(d.dim_value())
           : d.has_dim_param() ? d.dim_param()
                               : "?";
  }
  return out + "]";
}

}  // namespace

DeclaredShapes declared_shapes(const onnx::GraphProto& g) {
  DeclaredShapes known;
  for (const auto& vi : g.value_info()) known[vi.name()] = &vi;
  for (const auto& vi : g.output()) known[vi.name()] = &vi;
  return known;
}

onnx::ModelProto infer_onnx_shapes(const onnx::ModelProto& model, const ir::Graph& graph) {
  const onnx::GraphProto& src = model.graph();
  onnx::ModelProto copy;
  copy.set_ir_version(model.ir_version());
  copy.mutable_opset_import()->CopyFrom(model.opset_import());
  onnx::GraphProto* g = copy.mutable_graph();
  g->mutable_node()->CopyFrom(src.node());
  // Debian's libonnx (1.12) predates Resize-18's keep_aspect_ratio_policy and infers such a
  // Resize as if stretched: leave it (and so what reads it) out of the cross-check.
  for (int i = g->node_size() - 1; i >= 0; --i) {
    const onnx::NodeProto& n = g->node(i);
    if (n.op_type() != "Resize") continue;
    for (const auto& a : n.attribute())
      if (a.name() == "keep_aspect_ratio_policy" && a.s() != "stretch") {
        g->mutable_node()->DeleteSubrange(i, 1);
        break;
      }
  }
  for (ValueId v : graph.inputs()) {
    const ir::Value& in = graph.value(v);
    auto* t = g->add_input();
    t->set_name(in.name);
    auto* tt = t->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx_type_of(in.type.dtype));
    for (int64_t d : in.type.shape) tt->mutable_shape()->add_dim()->set_dim_value(d);
  }
  for (const auto& out : src.output()) g->add_output()->set_name(out.name());
  for (const onnx::TensorProto& t : src.initializer()) {
    const bool is_float = widened(t.data_type()) == onnx::TensorProto::FLOAT;
    if (!is_float && t.data_type() != onnx::TensorProto::INT64) continue;
    int64_t n = 1;
    for (int64_t d : t.dims()) n = d >= 0 && (d == 0 || n <= kMaxElements / d) ? n * d : -1;
    if (n < 0) continue;
    onnx::TensorProto* c = g->add_initializer();
    if (!is_float || n <= kSmallConstant) {
      c->CopyFrom(t);
    } else {
      c->set_name(t.name());
      c->set_data_type(t.data_type());
      c->mutable_dims()->CopyFrom(t.dims());
    }
  }
  try {
    onnx::ShapeInferenceOptions opts(/*check_type=*/false, /*error_mode=*/0, /*data_prop=*/true);
    onnx::shape_inference::InferShapes(copy, onnx::OpSchemaRegistry::Instance(), opts);
  } catch (const std::exception&) {
    // Non-strict: what was inferred before the failure remains.
  }
  return copy;
}

// One known divergence: with ceil_mode, ONNX's shape inference keeps a last pooling window that
// starts in the end padding, which ONNX Runtime and PyTorch drop (onnx/onnx#5711). Such a pool's
// output, and whatever ONNX derived from it, is not compared.
void check_shapes(const ir::Graph& graph, const DeclaredShapes& known, std::string_view source) {
  std::vector<bool> diverged(graph.num_values(), false);
  for (const ir::Node& node : graph.nodes()) {
    const auto* pool = std::get_if<ir::PoolAttrs>(&node.attrs);
    bool excused = pool && pool->ceil_mode;
    for (ValueId v : node.inputs) excused = excused || diverged[index(v)];
    for (ValueId v : node.outputs) {
      const ir::Value& val = graph.value(v);
      auto it = known.find(val.name);
      if (it == known.end() || !it->second->type().has_tensor_type() ||
          !it->second->type().tensor_type().has_shape())
        continue;
      const auto& s = it->second->type().tensor_type().shape();
      bool same = s.dim_size() == val.type.rank();
      for (int k = 0; same && k < s.dim_size(); ++k)
        same = !s.dim(k).has_dim_value() || s.dim(k).dim_value() <= 0 ||
               s.dim(k).dim_value() == val.type.shape[k];
      if (same) continue;
      BRAID_CHECK(excused, ErrorCode::kInvalidModel, "node '", node.name,
                  "': shape mismatch: output '", val.name, "' is ", ir::to_string(val.type.shape),
                  " but ", source, " ", shape_string(s));
      diverged[index(v)] = true;
    }
  }
}

}  // namespace braid::models::onnx_detail
