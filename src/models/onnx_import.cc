#include "models/onnx_import.h"

#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <bit>
#include <climits>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numbers>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "base/error.h"
#include "ir/unit_graph.h"

namespace braid::models {
namespace {

using ir::OpKind;
constexpr auto kBad = ErrorCode::kInvalidModel;
constexpr auto kUnsupported = ErrorCode::kUnsupported;
// Larger constants cannot come from a model under protobuf's 2 GiB limit; the bound keeps
// element counts far from int64 overflow.
constexpr int64_t kMaxElements = int64_t{1} << 40;
// Bound on sizes given by attributes and int64 constants (windows, pads, shapes), so that
// braid's shape arithmetic on them cannot overflow.
constexpr int64_t kMaxSize = int64_t{1} << 32;
// Float initializers up to this size keep their data in the copy given to ONNX shape inference.
constexpr int64_t kSmallConstant = 64;

static_assert(std::endian::native == std::endian::little, "ONNX raw_data is little-endian");

std::string onnx_type_name(int t) {
  return onnx::TensorProto_DataType_IsValid(t)
             ? onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(t))
             : "#" + std::to_string(t);
}

// A constant read from an initializer or a Constant node.
struct Tensor {
  ir::DType dtype = ir::DType::kFloat32;
  ir::Shape shape;
  std::vector<float> floats;
  std::vector<int64_t> ints;
};

template <typename T, typename Field>
std::vector<T> read_payload(const onnx::TensorProto& t, const Field& typed, int64_t n,
                            const std::string& what) {
  std::vector<T> out;
  if (t.has_raw_data()) {
    BRAID_CHECK(t.raw_data().size() == static_cast<size_t>(n) * sizeof(T), kBad, what,
                ": raw_data has ", t.raw_data().size(), " bytes, its shape needs ",
                n * static_cast<int64_t>(sizeof(T)));
    out.resize(n);
    std::memcpy(out.data(), t.raw_data().data(), t.raw_data().size());
  } else {
    BRAID_CHECK(typed.size() == n, kBad, what, ": has ", typed.size(), " values, its shape needs ",
                n);
    out.assign(typed.begin(), typed.end());
  }
  return out;
}

Tensor read_tensor(const onnx::TensorProto& t, const std::string& what) {
  BRAID_CHECK(t.data_location() != onnx::TensorProto::EXTERNAL, kUnsupported, what,
              " keeps its data in an external file; braid reads only data embedded in the model");
  BRAID_CHECK(!t.has_segment(), kUnsupported, what, " is a segmented tensor");
  Tensor out;
  int64_t n = 1;
  for (int64_t d : t.dims()) {
    BRAID_CHECK(d >= 0, kBad, what, " has a negative dim ", d);
    BRAID_CHECK(d == 0 || n <= kMaxElements / d, kUnsupported, what, " is too large");
    out.shape.push_back(d);
    n *= d;
  }
  switch (t.data_type()) {
    case onnx::TensorProto::FLOAT:
      out.floats = read_payload<float>(t, t.float_data(), n, what);
      break;
    case onnx::TensorProto::INT64:
      out.dtype = ir::DType::kInt64;
      out.ints = read_payload<int64_t>(t, t.int64_data(), n, what);
      break;
    case onnx::TensorProto::BOOL: {  // one byte per element in raw_data, int32_data otherwise
      out.dtype = ir::DType::kBool;
      if (t.has_raw_data()) {
        for (uint8_t b : read_payload<uint8_t>(t, t.int32_data(), n, what))
          out.ints.push_back(b != 0);
      } else {
        for (int32_t b : read_payload<int32_t>(t, t.int32_data(), n, what))
          out.ints.push_back(b != 0);
      }
      break;
    }
    default:
      BRAID_THROW(kUnsupported, what, " has element type ", onnx_type_name(t.data_type()),
                  "; braid reads float32, int64 and bool constants only");
  }
  return out;
}

std::optional<ir::DType> dtype_of_onnx(int t) {
  switch (t) {
    case onnx::TensorProto::FLOAT:
      return ir::DType::kFloat32;
    case onnx::TensorProto::INT64:
      return ir::DType::kInt64;
    case onnx::TensorProto::BOOL:
      return ir::DType::kBool;
    default:
      return std::nullopt;
  }
}

int onnx_type_of(ir::DType t) {
  switch (t) {
    case ir::DType::kFloat32:
      return onnx::TensorProto::FLOAT;
    case ir::DType::kInt64:
      return onnx::TensorProto::INT64;
    case ir::DType::kBool:
      return onnx::TensorProto::BOOL;
  }
  return onnx::TensorProto::UNDEFINED;
}

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

// Attributes each op understands; anything else could change the semantics, so it is rejected.
const std::unordered_map<std::string_view, std::vector<std::string_view>>& known_attributes() {
  static const std::unordered_map<std::string_view, std::vector<std::string_view>> k = {
      {"Conv", {"kernel_shape", "strides", "dilations", "pads", "group", "auto_pad"}},
      {"MaxPool",
       {"kernel_shape", "strides", "pads", "auto_pad", "ceil_mode", "dilations", "storage_order"}},
      {"AveragePool",
       {"kernel_shape", "strides", "pads", "auto_pad", "ceil_mode", "dilations",
        "count_include_pad"}},
      {"Concat", {"axis"}},
      {"Gemm", {"alpha", "beta", "transA", "transB", "broadcast"}},
      {"BatchNormalization",
       {"epsilon", "momentum", "training_mode", "spatial", "is_test", "consumed_inputs"}},
      {"Softmax", {"axis"}},
      {"LayerNormalization", {"axis", "epsilon", "stash_type"}},
      {"Reshape", {"shape", "allowzero"}},
      {"Flatten", {"axis"}},
      {"Transpose", {"perm"}},
      {"Split", {"axis", "split", "num_outputs"}},
      {"Pad", {"mode", "pads", "value"}},
      {"Gelu", {"approximate"}},
      {"Dropout", {"ratio", "seed", "is_test"}},
      {"Constant", {"value", "value_float", "value_floats", "value_int", "value_ints"}},
      {"Gather", {"axis"}},
      {"Cast", {"to", "saturate"}},
      {"Slice", {"starts", "ends", "axes"}},
      {"Unsqueeze", {"axes"}},
      {"Squeeze", {"axes"}},
  };
  return k;
}

bool is_default_domain(const std::string& d) {
  return d.empty() || d == "ai.onnx";
}

std::optional<ir::Activation> activation_of(const onnx::NodeProto& n) {
  if (!is_default_domain(n.domain())) return std::nullopt;
  if (n.op_type() == "Relu") return ir::Activation::kRelu;
  if (n.op_type() == "Sigmoid") return ir::Activation::kSigmoid;
  if (n.op_type() == "Tanh") return ir::Activation::kTanh;
  if (n.op_type() == "Gelu") {
    for (const auto& a : n.attribute())
      if (a.name() == "approximate" && a.s() != "none") return std::nullopt;
    return ir::Activation::kGelu;
  }
  return std::nullopt;
}

// SAME_UPPER / SAME_LOWER: output = ceil(in / stride), the odd pad at the end (upper) or begin.
void same_pads(int64_t in, int64_t k, int64_t s, int64_t d, bool upper, int64_t* begin,
               int64_t* end) {
  int64_t out = (in + s - 1) / s;
  int64_t total = std::max<int64_t>(0, (out - 1) * s + (k - 1) * d + 1 - in);
  *begin = upper ? total / 2 : total - total / 2;
  *end = total - *begin;
}

class Importer {
 public:
  Importer(onnx::ModelProto& model, std::string graph_name, const OnnxImportOptions& options)
      : m_(model), g_(model.graph()), options_(options), b_(std::move(graph_name)) {}

