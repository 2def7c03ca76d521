#include "models/onnx_export.h"

#include <onnx/onnx_pb.h>

#include <bit>
#include <climits>
#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <unordered_set>

#include "base/error.h"
#include "models/onnx_tensor.h"

namespace braid::models {
namespace {

using ir::OpKind;

static_assert(std::endian::native == std::endian::little,
              "ONNX raw_data is little-endian; a big-endian host would need byte swaps");

constexpr int64_t kOpset = 17;
constexpr int64_t kIrVersion = 8;
constexpr int64_t kGeluOpset = 20;  // Gelu joined the default domain at opset 20
constexpr int64_t kGeluIrVersion = 9;
constexpr int64_t kResize19Opset = 19;  // Resize's antialias (18) and half_pixel_symmetric (19)

void set_value_info(onnx::ValueInfoProto* vi, const std::string& name, const ir::TensorType& t) {
  vi->set_name(name);
  auto* tensor = vi->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(onnx_detail::onnx_type_of(t.dtype));
  auto* shape = tensor->mutable_shape();
  for (int64_t d : t.shape) shape->add_dim()->set_dim_value(d);
}

void add_ints(onnx::NodeProto* n, const char* name, std::span<const int64_t> values) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) a->add_ints(v);
}

void add_int(onnx::NodeProto* n, const char* name, int64_t value) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(value);
}

void add_float(onnx::NodeProto* n, const char* name, float value) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(value);
}

void add_string(onnx::NodeProto* n, const char* name, const std::string& value) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(value);
}

// Writes one graph; owns the set of names in use so generated ones (Conv pre-activations,
// shape constants) never collide with braid's.
class Exporter {
 public:
  Exporter(const ir::Graph& g, const ir::Weights& w) : g_(g), w_(w) {
    for (const ir::Value& v : g.values()) used_values_.insert(v.name);
    for (const ir::Node& n : g.nodes()) used_nodes_.insert(n.name);
  }

  onnx::ModelProto run() {
    w_.check_complete(g_);
    bool has_gelu = false, resize_19 = false;
    for (const ir::Node& n : g_.nodes()) {
      const auto* conv = std::get_if<ir::ConvAttrs>(&n.attrs);
      has_gelu |= n.kind == OpKind::Gelu || (conv && conv->activation == ir::Activation::kGelu);
      const auto* resize = std::get_if<ir::ResizeAttrs>(&n.attrs);
      resize_19 |=
          resize != nullptr &&
          (resize->antialias || resize->coordinates == ir::ResizeCoordinates::kHalfPixelSymmetric);
    }
    onnx::ModelProto m;
    m.set_ir_version(has_gelu || resize_19 ? kGeluIrVersion : kIrVersion);
    m.set_producer_name("braid");
    auto* opset = m.add_opset_import();
    opset->set_domain("");
    opset_ = has_gelu ? kGeluOpset : resize_19 ? kResize19Opset : kOpset;
    opset->set_version(opset_);
    graph_ = m.mutable_graph();
    graph_->set_name(g_.name().empty() ? "braid" : g_.name());

    for (ValueId v : g_.inputs())
      set_value_info(graph_->add_input(), g_.value(v).name, g_.value(v).type);
    for (ValueId p : g_.parameters()) add_parameter(p);
    for (const ir::Node& n : g_.nodes()) add_node(n);
    for (ValueId v : g_.outputs())
      set_value_info(graph_->add_output(), g_.value(v).name, g_.value(v).type);
    for (const ir::Value& v : g_.values())
      if (v.kind == ir::ValueKind::kActivation && !g_.is_output(value_id(v)))
        set_value_info(graph_->add_value_info(), v.name, v.type);

    if (!g_.unit_hints().empty()) {
      nlohmann::json hints = nlohmann::json::array();
      for (const auto& hint : g_.unit_hints()) {
        nlohmann::json names = nlohmann::json::array();
        for (NodeId n : hint) names.push_back(g_.node(n).name);
        hints.push_back(std::move(names));
      }
      add_metadata(m, "braid.unit_hints", hints.dump());
    }
    if (!fused_.empty()) add_metadata(m, "braid.fused_activations", nlohmann::json(fused_).dump());
    return m;
  }

 private:
  ValueId value_id(const ir::Value& v) const {
    return make_id<ValueId>(static_cast<size_t>(&v - g_.values().data()));
  }

  static void add_metadata(onnx::ModelProto& m, const char* key, const std::string& value) {
    auto* e = m.add_metadata_props();
    e->set_key(key);
    e->set_value(value);
  }

  std::string fresh(std::unordered_set<std::string>& used, const std::string& base) {
    std::string name = base;
    for (int i = 1; !used.insert(name).second; ++i) name = base + "_" + std::to_string(i);
    return name;
  }

  void add_parameter(ValueId p) {
    const ir::Value& v = g_.value(p);
    BRAID_CHECK(v.type.dtype == ir::DType::kFloat32, ErrorCode::kUnsupported, "parameter '", v.name,
                "' is ", ir::to_string(v.type.dtype), "; braid's weights are float32");
    onnx::TensorProto* t = graph_->add_initializer();
    t->set_name(v.name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : v.type.shape) t->add_dims(d);
    std::span<const float> data = w_.data(p);
    t->mutable_raw_data()->assign(reinterpret_cast<const char*>(data.data()), data.size_bytes());
  }

  // An int64 initializer for an attribute that ONNX takes as an input; returns its name.
  // `shape` defaults to 1-D.
  std::string add_int64_constant(const std::string& base, std::span<const int64_t> values,
                                 std::optional<std::span<const int64_t>> shape = std::nullopt) {
    onnx::TensorProto* t = graph_->add_initializer();
    t->set_name(fresh(used_values_, base));
    t->set_data_type(onnx::TensorProto::INT64);
    if (shape) {
      for (int64_t d : *shape) t->add_dims(d);
    } else {
      t->add_dims(static_cast<int64_t>(values.size()));
    }
    t->mutable_raw_data()->assign(reinterpret_cast<const char*>(values.data()),
                                  values.size() * sizeof(int64_t));
    return t->name();
  }

  std::string add_float_scalar(const std::string& base, float value) {
    onnx::TensorProto* t = graph_->add_initializer();
    t->set_name(fresh(used_values_, base));
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_float_data(value);
    return t->name();
  }

  std::string add_float_constant(const std::string& base, const std::vector<float>& values) {
    onnx::TensorProto* t = graph_->add_initializer();
    t->set_name(fresh(used_values_, base));
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_dims(static_cast<int64_t>(values.size()));
    for (float v : values) t->add_float_data(v);
    return t->name();
  }