  ImportedModel run() {
    BRAID_CHECK(options_.batch >= 1, ErrorCode::kInvalidArgument, "batch must be >= 1, got ",
                options_.batch);
    check_op_types();
    read_opset();
    for (int i = 0; i < g_.initializer_size(); ++i) {
      const onnx::TensorProto& t = g_.initializer(i);
      BRAID_CHECK(!t.name().empty(), kBad, "initializer #", i, " has no name");
      BRAID_CHECK(consts_.count(t.name()) == 0, kBad, "initializer '", t.name(),
                  "' is defined twice");
      consts_[t.name()] = {&t, nullptr, t.name(), "initializer '" + t.name() + "'"};
    }
    BRAID_CHECK(g_.sparse_initializer_size() == 0, kUnsupported,
                "sparse initializers are not supported");
    add_graph_inputs();
    std::vector<int> order = topological_order();
    plan_fused_activations();
    plan_erf_gelus();
    for (int i : order) import_node(i);
    add_graph_outputs();
    std::shared_ptr<const ir::Graph> graph = build_with_hints();
    check_shapes(*graph, shapes_of(g_), "the model declares");
    // Only now, with every node validated by braid: libonnx's shape inference is not hardened
    // against malformed nodes (the fuzzer crashed it in convPoolShapeInference).
    onnx::ModelProto inferred = infer_onnx_shapes(*graph);
    check_shapes(*graph, shapes_of(inferred.graph()), "ONNX shape inference gives");
    ImportedModel out{graph, ir::Weights(graph->num_values())};
    for (auto& [id, data] : weights_) out.weights.set(id, std::move(data));
    return out;
  }

 private:
  struct Constant {
    const onnx::TensorProto* proto = nullptr;  // initializer or Constant's `value`
    std::shared_ptr<const Tensor> tensor;      // Constant's value_float(s) / value_int(s)
    std::string canonical;                     // the constant an alias (Identity, Dropout) names
    std::string what;                          // for messages
  };

  // "node 'conv1'", or "node #3 (Conv)" for an unnamed node.
  std::string describe(int i) const {
    const onnx::NodeProto& n = g_.node(i);
    if (!n.name().empty()) return "node '" + n.name() + "'";
    return "node #" + std::to_string(i) + " (" + n.op_type() + ")";
  }

  void read_opset() {
    bool found = false;
    for (const auto& o : m_.opset_import())
      if (is_default_domain(o.domain())) {
        opset_ = o.version();
        found = true;
      }
    BRAID_CHECK(found, kBad, "the model imports no opset of the default ONNX domain");
    BRAID_CHECK(opset_ >= 1, kBad, "bad opset version ", opset_);
  }

  // Unsupported op types are reported before anything else: they are the most useful message
  // for a model that braid cannot run at all.
  void check_op_types() const {
    for (int i = 0; i < g_.node_size(); ++i) {
      const onnx::NodeProto& n = g_.node(i);
      if (!is_default_domain(n.domain()))
        BRAID_THROW(kUnsupported, describe(i), ": unsupported op type '", n.op_type(),
                    "' (domain '", n.domain(), "')");
      const bool known = ir::op_kind_from_onnx(n.op_type()).has_value() ||
                         n.op_type() == "Constant" || n.op_type() == "Dropout" ||
                         n.op_type() == "Unsqueeze" || n.op_type() == "Squeeze";
      BRAID_CHECK(known, kUnsupported, describe(i), ": unsupported op type '", n.op_type(), "'");
    }
  }

  void add_graph_inputs() {
    for (const onnx::ValueInfoProto& in : g_.input()) {
      if (consts_.count(in.name())) continue;  // IR < 4 lists initializers as inputs too
      const std::string what = "graph input '" + in.name() + "'";
      BRAID_CHECK(!in.name().empty(), kBad, "a graph input has no name");
      BRAID_CHECK(in.type().has_tensor_type(), kUnsupported, what, " is not a tensor");
      const auto& tt = in.type().tensor_type();
      ir::TensorType type;
      std::optional<ir::DType> dtype = dtype_of_onnx(tt.elem_type());
      BRAID_CHECK(dtype.has_value(), kUnsupported, what, " has element type ",
                  onnx_type_name(tt.elem_type()),
                  "; braid supports float32, int64 and bool inputs");
      type.dtype = *dtype;
      BRAID_CHECK(tt.has_shape(), kUnsupported, what, " has no shape; braid needs static shapes");
      int64_t elements = 1;
      for (int k = 0; k < tt.shape().dim_size(); ++k) {
        const auto& d = tt.shape().dim(k);
        BRAID_CHECK(!d.has_dim_value() || d.dim_value() != 0, kUnsupported, what, ": dim ", k,
                    " is 0; braid does not support zero-size tensors");
        int64_t v = d.has_dim_value() ? d.dim_value() : 0;
        BRAID_CHECK(v >= 0, kBad, what, ": dim ", k, " is ", v);
        if (v == 0) {
          BRAID_CHECK(
              k == 0, kUnsupported, what, ": dim ", k, " (",
              d.has_dim_param() ? "'" + d.dim_param() + "'" : std::string("unknown"),
              ") is dynamic; braid needs static shapes, only the batch dim 0 may be symbolic");
          v = options_.batch;
        }
        BRAID_CHECK(v <= kMaxElements / elements, kUnsupported, what, " is too large");
        elements *= v;
        type.shape.push_back(v);
      }
      BRAID_CHECK(values_.count(in.name()) == 0, kBad, what, " is declared twice");
      values_[in.name()] = b_.add_input(in.name(), type);
    }
  }