  // Resize at opset 17 (19 for antialias and half_pixel_symmetric): sizes when every scale is
  // output / input, else scales (floor(scale * in) gives the sizes back, checked).
  void add_resize(onnx::NodeProto* n, const ir::Node& node) {
    const auto& a = std::get<ir::ResizeAttrs>(node.attrs);
    const ir::Shape& x = g_.value(node.inputs[0]).type.shape;
    const std::string who = "node '" + node.name + "' (Resize)";
    add_string(n, "mode", std::string(ir::to_string(a.mode)));
    ir::ResizeCoordinates coordinates = a.coordinates;
    BRAID_CHECK(coordinates != ir::ResizeCoordinates::kTfHalfPixelForNn, ErrorCode::kUnsupported,
                who, ": tf_half_pixel_for_nn has no form after opset 12");
    add_string(n, "coordinate_transformation_mode", std::string(ir::to_string(coordinates)));
    ir::NearestRounding nearest = a.nearest;
    if (nearest == ir::NearestRounding::kSimple) {  // Resize-10's rule, as floor or ceil
      const bool down =
          std::all_of(a.scales.begin(), a.scales.end(), [](double s) { return s < 1; });
      const bool up =
          std::all_of(a.scales.begin(), a.scales.end(), [](double s) { return s >= 1; });
      BRAID_CHECK(down || up, ErrorCode::kUnsupported, who,
                  ": nearest rounding of opset 10 on an up- and downscale has no later form");
      nearest = down ? ir::NearestRounding::kCeil : ir::NearestRounding::kFloor;
    }
    add_string(n, "nearest_mode", std::string(ir::to_string(nearest)));
    add_float(n, "cubic_coeff_a", a.cubic_coeff_a);
    add_int(n, "exclude_outside", a.exclude_outside ? 1 : 0);
    add_float(n, "extrapolation_value", a.extrapolation_value);
    if (a.antialias) add_int(n, "antialias", 1);
    std::vector<float> roi(a.roi.begin(), a.roi.end());
    n->add_input(roi.empty() ? std::string() : add_float_constant(node.name + ".roi", roi));
    bool by_sizes = true;
    for (size_t k = 0; k < x.size(); ++k)
      by_sizes &= a.scales[k] == static_cast<double>(a.sizes[k]) / static_cast<double>(x[k]);
    if (by_sizes) {
      n->add_input("");
      n->add_input(add_int64_constant(node.name + ".sizes", a.sizes));
      return;
    }
    std::vector<float> scales(a.scales.begin(), a.scales.end());
    for (size_t k = 0; k < x.size(); ++k)
      BRAID_CHECK(static_cast<int64_t>(static_cast<double>(scales[k]) *
                                       static_cast<double>(x[k])) == a.sizes[k],
                  ErrorCode::kUnsupported, who, ": scale ", a.scales[k], " of dim ", k,
                  " does not give its size ", a.sizes[k], " as a float");
    n->add_input(add_float_constant(node.name + ".scales", scales));
  }

  onnx::NodeProto* new_node(const std::string& name, std::string_view op_type) {
    onnx::NodeProto* n = graph_->add_node();
    n->set_name(name);
    n->set_op_type(std::string(op_type));
    return n;
  }

  void add_node(const ir::Node& node) {
    onnx::NodeProto* n = new_node(node.name, ir::to_onnx_name(node.kind));
    for (ValueId v : node.inputs) n->add_input(g_.value(v).name);
    for (ValueId v : node.outputs) n->add_output(g_.value(v).name);
    switch (node.kind) {
      case OpKind::Conv: {
        const auto& a = std::get<ir::ConvAttrs>(node.attrs);
        add_ints(n, "kernel_shape", a.kernel);
        add_ints(n, "strides", a.stride);
        add_ints(n, "dilations", a.dilation);
        add_ints(n, "pads", a.pads);
        add_int(n, "group", a.groups);
        if (std::optional<OpKind> act = ir::activation_op(a.activation)) {
          // Conv writes a fresh pre-activation value; the activation node writes braid's output.
          const std::string out = g_.value(node.outputs[0]).name;
          const std::string pre = fresh(used_values_, out + ".preact");
          n->set_output(0, pre);
          const std::string act_name =
              fresh(used_nodes_, node.name + "." + std::string(ir::to_string(a.activation)));
          onnx::NodeProto* an = new_node(act_name, ir::to_onnx_name(*act));
          an->add_input(pre);
          an->add_output(out);
          fused_.push_back(act_name);
          auto* vi = graph_->add_value_info();
          set_value_info(vi, pre, g_.value(node.outputs[0]).type);
        }
        break;
      }
      case OpKind::MaxPool:
      case OpKind::AveragePool: {
        const auto& a = std::get<ir::PoolAttrs>(node.attrs);
        add_ints(n, "kernel_shape", a.kernel);
        add_ints(n, "strides", a.stride);
        add_ints(n, "pads", a.pads);
        add_int(n, "ceil_mode", a.ceil_mode ? 1 : 0);
        if (node.kind == OpKind::AveragePool)
          add_int(n, "count_include_pad", a.count_include_pad ? 1 : 0);
        break;
      }
      case OpKind::Concat:
      case OpKind::Softmax:
      case OpKind::Flatten:
        add_int(n, "axis", std::get<ir::AxisAttrs>(node.attrs).axis);
        break;
      case OpKind::Gemm: {
        const auto& a = std::get<ir::GemmAttrs>(node.attrs);
        add_float(n, "alpha", a.alpha);
        add_float(n, "beta", a.beta);
        add_int(n, "transA", a.trans_a ? 1 : 0);
        add_int(n, "transB", a.trans_b ? 1 : 0);
        break;
      }
      case OpKind::BatchNormalization:
        add_float(n, "epsilon", std::get<ir::BatchNormAttrs>(node.attrs).epsilon);
        break;
      case OpKind::LayerNormalization: {
        const auto& a = std::get<ir::LayerNormAttrs>(node.attrs);
        add_int(n, "axis", a.axis);
        add_float(n, "epsilon", a.epsilon);
        break;
      }
      case OpKind::Reshape:
        n->add_input(
            add_int64_constant(node.name + ".shape", std::get<ir::ReshapeAttrs>(node.attrs).shape));
        break;
      case OpKind::Transpose: {
        const auto& perm = std::get<ir::TransposeAttrs>(node.attrs).perm;
        if (!perm.empty()) add_ints(n, "perm", perm);
        break;
      }
      case OpKind::Split: {
        const auto& a = std::get<ir::SplitAttrs>(node.attrs);
        add_int(n, "axis", a.axis);
        n->add_input(add_int64_constant(node.name + ".split", a.sizes));
        break;
      }
      case OpKind::Pad: {
        const auto& a = std::get<ir::PadAttrs>(node.attrs);
        add_string(n, "mode", "constant");
        n->add_input(add_int64_constant(node.name + ".pads", a.pads));
        if (a.value != 0.0f) n->add_input(add_float_scalar(node.name + ".value", a.value));
        break;
      }
      case OpKind::Gelu:
        add_string(n, "approximate",
                   std::get<ir::GeluAttrs>(node.attrs).tanh_approximation ? "tanh" : "none");
        break;
      case OpKind::Clip: {  // opset 17: bounds are inputs; infinite ones are left out
        const auto& a = std::get<ir::ClipAttrs>(node.attrs);
        const bool has_min = !std::isinf(a.min), has_max = !std::isinf(a.max);
        if (has_min || has_max)
          n->add_input(has_min ? add_float_scalar(node.name + ".min", a.min) : "");
        if (has_max) n->add_input(add_float_scalar(node.name + ".max", a.max));
        break;
      }
      case OpKind::HardSigmoid: {
        const auto& a = std::get<ir::HardSigmoidAttrs>(node.attrs);
        add_float(n, "alpha", a.alpha);
        add_float(n, "beta", a.beta);
        break;
      }
      case OpKind::ReduceMean: {  // axes: an attribute up to opset 17, an input from 18
        const auto& a = std::get<ir::ReduceAttrs>(node.attrs);
        if (opset_ >= 18)
          n->add_input(add_int64_constant(node.name + ".axes", a.axes));
        else
          add_ints(n, "axes", a.axes);
        add_int(n, "keepdims", a.keepdims ? 1 : 0);
        break;
      }
      case OpKind::LRN: {
        const auto& a = std::get<ir::LrnAttrs>(node.attrs);
        add_int(n, "size", a.size);
        add_float(n, "alpha", a.alpha);
        add_float(n, "beta", a.beta);
        add_float(n, "bias", a.bias);
        break;
      }
      case OpKind::HardSwish:
      case OpKind::Relu:
      case OpKind::Sigmoid:
      case OpKind::Tanh:
      case OpKind::GlobalAveragePool:
      case OpKind::Add:
      case OpKind::Mul:
      case OpKind::Sum:
      case OpKind::MatMul:
      case OpKind::Identity:
        break;
      case OpKind::Erf:
      case OpKind::Sub:
      case OpKind::Div:
      case OpKind::Pow:
      case OpKind::Sqrt:
      case OpKind::Where:
      case OpKind::Equal:
      case OpKind::Not:
        break;
      case OpKind::Expand:
        n->add_input(
            add_int64_constant(node.name + ".shape", std::get<ir::ExpandAttrs>(node.attrs).shape));
        break;
      case OpKind::Gather: {
        const auto& a = std::get<ir::GatherAttrs>(node.attrs);
        add_int(n, "axis", a.axis);
        if (node.inputs.size() == 1)
          n->add_input(add_int64_constant(node.name + ".indices", a.indices, a.indices_shape));
        break;
      }
      case OpKind::Cast:
        add_int(n, "to", onnx_detail::onnx_type_of(std::get<ir::CastAttrs>(node.attrs).to));
        break;
      case OpKind::ConvTranspose: {
        const auto& a = std::get<ir::ConvTransposeAttrs>(node.attrs);
        add_ints(n, "kernel_shape", a.kernel);
        add_ints(n, "strides", a.stride);
        add_ints(n, "dilations", a.dilation);
        add_int(n, "group", a.groups);
        if (a.output_padding != std::array<int64_t, 2>{0, 0})
          add_ints(n, "output_padding", a.output_padding);
        if (a.pads[2] >= 0 && a.pads[3] >= 0) {
          add_ints(n, "pads", a.pads);
        } else {  // an output past the natural size: output_shape, begin pads 0 (the importer's)
          BRAID_CHECK(a.pads[0] == 0 && a.pads[1] == 0, ErrorCode::kUnsupported, "node '",
                      node.name, "' (ConvTranspose): negative end pads after begin pads");
          const ir::Shape& y = g_.value(node.outputs[0]).type.shape;
          add_ints(n, "output_shape", std::vector<int64_t>{y[2], y[3]});
        }
        break;
      }
      case OpKind::Resize:
        add_resize(n, node);
        break;
      case OpKind::Slice: {
        const auto& a = std::get<ir::SliceAttrs>(node.attrs);
        n->add_input(add_int64_constant(node.name + ".starts", a.starts));
        n->add_input(add_int64_constant(node.name + ".ends", a.ends));
        if (!a.axes.empty() || !a.steps.empty()) {
          std::vector<int64_t> axes = a.axes;
          if (axes.empty())
            for (size_t k = 0; k < a.starts.size(); ++k) axes.push_back(static_cast<int64_t>(k));
          n->add_input(add_int64_constant(node.name + ".axes", axes));
        }
        if (!a.steps.empty()) n->add_input(add_int64_constant(node.name + ".steps", a.steps));
        break;
      }
    }
  }