  // Kahn's algorithm, ties by file order: a file already in order keeps its order.
  std::vector<int> topological_order() {
    const int num = g_.node_size();
    for (int i = 0; i < num; ++i)
      for (const std::string& out : g_.node(i).output()) {
        if (out.empty()) continue;
        BRAID_CHECK(values_.count(out) == 0 && consts_.count(out) == 0, kBad, describe(i),
                    ": writes '", out, "', which is also a graph input or initializer");
        auto [it, inserted] = producer_.emplace(out, i);
        BRAID_CHECK(inserted, kBad, "value '", out, "' is written by both ", describe(it->second),
                    " and ", describe(i));
      }
    std::vector<std::vector<int>> succ(num), pred(num);
    std::vector<int> indegree(num, 0);
    for (int i = 0; i < num; ++i)
      for (const std::string& in : g_.node(i).input()) {
        if (in.empty()) continue;
        ++uses_[in];
        if (auto it = producer_.find(in); it != producer_.end()) {
          succ[it->second].push_back(i);
          pred[i].push_back(it->second);
          ++indegree[i];
          continue;
        }
        BRAID_CHECK(values_.count(in) || consts_.count(in), kBad, describe(i), ": input '", in,
                    "' is not defined (no graph input, initializer or node output has that name)");
      }
    for (const auto& out : g_.output()) {
      ++uses_[out.name()];
      BRAID_CHECK(
          producer_.count(out.name()) || values_.count(out.name()) || consts_.count(out.name()),
          kBad, "graph output '", out.name(), "' is not defined by any node");
    }
    std::priority_queue<int, std::vector<int>, std::greater<>> ready;
    for (int i = 0; i < num; ++i)
      if (indegree[i] == 0) ready.push(i);
    std::vector<int> order;
    while (!ready.empty()) {
      int i = ready.top();
      ready.pop();
      order.push_back(i);
      for (int s : succ[i])
        if (--indegree[s] == 0) ready.push(s);
    }
    if (static_cast<int>(order.size()) == num) return order;
    // Walk back through unfinished predecessors until a node repeats: it lies on a cycle.
    int at = 0;
    while (indegree[at] == 0) ++at;
    std::vector<int> walk;
    std::vector<int> seen_at(num, -1);
    while (seen_at[at] < 0) {
      seen_at[at] = static_cast<int>(walk.size());
      walk.push_back(at);
      for (int p : pred[at])
        if (indegree[p] > 0) {
          at = p;
          break;
        }
    }
    // `walk` follows edges backwards; print the cycle forwards, starting and ending at `at`.
    std::string path = describe(at).substr(5);
    for (int k = static_cast<int>(walk.size()) - 1; k >= seen_at[at]; --k)
      path += " -> " + describe(walk[k]).substr(5);
    BRAID_THROW(kBad, "the graph has a cycle through ", describe(at), " (", path, ")");
  }