  const ir::Graph& g_;
  const ir::Weights& w_;
  onnx::GraphProto* graph_ = nullptr;
  int64_t opset_ = kOpset;
  std::unordered_set<std::string> used_values_, used_nodes_;
  std::vector<std::string> fused_;
};

// Serializing straight to the file saves a copy of the weights (models of hundreds of MB).
onnx::ModelProto to_model(const ir::Graph& graph, const ir::Weights& weights) {
  onnx::ModelProto m = Exporter(graph, weights).run();
  const size_t size = m.ByteSizeLong();
  BRAID_CHECK(size <= static_cast<size_t>(INT_MAX), ErrorCode::kUnsupported, "graph '",
              graph.name(), "': the ONNX model would take ", size,
              " bytes; protobuf limits a model without external data to 2 GiB");
  return m;
}

}  // namespace

std::string export_onnx_bytes(const ir::Graph& graph, const ir::Weights& weights) {
  std::string bytes;
  BRAID_CHECK(to_model(graph, weights).SerializeToString(&bytes), ErrorCode::kInternal, "graph '",
              graph.name(), "': protobuf serialization failed");
  return bytes;
}

void export_onnx_file(const ir::Graph& graph, const ir::Weights& weights, const std::string& path) {
  onnx::ModelProto m = to_model(graph, weights);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  BRAID_CHECK(f.good(), ErrorCode::kInvalidArgument, path, ": cannot open for writing");
  BRAID_CHECK(m.SerializeToOstream(&f), ErrorCode::kInvalidArgument, path, ": write failed");
  f.close();
  BRAID_CHECK(f.good(), ErrorCode::kInvalidArgument, path, ": write failed");
}

}  // namespace braid::models