  // ONNX's own shape inference on a clean copy: no weights beyond small constants, graph inputs
  // with braid's shapes (batch filled in), no declared shapes (compared separately), no
  // metadata or functions. Its result only cross-checks braid's shapes; failures are ignored.
  onnx::ModelProto infer_onnx_shapes(const ir::Graph& graph) {
    onnx::ModelProto copy;
    copy.set_ir_version(m_.ir_version());
    copy.mutable_opset_import()->CopyFrom(m_.opset_import());
    onnx::GraphProto* g = copy.mutable_graph();
    g->mutable_node()->CopyFrom(g_.node());
    for (ValueId v : graph.inputs()) {
      const ir::Value& in = graph.value(v);
      auto* t = g->add_input();
      t->set_name(in.name);
      auto* tt = t->mutable_type()->mutable_tensor_type();
      tt->set_elem_type(onnx_type_of(in.type.dtype));
      for (int64_t d : in.type.shape) tt->mutable_shape()->add_dim()->set_dim_value(d);
    }
    for (const auto& out : g_.output()) g->add_output()->set_name(out.name());
    for (const onnx::TensorProto& t : g_.initializer()) {
      const bool is_float = t.data_type() == onnx::TensorProto::FLOAT;
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

  static std::unordered_map<std::string, const onnx::ValueInfoProto*> shapes_of(
      const onnx::GraphProto& g) {
    std::unordered_map<std::string, const onnx::ValueInfoProto*> known;
    for (const auto& vi : g.value_info()) known[vi.name()] = &vi;
    for (const auto& vi : g.output()) known[vi.name()] = &vi;
    return known;
  }

  // Conv + activation pairs that braid exported from one Conv with a fused activation.
  void plan_fused_activations() {
    std::unordered_set<std::string> names;
    try {
      for (const auto& p : m_.metadata_props())
        if (p.key() == "braid.fused_activations")
          for (const auto& n : nlohmann::json::parse(p.value())) names.insert(n.get<std::string>());
    } catch (const nlohmann::json::exception&) {
      return;  // foreign or damaged metadata: import the nodes as they are
    }
    for (int i = 0; i < g_.node_size(); ++i) {
      const onnx::NodeProto& act = g_.node(i);
      if (act.name().empty() || !names.count(act.name()) || !activation_of(act)) continue;
      if (act.input_size() != 1 || act.output_size() != 1 || act.output(0).empty()) continue;
      auto p = producer_.find(act.input(0));
      if (p == producer_.end() || uses_[act.input(0)] != 1) continue;
      const onnx::NodeProto& conv = g_.node(p->second);
      if (conv.op_type() != "Conv" || !is_default_domain(conv.domain()) ||
          conv.output_size() != 1 || fused_activation_.count(p->second))
        continue;
      fused_activation_[p->second] = i;
      fused_nodes_.insert(i);
    }
  }

  // ---- attributes ----
  const onnx::AttributeProto* attr(int i, std::string_view name,
                                   onnx::AttributeProto::AttributeType type) const {
    for (const auto& a : g_.node(i).attribute())
      if (a.name() == name) {
        BRAID_CHECK(a.type() == type, kBad, describe(i), ": attribute '", name,
                    "' must be of type ", onnx::AttributeProto::AttributeType_Name(type));
        return &a;
      }
    return nullptr;
  }
  int64_t attr_int(int i, std::string_view name, int64_t fallback) const {
    const auto* a = attr(i, name, onnx::AttributeProto::INT);
    return a ? a->i() : fallback;
  }
  float attr_float(int i, std::string_view name, float fallback) const {
    const auto* a = attr(i, name, onnx::AttributeProto::FLOAT);
    return a ? a->f() : fallback;
  }
  std::string attr_string(int i, std::string_view name, std::string fallback) const {
    const auto* a = attr(i, name, onnx::AttributeProto::STRING);
    return a ? a->s() : fallback;
  }
  std::optional<std::vector<int64_t>> attr_ints(int i, std::string_view name) const {
    const auto* a = attr(i, name, onnx::AttributeProto::INTS);
    if (!a) return std::nullopt;
    return std::vector<int64_t>(a->ints().begin(), a->ints().end());
  }
  // An INTS attribute of exactly `size` entries, all positive.
  template <size_t N>
  std::array<int64_t, N> attr_array(int i, std::string_view name, std::array<int64_t, N> fallback,
                                    bool positive) const {
    auto v = attr_ints(i, name);
    if (!v) return fallback;
    BRAID_CHECK(v->size() == N, N <= 2 ? kUnsupported : kBad, describe(i), ": attribute '", name,
                "' has ", v->size(), " entries; braid supports 2-D windows only (", N, " entries)");
    std::array<int64_t, N> out;
    for (size_t k = 0; k < N; ++k) {
      BRAID_CHECK((positive ? (*v)[k] > 0 : (*v)[k] >= 0) && (*v)[k] <= kMaxSize, kBad, describe(i),
                  ": attribute '", name, "' has a bad entry ", (*v)[k]);
      out[k] = (*v)[k];
    }
    return out;
  }

  // Sizes from an attribute or constant (split sizes, pads, reshape dims) stay in a sane range.
  const std::vector<int64_t>& bounded(int i, std::string_view role,
                                      const std::vector<int64_t>& v) const {
    for (int64_t x : v)
      BRAID_CHECK(x >= -kMaxSize && x <= kMaxSize, kBad, describe(i), ": ", role, " value ", x,
                  " is out of range");
    return v;
  }

  void check_attributes(int i) const {
    const onnx::NodeProto& n = g_.node(i);
    const auto& table = known_attributes();
    auto it = table.find(n.op_type());
    for (const auto& a : n.attribute()) {
      bool ok = it != table.end() &&
                std::find(it->second.begin(), it->second.end(), a.name()) != it->second.end();
      BRAID_CHECK(ok, kUnsupported, describe(i), ": attribute '", a.name(), "' of ", n.op_type(),
                  " is not supported");
    }
  }

  // ---- inputs ----
  const Constant* constant(const std::string& name) const {
    if (values_.count(name)) return nullptr;
    auto it = consts_.find(name);
    return it == consts_.end() ? nullptr : &it->second;
  }
  static Tensor read_constant(const Constant& c) {
    return c.proto ? read_tensor(*c.proto, c.what) : *c.tensor;
  }

  // A float constant used as an operand becomes a parameter, once per underlying constant.
  ValueId value(int i, const std::string& name) {
    if (auto it = values_.find(name); it != values_.end()) return it->second;
    const Constant* c = constant(name);
    BRAID_ASSERT(c != nullptr, "inputs were checked in topological_order");
    if (auto it = values_.find(c->canonical); it != values_.end()) return it->second;
    Tensor t = read_constant(*c);
    BRAID_CHECK(t.dtype == ir::DType::kFloat32, kUnsupported, describe(i), ": input '", name,
                "' is a constant of type ", ir::to_string(t.dtype),
                "; braid takes int64 and bool "
                "constants only as Reshape/Expand shapes, Split sizes, Pad pads, Slice bounds "
                "and Gather indices");
    ValueId id =
        b_.add_parameter(c->canonical, {ir::DType::kFloat32, t.shape}, ir::ParamInit::external());
    values_[c->canonical] = id;
    weights_.emplace_back(id, std::move(t.floats));
    return id;
  }

  // The first `max` inputs, up to the first omitted optional one.
  std::vector<ValueId> operands(int i, int max = INT_MAX) {
    const onnx::NodeProto& n = g_.node(i);
    std::vector<ValueId> out;
    for (int k = 0; k < std::min(max, n.input_size()); ++k) {
      if (n.input(k).empty()) {
        for (int j = k + 1; j < std::min(max, n.input_size()); ++j)
          BRAID_CHECK(n.input(j).empty(), kUnsupported, describe(i), ": omitted input #", k,
                      " before input '", n.input(j), "'");
        break;
      }
      out.push_back(value(i, n.input(k)));
    }
    BRAID_CHECK(!out.empty(), kBad, describe(i), ": has no inputs");
    return out;
  }

  // Input k as a constant of the given type (Reshape shape, Split sizes, Pad pads / value).
  std::optional<Tensor> const_input(int i, int k, std::string_view role, ir::DType dtype) const {
    const onnx::NodeProto& n = g_.node(i);
    if (k >= n.input_size() || n.input(k).empty()) return std::nullopt;
    const Constant* c = constant(n.input(k));
    BRAID_CHECK(c != nullptr, kUnsupported, describe(i), ": ", role, " input '", n.input(k),
                "' must be a constant (initializer or Constant node)");
    Tensor t = read_constant(*c);
    BRAID_CHECK(t.dtype == dtype && t.shape.size() <= 1, kBad, describe(i), ": ", role, " input '",
                n.input(k), "' must be a ", ir::to_string(dtype), " scalar or 1-D tensor");
    return t;
  }

  const ir::TensorType& type_of(ValueId v) const { return b_.type(v); }

  // ---- ops ----
  ir::ConvAttrs conv_attrs(int i, const std::vector<ValueId>& in) const {
    BRAID_CHECK(in.size() >= 2, kBad, describe(i), " (Conv): needs input and weights");
    const ir::Shape& x = type_of(in[0]).shape;
    const ir::Shape& w = type_of(in[1]).shape;
    BRAID_CHECK(x.size() == 4 && w.size() == 4, kUnsupported, describe(i),
                ": only 2-D Conv is supported (input ", ir::to_string(x), ", weights ",
                ir::to_string(w), ")");
    ir::ConvAttrs a;
    a.kernel = attr_array<2>(i, "kernel_shape", {w[2], w[3]}, true);
    a.stride = attr_array<2>(i, "strides", {1, 1}, true);
    a.dilation = attr_array<2>(i, "dilations", {1, 1}, true);
    a.pads = attr_array<4>(i, "pads", {0, 0, 0, 0}, false);
    a.groups = attr_int(i, "group", 1);
    apply_auto_pad(i, x, a.kernel, a.stride, a.dilation, &a.pads);
    return a;
  }

  void apply_auto_pad(int i, const ir::Shape& x, const std::array<int64_t, 2>& kernel,
                      const std::array<int64_t, 2>& stride, const std::array<int64_t, 2>& dilation,
                      std::array<int64_t, 4>* pads) const {
    const std::string mode = attr_string(i, "auto_pad", "NOTSET");
    if (mode == "NOTSET") return;
    BRAID_CHECK(!attr_ints(i, "pads"), kBad, describe(i), ": both pads and auto_pad=", mode,
                " are set");
    if (mode == "VALID") {
      *pads = {0, 0, 0, 0};
      return;
    }
    BRAID_CHECK(mode == "SAME_UPPER" || mode == "SAME_LOWER", kUnsupported, describe(i),
                ": auto_pad '", mode, "' is not supported");
    for (int k = 0; k < 2; ++k)
      same_pads(x[2 + k], kernel[k], stride[k], dilation[k], mode == "SAME_UPPER", &(*pads)[k],
                &(*pads)[2 + k]);
  }

  ir::PoolAttrs pool_attrs(int i, const std::vector<ValueId>& in, bool average) const {
    const ir::Shape& x = type_of(in[0]).shape;
    BRAID_CHECK(x.size() == 4, kUnsupported, describe(i), ": only 2-D pooling is supported (input ",
                ir::to_string(x), ")");
    BRAID_CHECK(attr_ints(i, "kernel_shape"), kBad, describe(i), ": kernel_shape is required");
    ir::PoolAttrs a;
    a.kernel = attr_array<2>(i, "kernel_shape", {1, 1}, true);
    a.stride = attr_array<2>(i, "strides", {1, 1}, true);
    a.pads = attr_array<4>(i, "pads", {0, 0, 0, 0}, false);
    const auto dilation = attr_array<2>(i, "dilations", {1, 1}, true);
    BRAID_CHECK(dilation == (std::array<int64_t, 2>{1, 1}), kUnsupported, describe(i),
                ": pooling dilations other than 1 are not supported");
    BRAID_CHECK(attr_int(i, "storage_order", 0) == 0, kUnsupported, describe(i),
                ": storage_order=1 is not supported");
    a.ceil_mode = attr_int(i, "ceil_mode", 0) != 0;
    if (average) a.count_include_pad = attr_int(i, "count_include_pad", 0) != 0;
    apply_auto_pad(i, x, a.kernel, a.stride, dilation, &a.pads);
    return a;
  }

  int64_t checked_axis(int i, int64_t axis, int64_t rank) const {
    BRAID_CHECK(axis >= -rank && axis < rank, kBad, describe(i), ": axis ", axis,
                " out of range for rank ", rank);
    return axis < 0 ? axis + rank : axis;
  }

  ir::SplitAttrs split_attrs(int i, const ir::TensorType& x) const {
    const onnx::NodeProto& n = g_.node(i);
    ir::SplitAttrs a;
    a.axis = attr_int(i, "axis", 0);
    const int64_t axis = checked_axis(i, a.axis, x.rank());
    if (opset_ >= 13) {
      if (auto t = const_input(i, 1, "split", ir::DType::kInt64))
        a.sizes = bounded(i, "split", t->ints);
    } else if (auto s = attr_ints(i, "split")) {
      a.sizes = bounded(i, "split", *s);
    }
    if (!a.sizes.empty()) return a;
    const int64_t parts = n.output_size(), dim = x.shape[axis];
    if (auto num = attr_int(i, "num_outputs", 0); num != 0)
      BRAID_CHECK(num == parts, kBad, describe(i), ": num_outputs=", num, " but ", parts,
                  " outputs");
    BRAID_CHECK(parts >= 1, kBad, describe(i), ": Split has no outputs");
    // Opset 18: ceil(dim / parts) each, the last one smaller; before that, parts must divide dim.
    const int64_t chunk = opset_ >= 18 ? (dim + parts - 1) / parts : dim / parts;
    BRAID_CHECK(opset_ >= 18 || dim % parts == 0, kBad, describe(i), ": cannot split ", dim,
                " into ", parts, " equal parts");
    a.sizes.assign(parts, chunk);
    a.sizes.back() = dim - chunk * (parts - 1);
    return a;
  }

  ir::PadAttrs pad_attrs(int i, const ir::TensorType& x) const {
    const std::string mode = attr_string(i, "mode", "constant");
    BRAID_CHECK(mode == "constant", kUnsupported, describe(i), ": Pad mode '", mode,
                "' is not supported (only constant)");
    ir::PadAttrs a;
    if (opset_ < 11) {
      a.pads = bounded(i, "pads", attr_ints(i, "pads").value_or(std::vector<int64_t>{}));
      a.value = attr_float(i, "value", 0.0f);
      return a;
    }
    auto pads = const_input(i, 1, "pads", ir::DType::kInt64);
    BRAID_CHECK(pads.has_value(), kBad, describe(i), ": Pad needs a pads input");
    if (auto v = const_input(i, 2, "constant_value", ir::DType::kFloat32)) {
      BRAID_CHECK(v->floats.size() == 1, kBad, describe(i), ": constant_value must hold one value");
      a.value = v->floats[0];
    }
    a.pads = bounded(i, "pads", pads->ints);
    if (auto axes = const_input(i, 3, "axes", ir::DType::kInt64)) {  // opset 18
      const int64_t r = x.rank(), na = static_cast<int64_t>(axes->ints.size());
      BRAID_CHECK(static_cast<int64_t>(pads->ints.size()) == 2 * na, kBad, describe(i), ": ",
                  pads->ints.size(), " pads for ", na, " axes");
      a.pads.assign(2 * r, 0);
      for (int64_t j = 0; j < na; ++j) {
        const int64_t ax = checked_axis(i, axes->ints[j], r);
        a.pads[ax] = pads->ints[j];
        a.pads[r + ax] = pads->ints[na + j];
      }
    }
    return a;
  }

  ir::OpAttrs attrs_for(int i, OpKind kind, const std::vector<ValueId>& in) const {
    switch (kind) {
      case OpKind::Conv:
        return conv_attrs(i, in);
      case OpKind::MaxPool:
      case OpKind::AveragePool:
        return pool_attrs(i, in, kind == OpKind::AveragePool);
      case OpKind::Concat:
        BRAID_CHECK(opset_ < 4 || attr(i, "axis", onnx::AttributeProto::INT), kBad, describe(i),
                    ": Concat needs an axis");
        return ir::AxisAttrs{attr_int(i, "axis", 1)};
      case OpKind::Flatten:
        return ir::AxisAttrs{attr_int(i, "axis", 1)};
      case OpKind::Softmax: {
        const int64_t rank = type_of(in[0]).rank();
        if (opset_ >= 13) return ir::AxisAttrs{attr_int(i, "axis", -1)};
        // Before opset 13 Softmax normalizes over the flattened dims [axis, rank); that is the
        // per-axis softmax of opset 13 only when axis is the last dim.
        const int64_t axis = checked_axis(i, attr_int(i, "axis", 1), rank);
        BRAID_CHECK(axis == rank - 1, kUnsupported, describe(i), ": Softmax axis ", axis,
                    " at opset ", opset_, " normalizes over the flattened dims [", axis, ", ", rank,
                    "); braid supports only the last axis there");
        return ir::AxisAttrs{axis};
      }
      case OpKind::Gemm:
        return ir::GemmAttrs{attr_float(i, "alpha", 1.0f), attr_float(i, "beta", 1.0f),
                             attr_int(i, "transA", 0) != 0, attr_int(i, "transB", 0) != 0};
      case OpKind::BatchNormalization:
        BRAID_CHECK(attr_int(i, "training_mode", 0) == 0, kUnsupported, describe(i),
                    ": BatchNormalization in training mode is not supported");
        BRAID_CHECK(attr_int(i, "spatial", 1) == 1, kUnsupported, describe(i),
                    ": BatchNormalization with spatial=0 is not supported");
        return ir::BatchNormAttrs{attr_float(i, "epsilon", 1e-5f)};
      case OpKind::LayerNormalization:
        return ir::LayerNormAttrs{attr_int(i, "axis", -1), attr_float(i, "epsilon", 1e-5f)};
      case OpKind::Reshape: {
        std::vector<int64_t> shape;
        if (opset_ < 5) {
          shape = attr_ints(i, "shape").value_or(std::vector<int64_t>{});
        } else {
          auto t = const_input(i, 1, "shape", ir::DType::kInt64);
          BRAID_CHECK(t.has_value(), kBad, describe(i), ": Reshape needs a shape input");
          shape = t->ints;
        }
        const bool has_zero = std::find(shape.begin(), shape.end(), 0) != shape.end();
        BRAID_CHECK(attr_int(i, "allowzero", 0) == 0 || !has_zero, kUnsupported, describe(i),
                    ": Reshape with allowzero=1 and a 0 in the shape is not supported");
        int64_t product = 1;
        for (int64_t d : bounded(i, "shape", shape)) {
          BRAID_CHECK(product <= kMaxElements / std::max<int64_t>(d, 1), kBad, describe(i),
                      ": Reshape to a shape too large");
          product *= std::max<int64_t>(d, 1);
        }
        return ir::ReshapeAttrs{shape};
      }
      case OpKind::Transpose:
        return ir::TransposeAttrs{attr_ints(i, "perm").value_or(std::vector<int64_t>{})};
      case OpKind::Split:
        return split_attrs(i, type_of(in[0]));
      case OpKind::Pad:
        return pad_attrs(i, type_of(in[0]));
      case OpKind::Gelu: {
        const std::string approximate = attr_string(i, "approximate", "none");
        BRAID_CHECK(approximate == "none" || approximate == "tanh", kBad, describe(i),
                    ": Gelu approximate='", approximate, "'");
        return ir::GeluAttrs{approximate == "tanh"};
      }
      case OpKind::Relu:
      case OpKind::Sigmoid:
      case OpKind::Tanh:
      case OpKind::GlobalAveragePool:
      case OpKind::Add:
      case OpKind::Mul:
      case OpKind::Sum:
      case OpKind::MatMul:
      case OpKind::Identity:
        return std::monostate{};
      case OpKind::Erf:
      case OpKind::Sub:
      case OpKind::Div:
      case OpKind::Pow:
      case OpKind::Sqrt:
      case OpKind::Where:
      case OpKind::Equal:
        return std::monostate{};
      case OpKind::Expand: {
        auto t = const_input(i, 1, "shape", ir::DType::kInt64);
        BRAID_CHECK(t.has_value(), kBad, describe(i), ": Expand needs a shape input");
        return ir::ExpandAttrs{bounded(i, "shape", t->ints)};
      }
      case OpKind::Gather:
        return gather_attrs(i, type_of(in[0]));
      case OpKind::Cast: {
        const auto* to = attr(i, "to", onnx::AttributeProto::INT);
        BRAID_CHECK(to != nullptr, kBad, describe(i), ": Cast needs a 'to' attribute");
        std::optional<ir::DType> dtype = dtype_of_onnx(static_cast<int>(to->i()));
        BRAID_CHECK(dtype.has_value(), kUnsupported, describe(i), ": Cast to ",
                    onnx_type_name(static_cast<int>(to->i())),
                    "; braid casts to float32, int64 and bool only");
        return ir::CastAttrs{*dtype};
      }
      case OpKind::Slice:
        return slice_attrs(i);
    }
    BRAID_ASSERT(false, "unhandled op kind");
  }

  // Outputs past the ones braid computes (BatchNorm's training statistics, MaxPool's indices,
  // Dropout's mask) must be unused.
  void check_extra_outputs(int i, int used) const {
    const onnx::NodeProto& n = g_.node(i);
    BRAID_CHECK(n.output_size() >= used, kBad, describe(i), ": ", n.op_type(), " needs ", used,
                " output(s), has ", n.output_size());
    for (int k = used; k < n.output_size(); ++k)
      BRAID_CHECK(n.output(k).empty() || uses_.count(n.output(k)) == 0, kUnsupported, describe(i),
                  ": output #", k, " ('", n.output(k), "') of ", n.op_type(), " is not supported");
    for (int k = 0; k < std::min(used, n.output_size()); ++k)
      BRAID_CHECK(!n.output(k).empty(), kBad, describe(i), ": output #", k, " has no name");
  }

  void alias(const std::string& to, const std::string& from) {
    if (auto it = values_.find(from); it != values_.end()) {
      values_[to] = it->second;
    } else {
      Constant c = consts_.at(from);
      consts_[to] = std::move(c);
    }
  }

  void import_constant(int i) {
    using A = onnx::AttributeProto;
    const onnx::NodeProto& n = g_.node(i);
    check_extra_outputs(i, 1);
    BRAID_CHECK(n.attribute_size() == 1, kBad, describe(i),
                ": Constant needs exactly one value attribute");
    Constant c{nullptr, nullptr, n.output(0), "Constant " + describe(i)};
    auto t = std::make_shared<Tensor>();
    if (const A* a = attr(i, "value", A::TENSOR)) {
      c.proto = &a->t();
    } else if (const A* a = attr(i, "value_float", A::FLOAT)) {
      t->floats = {a->f()};
    } else if (const A* a = attr(i, "value_floats", A::FLOATS)) {
      t->floats.assign(a->floats().begin(), a->floats().end());
      t->shape = {a->floats_size()};
    } else if (const A* a = attr(i, "value_int", A::INT)) {
      t->dtype = ir::DType::kInt64;
      t->ints = {a->i()};
    } else if (const A* a = attr(i, "value_ints", A::INTS)) {
      t->dtype = ir::DType::kInt64;
      t->ints.assign(a->ints().begin(), a->ints().end());
      t->shape = {a->ints_size()};
    }
    if (!c.proto) c.tensor = std::move(t);
    consts_[n.output(0)] = std::move(c);
  }

  // braid runs inference: a Dropout is an alias of its input only when it provably does not
  // drop (is_test=1 before opset 7; no training_mode, a constant false one, or ratio 0 after).
  void check_inference_dropout(int i) const {
    const onnx::NodeProto& n = g_.node(i);
    if (opset_ < 7) {
      BRAID_CHECK(attr_int(i, "is_test", 0) != 0, kUnsupported, describe(i),
                  ": Dropout in training mode (is_test=0); braid runs inference only");
      return;
    }
    if (n.input_size() < 3 || n.input(2).empty()) return;
    const Constant* training = constant(n.input(2));
    if (training && training->proto && is_all_zero(*training->proto)) return;
    if (n.input_size() >= 2 && !n.input(1).empty())
      if (const Constant* ratio = constant(n.input(1)); ratio && ratio->proto &&
                                                        is_all_zero(*ratio->proto))
        return;
    BRAID_THROW(kUnsupported, describe(i),
                ": Dropout with training_mode that is not a constant false; braid runs inference only");
  }

  // True when every element of a bool/float/int tensor constant is zero (false).
  static bool is_all_zero(const onnx::TensorProto& t) {
    for (char c : t.raw_data())
      if (c != 0) return false;
    for (int32_t v : t.int32_data())
      if (v != 0) return false;
    for (float v : t.float_data())
      if (v != 0.0f) return false;
    for (int64_t v : t.int64_data())
      if (v != 0) return false;
    return true;
  }

  void import_node(int i) {
    const onnx::NodeProto& n = g_.node(i);
    check_attributes(i);
    if (fused_nodes_.count(i)) return;  // its Conv already wrote its output
    if (n.op_type() == "Constant") return import_constant(i);
    const bool dropout = n.op_type() == "Dropout";
    if (dropout) check_inference_dropout(i);
    if (dropout || (n.op_type() == "Identity" && n.input_size() == 1 && constant(n.input(0)))) {
      // Inference-time Dropout and Identity of a constant only rename their input.
      BRAID_CHECK(n.input_size() >= 1 && !n.input(0).empty(), kBad, describe(i), ": has no input");
      check_extra_outputs(i, 1);
      return alias(n.output(0), n.input(0));
    }
    if (erf_gelu_parts_.count(i)) return;  // folded into the Gelu its pattern's end writes
    if (auto g = erf_gelu_input_.find(i); g != erf_gelu_input_.end())
      return import_erf_gelu(i, g->second);
    if (n.op_type() == "Unsqueeze" || n.op_type() == "Squeeze") return import_squeeze(i);
    const OpKind kind = *ir::op_kind_from_onnx(n.op_type());
    const bool constant_gather =
        kind == OpKind::Gather && n.input_size() >= 2 && constant(n.input(1));
    const int num_operands = kind == OpKind::Reshape || kind == OpKind::Split ||
                                     kind == OpKind::Pad || kind == OpKind::Expand ||
                                     kind == OpKind::Slice || constant_gather
                                 ? 1
                                 : INT_MAX;
    std::vector<ValueId> in = operands(i, num_operands);
    ir::OpAttrs attrs = attrs_for(i, kind, in);
    const int num_outputs = kind == OpKind::Split ? n.output_size() : 1;
    check_extra_outputs(i, num_outputs);
    std::vector<std::string> out_names(n.output().begin(), n.output().begin() + num_outputs);
    if (auto f = fused_activation_.find(i); f != fused_activation_.end()) {
      std::get<ir::ConvAttrs>(attrs).activation = *activation_of(g_.node(f->second));
      out_names[0] = g_.node(f->second).output(0);
    }
    const std::string name = n.name().empty() ? out_names[0] : n.name();
    NodeId id = b_.add_node(kind, std::move(attrs), std::move(in), name, num_outputs, out_names);
    for (int k = 0; k < num_outputs; ++k) values_[out_names[k]] = b_.output(id, k);
    node_ids_[b_.node(id).name] = id;
  }

  // ---- transformer ops (Gather, Slice, Unsqueeze/Squeeze, the erf GELU) ----
  ir::GatherAttrs gather_attrs(int i, const ir::TensorType& data) const {
    const onnx::NodeProto& n = g_.node(i);
    ir::GatherAttrs a;
    a.axis = checked_axis(i, attr_int(i, "axis", 0), data.rank());
    BRAID_CHECK(n.input_size() == 2 && !n.input(1).empty(), kBad, describe(i),
                ": Gather needs data and indices");
    const Constant* c = constant(n.input(1));
    if (c == nullptr) return a;  // indices are the node's second input, read at run time
    Tensor t = read_constant(*c);
    BRAID_CHECK(t.dtype == ir::DType::kInt64, kUnsupported, describe(i), ": indices '", n.input(1),
                "' are ", ir::to_string(t.dtype), "; braid takes int64 indices");
    a.indices = std::move(t.ints);
    a.indices_shape = t.shape;
    return a;
  }

  // Opset 10+ takes starts/ends/axes/steps as constant inputs, opset 1-9 as attributes. Ends
  // like INT64_MAX ("to the end") stay as they are: ir::slice_dims clamps them.
  ir::SliceAttrs slice_attrs(int i) const {
    ir::SliceAttrs a;
    if (opset_ < 10) {
      a.starts = attr_ints(i, "starts").value_or(std::vector<int64_t>{});
      a.ends = attr_ints(i, "ends").value_or(std::vector<int64_t>{});
      a.axes = attr_ints(i, "axes").value_or(std::vector<int64_t>{});
      return a;
    }
    auto starts = const_input(i, 1, "starts", ir::DType::kInt64);
    auto ends = const_input(i, 2, "ends", ir::DType::kInt64);
    BRAID_CHECK(starts && ends, kBad, describe(i), ": Slice needs starts and ends");
    a.starts = std::move(starts->ints);
    a.ends = std::move(ends->ints);
    if (auto axes = const_input(i, 3, "axes", ir::DType::kInt64)) a.axes = std::move(axes->ints);
    if (auto steps = const_input(i, 4, "steps", ir::DType::kInt64))
      a.steps = bounded(i, "steps", steps->ints);
    return a;
  }

  // Unsqueeze and Squeeze only relabel dims: braid imports them as a Reshape to the static
  // result shape (axes from the attribute before opset 13, from a constant input after).
  void import_squeeze(int i) {
    const onnx::NodeProto& n = g_.node(i);
    const bool unsqueeze = n.op_type() == "Unsqueeze";
    check_extra_outputs(i, 1);
    std::vector<ValueId> in = operands(i, 1);
    const ir::Shape& x = type_of(in[0]).shape;
    std::optional<std::vector<int64_t>> axes;
    if (opset_ < 13) {
      axes = attr_ints(i, "axes");
    } else if (auto t = const_input(i, 1, "axes", ir::DType::kInt64)) {
      axes = t->ints;
    }
    BRAID_CHECK(axes || !unsqueeze, kBad, describe(i), ": Unsqueeze needs axes");
    const int64_t out_rank =
        static_cast<int64_t>(x.size()) + (unsqueeze ? static_cast<int64_t>(axes->size()) : 0);
    std::vector<bool> listed(unsqueeze ? out_rank : x.size(), false);
    for (int64_t a : axes.value_or(std::vector<int64_t>{})) {
      const int64_t axis = checked_axis(i, a, static_cast<int64_t>(listed.size()));
      BRAID_CHECK(!listed[axis], kBad, describe(i), ": axis ", a, " repeats");
      listed[axis] = true;
    }
    ir::Shape shape;
    if (unsqueeze) {
      for (int64_t d = 0, k = 0; d < out_rank; ++d) shape.push_back(listed[d] ? 1 : x[k++]);
    } else {
      for (size_t d = 0; d < x.size(); ++d) {
        const bool drop = axes ? listed[d] : x[d] == 1;
        BRAID_CHECK(!drop || x[d] == 1, kBad, describe(i), ": cannot squeeze dim ", d, " of size ",
                    x[d]);
        if (!drop) shape.push_back(x[d]);
      }
    }
    const std::string name = n.name().empty() ? n.output(0) : n.name();
    NodeId id = b_.add_node(OpKind::Reshape, ir::ReshapeAttrs{shape}, std::move(in), name, 1,
                            {n.output(0)});
    values_[n.output(0)] = b_.output(id, 0);
    node_ids_[b_.node(id).name] = id;
  }

  // A float scalar constant's value (GELU's sqrt(2), 1 and 0.5).
  std::optional<float> scalar_constant(const std::string& name) const {
    const Constant* c = constant(name);
    if (c == nullptr) return std::nullopt;
    Tensor t = read_constant(*c);
    if (t.dtype != ir::DType::kFloat32 || t.floats.size() != 1) return std::nullopt;
    return t.floats[0];
  }

  // PyTorch before opset 20 exports the exact GELU as Div(x, sqrt 2) -> Erf -> Add(1) ->
  // Mul(x) -> Mul(0.5) (nn.GELU) or with the 0.5 applied to x first (HF BERT's
  // x * 0.5 * (1 + erf(x / sqrt 2))). Each match becomes one braid Gelu written by the last
  // Mul; its other nodes are skipped. Intermediate values must have no other reader.
  void plan_erf_gelus() {
    std::unordered_map<std::string, std::vector<int>> readers;
    for (int i = 0; i < g_.node_size(); ++i)
      for (const std::string& in : g_.node(i).input()) readers[in].push_back(i);
    auto is_op = [&](int i, const char* op) {
      return g_.node(i).op_type() == op && is_default_domain(g_.node(i).domain()) &&
             g_.node(i).output_size() == 1 && g_.node(i).input_size() == 2;
    };
    // The only reader of node i's output, when it is op `op`.
    auto sole_reader = [&](int i, const char* op) -> std::optional<int> {
      const std::string& out = g_.node(i).output(0);
      auto it = readers.find(out);
      if (uses_[out] != 1 || it == readers.end() || it->second.size() != 1) return std::nullopt;
      if (!is_op(it->second[0], op)) return std::nullopt;
      return it->second[0];
    };
    // The input of binary node i other than `operand`, when it is the scalar `value`.
    auto other_is = [&](int i, const std::string& operand, float value) {
      const onnx::NodeProto& n = g_.node(i);
      const std::string& other = n.input(0) == operand ? n.input(1) : n.input(0);
      std::optional<float> c = scalar_constant(other);
      return (n.input(0) == operand || n.input(1) == operand) && c &&
             std::abs(*c - value) <= 1e-6f * std::max(1.0f, value);
    };
    for (int erf = 0; erf < g_.node_size(); ++erf) {
      const onnx::NodeProto& e = g_.node(erf);
      if (e.op_type() != "Erf" || e.input_size() != 1 || e.output_size() != 1) continue;
      auto p = producer_.find(e.input(0));
      if (p == producer_.end() || !is_op(p->second, "Div") || uses_[e.input(0)] != 1) continue;
      const int div = p->second;
      const std::string& x = g_.node(div).input(0);
      if (g_.node(div).input(1) == x || !other_is(div, x, std::numbers::sqrt2_v<float>)) continue;
      auto add = sole_reader(erf, "Add");
      if (!add || !other_is(*add, e.output(0), 1.0f)) continue;
      auto mul = sole_reader(*add, "Mul");
      if (!mul) continue;
      const onnx::NodeProto& m = g_.node(*mul);
      const std::string& other = m.input(0) == g_.node(*add).output(0) ? m.input(1) : m.input(0);
      std::vector<int> parts = {div, erf, *add};
      int last = -1;
      if (other == x) {  // (x * (1 + erf)) * 0.5
        auto half = sole_reader(*mul, "Mul");
        if (!half || !other_is(*half, m.output(0), 0.5f)) continue;
        parts.push_back(*mul);
        last = *half;
      } else if (auto h = producer_.find(other); h != producer_.end() && is_op(h->second, "Mul") &&
                                                 uses_[other] == 1 &&
                                                 other_is(h->second, x, 0.5f)) {
        parts.push_back(h->second);  // (x * 0.5) * (1 + erf)
        last = *mul;
      } else {
        continue;
      }
      if (fused_nodes_.count(last) || erf_gelu_input_.count(last)) continue;
      erf_gelu_input_[last] = x;
      erf_gelu_parts_.insert(parts.begin(), parts.end());
    }
  }

  void import_erf_gelu(int last, const std::string& x) {
    const onnx::NodeProto& n = g_.node(last);
    check_extra_outputs(last, 1);
    std::vector<ValueId> in = {value(last, x)};
    const std::string name = n.name().empty() ? n.output(0) : n.name();
    NodeId id = b_.add_node(OpKind::Gelu, ir::GeluAttrs{}, std::move(in), name, 1, {n.output(0)});
    values_[n.output(0)] = b_.output(id, 0);
    node_ids_[b_.node(id).name] = id;
  }

  void add_graph_outputs() {
    for (const auto& out : g_.output()) {
      auto it = values_.find(out.name());
      BRAID_CHECK(it != values_.end(), kUnsupported, "graph output '", out.name(),
                  "' is a constant; braid needs graph outputs computed by ops");
      b_.mark_output(it->second);
    }
  }

  // Restores "braid.unit_hints"; hints that name unknown nodes, repeat a node or make the unit
  // graph cyclic are dropped as a whole (they are advice, not structure).
  std::shared_ptr<const ir::Graph> build_with_hints() {
    std::vector<std::vector<NodeId>> hints;
    try {
      for (const auto& p : m_.metadata_props()) {
        if (p.key() != "braid.unit_hints") continue;
        std::unordered_set<uint32_t> seen;
        for (const auto& names : nlohmann::json::parse(p.value())) {
          std::vector<NodeId> hint;
          for (const auto& name : names) {
            auto it = node_ids_.find(name.get<std::string>());
            if (it == node_ids_.end() || !seen.insert(static_cast<uint32_t>(it->second)).second)
              throw std::invalid_argument("bad hint");
            hint.push_back(it->second);
          }
          if (hint.empty()) throw std::invalid_argument("empty hint");
          hints.push_back(std::move(hint));
        }
      }
    } catch (const std::exception&) {  // nlohmann errors and the rejections above
      hints.clear();
    }
    if (!hints.empty()) {
      ir::GraphBuilder hinted = b_;
      for (auto& h : hints) hinted.add_unit_hint(std::move(h));
      auto graph = std::make_shared<const ir::Graph>(std::move(hinted).build());
      try {
        ir::fuse(graph);
        return graph;
      } catch (const Error&) {
      }
    }
    return std::make_shared<const ir::Graph>(std::move(b_).build());
  }

  // braid's shapes are authoritative; a static ONNX shape that disagrees means the file is
  // inconsistent (or braid misread an attribute), so it is reported rather than guessed around.
  // One known divergence: with ceil_mode, ONNX's shape inference keeps a last pooling window
  // that starts in the end padding, which ONNX Runtime and PyTorch drop (onnx/onnx#5711). Such a
  // pool's output, and whatever ONNX derived from it, is not compared.
  static void check_shapes(
      const ir::Graph& graph,
      const std::unordered_map<std::string, const onnx::ValueInfoProto*>& known,
      std::string_view source) {
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
        BRAID_CHECK(excused, kBad, "node '", node.name, "': shape mismatch: output '", val.name,
                    "' is ", ir::to_string(val.type.shape), " but ", source, " ", shape_string(s));
        diverged[index(v)] = true;
      }
    }
  }

  onnx::ModelProto& m_;
  const onnx::GraphProto& g_;
  OnnxImportOptions options_;
  ir::GraphBuilder b_;
  int64_t opset_ = 0;
  std::unordered_map<std::string, ValueId> values_;   // ONNX name -> braid value
  std::unordered_map<std::string, Constant> consts_;  // ONNX name -> constant not (yet) a value
  std::unordered_map<std::string, int> producer_;     // ONNX name -> node index
  std::unordered_map<std::string, int> uses_;         // input references plus graph outputs
  std::unordered_map<int, int> fused_activation_;     // Conv node -> its activation node
  std::unordered_set<int> fused_nodes_;               // activation nodes folded into a Conv
  std::unordered_map<int, std::string> erf_gelu_input_;  // a GELU pattern's last node -> its x
  std::unordered_set<int> erf_gelu_parts_;               // the other nodes of those patterns
  std::unordered_map<std::string, NodeId> node_ids_;
  std::vector<std::pair<ValueId, std::vector<float>>> weights_;
};

ImportedModel import_model(onnx::ModelProto& model, std::string_view source,
                           const OnnxImportOptions& options) {
  BRAID_CHECK(model.has_ir_version() && model.has_graph(), kBad, "not a valid ONNX model (",
              model.has_ir_version() ? "no graph" : "no ir_version", ")");
  std::string name = model.graph().name();
  if (name.empty()) name = std::filesystem::path(std::string(source)).stem().string();
  if (name.empty()) name = "onnx";
  return Importer(model, name, options).run();
}

// Prefixes every import error with the file (or buffer) name, keeping its code.
template <typename F>
ImportedModel with_source(std::string_view source, F&& f) {
  try {
    return f();
  } catch (const Error& e) {
    throw Error(e.code(), std::string(source) + ": " + e.what());
  }
}

}  // namespace

ImportedModel import_onnx_bytes(std::string_view bytes, std::string_view name,
                                const OnnxImportOptions& options) {
  return with_source(name, [&] {
    BRAID_CHECK(bytes.size() <= static_cast<size_t>(INT_MAX), kUnsupported,
                "models over 2 GiB (external data) are not supported");
    onnx::ModelProto model;
    BRAID_CHECK(model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())), kBad,
                "not a valid ONNX model (protobuf parsing failed)");
    return import_model(model, name, options);
  });
}

ImportedModel import_onnx_file(const std::string& path, const OnnxImportOptions& options) {
  return with_source(path, [&] {
    std::error_code ec;
    BRAID_CHECK(std::filesystem::exists(path, ec), ErrorCode::kNotFound, "no such file");
    BRAID_CHECK(std::filesystem::is_regular_file(path, ec), ErrorCode::kInvalidArgument,
                "not a regular file");
    std::ifstream f(path, std::ios::binary);
    BRAID_CHECK(f.good(), ErrorCode::kNotFound, "cannot open the file");
    onnx::ModelProto model;
    BRAID_CHECK(model.ParseFromIstream(&f), kBad,
                "not a valid ONNX model (protobuf parsing failed)");
    return import_model(model, path, options);
  });
}

}  // namespace braid::models
