// ONNX import, the graph walk: reads the model's inputs, initializers and nodes in topological
// order and builds braid's graph through ir::GraphBuilder. What each op type becomes is in the
// op table (onnx_ops.cc); constants are read by onnx_tensor.cc, attributes by
// onnx_attributes.cc, node patterns that become one braid node are found by onnx_patterns.cc,
// and the shapes are cross-checked by onnx_shape_check.cc.
#include "models/onnx_import.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "base/error.h"
#include "ir/limits.h"
#include "ir/unit_graph.h"
#include "models/onnx_attributes.h"
#include "models/onnx_fold.h"
#include "models/onnx_ops.h"
#include "models/onnx_patterns.h"
#include "models/onnx_shape_check.h"
#include "models/onnx_tensor.h"

namespace braid::models {
namespace {

using ir::OpKind;
using onnx_detail::Constant;
using onnx_detail::is_default_domain;
using onnx_detail::NodeAttributes;
using onnx_detail::onnx_type_name;
using onnx_detail::OnnxOp;
using onnx_detail::OnnxOpRole;
using onnx_detail::Tensor;
constexpr auto kBad = ErrorCode::kInvalidModel;
constexpr auto kUnsupported = ErrorCode::kUnsupported;

// True when every element of a bool/float/int tensor constant is zero (false).
bool is_all_zero(const onnx::TensorProto& t) {
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

class Importer {
 public:
  Importer(onnx::ModelProto& model, std::string graph_name, const OnnxImportOptions& options)
      : m_(model), g_(model.graph()), options_(options), b_(std::move(graph_name)) {}

  ImportedModel run() {
    BRAID_CHECK(options_.batch >= 1, ErrorCode::kInvalidArgument, "batch must be >= 1, got ",
                options_.batch);
    BRAID_CHECK(
        options_.limits.max_tensor_elements >= 1 && options_.limits.max_activation_bytes >= 1,
        ErrorCode::kInvalidArgument, "tensor limits must be >= 1, got ",
        options_.limits.max_tensor_elements, " elements and ", options_.limits.max_activation_bytes,
        " bytes");
    read_opset();
    for (int i = 0; i < g_.initializer_size(); ++i) {
      const onnx::TensorProto& t = g_.initializer(i);
      BRAID_CHECK(!t.name().empty(), kBad, "initializer #", i, " has no name");
      BRAID_CHECK(!consts_.contains(t.name()), kBad, "initializer '", t.name(),
                  "' is defined twice");
      consts_.set(t.name(), {&t, nullptr, t.name(), "initializer '" + t.name() + "'"});
    }
    BRAID_CHECK(g_.sparse_initializer_size() == 0, kUnsupported,
                "sparse initializers are not supported");
    BRAID_CHECK(g_.node_size() > 0, kBad, "the model has no nodes");
    add_graph_inputs();
    std::vector<int> order = topological_order();
    check_op_types(order);
    patterns_ = onnx_detail::find_node_patterns(m_, producer_, uses_, consts_);
    for (int i : order) import_node(i);
    add_graph_outputs();
    std::shared_ptr<const ir::Graph> graph = build_with_hints();
    ir::check_limits(*graph, options_.limits);
    onnx_detail::check_shapes(*graph, onnx_detail::declared_shapes(g_), "the model declares");
    onnx::ModelProto inferred = onnx_detail::infer_onnx_shapes(m_, *graph);
    onnx_detail::check_shapes(*graph, onnx_detail::declared_shapes(inferred.graph()),
                              "ONNX shape inference gives");
    ImportedModel out{graph, ir::Weights(graph->num_values())};
    for (auto& [id, data] : weights_) out.weights.set(id, std::move(data));
    out.declared = onnx_detail::declared_types(g_, *graph);
    return out;
  }

 private:
  // "node 'conv1'", or "node #3 (Conv)" for an unnamed node.
  std::string describe(int i) const { return onnx_detail::describe_node(g_, i); }

  void read_opset() {
    bool found = false;
    for (const auto& o : m_.opset_import())
      if (is_default_domain(o.domain())) {
        opset_ = o.version();
        found = true;
      }
    if (!found)  // a model of another domain only (e.g. ai.onnx.preview.training): say that
      for (int i = 0; i < g_.node_size(); ++i)
        BRAID_CHECK(is_default_domain(g_.node(i).domain()), kUnsupported, describe(i),
                    ": unsupported op type '", g_.node(i).op_type(), "' (domain '",
                    g_.node(i).domain(), "')");
    BRAID_CHECK(found, kBad, "the model imports no opset of the default ONNX domain");
    BRAID_CHECK(opset_ >= kMinOnnxOpset && opset_ <= kMaxOnnxOpset, kUnsupported, "opset ", opset_,
                " of the default ONNX domain is not supported; braid imports opsets ",
                kMinOnnxOpset, " to ", kMaxOnnxOpset);
  }

  // True when node i's input k is a constant (so far in topological order) or, for ops that
  // read only their input's shape, any tensor.
  bool input_is_constant(int i, int k, const onnx_detail::FoldableOp& f,
                         const std::unordered_set<std::string>& constants) const {
    const std::string& name = g_.node(i).input(k);
    return name.empty() || constants.count(name) || (f.needs_only_shape && k == 0);
  }

  // Every op braid cannot import, reported at once: a model rarely lacks just one op, and the
  // whole list is what a user needs to judge the gap. A pass over the topological order tracks
  // which values are constants, so that an op braid only folds counts as unsupported only where
  // its inputs are computed at run time.
  void check_op_types(const std::vector<int>& order) const {
    struct Problem {
      std::vector<int> nodes;
      std::string why;  // of the first node
    };
    std::vector<std::pair<std::string, Problem>> problems;  // by op type, in order of appearance
    auto report = [&](const std::string& type, int i, std::string why) {
      auto it = std::find_if(problems.begin(), problems.end(),
                             [&](const auto& p) { return p.first == type; });
      if (it == problems.end()) it = problems.insert(problems.end(), {type, {{}, std::move(why)}});
      it->second.nodes.push_back(i);
    };
    std::unordered_set<std::string> constants;
    for (const onnx::TensorProto& t : g_.initializer()) constants.insert(t.name());
    for (int i : order) {
      const onnx::NodeProto& n = g_.node(i);
      if (!is_default_domain(n.domain())) {
        report(n.op_type(), i, "domain '" + n.domain() + "'");
        continue;
      }
      const OnnxOp* op = onnx_detail::find_onnx_op(n.op_type());
      const onnx_detail::FoldableOp* fold = onnx_detail::find_foldable_op(n.op_type());
      bool all_constant = fold != nullptr;
      for (int k = 0; fold && k < n.input_size(); ++k)
        all_constant = all_constant && input_is_constant(i, k, *fold, constants);
      const bool aliases_constant = op &&
                                    (op->role == OnnxOpRole::kAlias || n.op_type() == "Identity") &&
                                    n.input_size() >= 1 && constants.count(n.input(0));
      if ((fold && all_constant && opset_ >= fold->since_opset) || aliases_constant ||
          (op && op->role == OnnxOpRole::kConstant)) {
        for (const std::string& out : n.output()) constants.insert(out);
        continue;
      }
      if (op && opset_ >= op->since_opset) continue;
      const int since = op ? op->since_opset : fold ? fold->since_opset : 0;
      if (since > opset_) {
        report(n.op_type(), i,
               "braid imports it from opset " + std::to_string(since) + ", the model has opset " +
                   std::to_string(opset_));
      } else if (fold) {
        std::string runtime;
        for (int k = 0; runtime.empty() && k < n.input_size(); ++k)
          if (!input_is_constant(i, k, *fold, constants)) runtime = n.input(k);
        report(n.op_type(), i,
               "braid only folds " + n.op_type() + " at import, when its inputs are constants; '" +
                   runtime + "' is computed at run time");
      } else {
        report(n.op_type(), i, "");
      }
    }
    if (problems.empty()) return;
    auto describe_all = [&](const Problem& p) {
      constexpr size_t kShown = 3;
      std::string s;
      for (size_t k = 0; k < std::min(kShown, p.nodes.size()); ++k)
        s += (k ? ", " : "") + describe(p.nodes[k]);
      if (p.nodes.size() > kShown) s += " and " + std::to_string(p.nodes.size() - kShown) + " more";
      return s;
    };
    if (problems.size() == 1 && problems[0].second.nodes.size() == 1) {
      const auto& [type, p] = problems[0];
      BRAID_THROW(kUnsupported, describe(p.nodes[0]), ": unsupported op type '", type, "'",
                  p.why.empty() ? "" : " (" + p.why + ")");
    }
    size_t num_nodes = 0;
    for (const auto& p : problems) num_nodes += p.second.nodes.size();
    std::string list;
    for (const auto& [type, p] : problems)
      list += "\n  '" + type + "': " + std::to_string(p.nodes.size()) +
              (p.nodes.size() == 1 ? " node (" : " nodes (") + describe_all(p) + ")" +
              (p.why.empty() ? "" : "; " + p.why);
    BRAID_THROW(kUnsupported, problems.size(), " unsupported op type",
                problems.size() == 1 ? "" : "s", " in ", num_nodes,
                " nodes (`braid ops` lists the supported ones):", list);
  }

  // Fixes the graph inputs' dynamic dims (input_shapes.h's rules) and adds the inputs. IR < 4
  // lists initializers as inputs too; those are skipped.
  void add_graph_inputs() {
    std::vector<const onnx::ValueInfoProto*> inputs;
    std::vector<DeclaredInput> declared;
    for (const onnx::ValueInfoProto& in : g_.input()) {
      if (consts_.contains(in.name())) continue;
      const std::string what = "graph input '" + in.name() + "'";
      BRAID_CHECK(!in.name().empty(), kBad, "a graph input has no name");
      BRAID_CHECK(in.type().has_tensor_type(), kUnsupported, what, " is not a tensor");
      const auto& tt = in.type().tensor_type();
      BRAID_CHECK(onnx_detail::dtype_of_onnx(tt.elem_type()).has_value(), kUnsupported, what,
                  " has element type ", onnx_type_name(tt.elem_type()),
                  "; braid supports float32 (float16, bfloat16 upcast), int64 and bool inputs");
      BRAID_CHECK(tt.has_shape(), kUnsupported, what, " has no shape; braid needs static shapes");
      DeclaredInput d{.name = in.name()};
      for (const auto& dim : tt.shape().dim())
        d.dims.push_back({.value = dim.has_dim_value() ? dim.dim_value() : 0,
                          .param = dim.has_dim_param() ? dim.dim_param() : std::string()});
      inputs.push_back(&in);
      declared.push_back(std::move(d));
    }
    const std::vector<ir::Shape> shapes =
        fix_input_shapes(declared, options_.inputs, options_.batch);
    for (size_t i = 0; i < inputs.size(); ++i) {
      const std::string& name = inputs[i]->name();
      const std::string what = "graph input '" + name + "'";
      ir::TensorType type{
          .dtype = *onnx_detail::dtype_of_onnx(inputs[i]->type().tensor_type().elem_type())};
      int64_t elements = 1;
      for (int64_t v : shapes[i]) {
        BRAID_CHECK(v <= options_.limits.max_tensor_elements / elements, kUnsupported, what,
                    " has more than ", options_.limits.max_tensor_elements,
                    " elements, which exceeds the limit (raise with --max-tensor-elements)");
        elements *= v;
        type.shape.push_back(v);
      }
      BRAID_CHECK(values_.count(name) == 0, kBad, what, " is declared twice");
      values_[name] = b_.add_input(name, type);
    }
  }

  // Kahn's algorithm, ties by file order: a file already in order keeps its order.
  std::vector<int> topological_order() {
    const int num = g_.node_size();
    for (int i = 0; i < num; ++i)
      for (const std::string& out : g_.node(i).output()) {
        if (out.empty()) continue;
        BRAID_CHECK(values_.count(out) == 0 && !consts_.contains(out), kBad, describe(i),
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
        BRAID_CHECK(values_.count(in) || consts_.contains(in), kBad, describe(i), ": input '", in,
                    "' is not defined (no graph input, initializer or node output has that name)");
      }
    for (const auto& out : g_.output()) {
      ++uses_[out.name()];
      BRAID_CHECK(
          producer_.count(out.name()) || values_.count(out.name()) || consts_.contains(out.name()),
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

  // ---- inputs ----
  // A float constant used as an operand becomes a parameter, once per underlying constant.
  ValueId value(int i, const std::string& name) {
    if (auto it = values_.find(name); it != values_.end()) return it->second;
    const Constant* c = constant(name);
    BRAID_ASSERT(c != nullptr, "inputs were checked in topological_order");
    if (auto it = values_.find(c->canonical); it != values_.end()) return it->second;
    Tensor t = onnx_detail::read_constant(*c);
    BRAID_CHECK(t.dtype == ir::DType::kFloat32, kUnsupported, describe(i), ": input '", name,
                "' is a constant of type ", onnx_type_name(t.elem_type),
                "; braid takes int64 and bool constants only as Reshape/Expand shapes, Split "
                "sizes, Pad pads, ReduceMean axes, Slice bounds and Gather indices");
    ValueId id =
        b_.add_parameter(c->canonical, {ir::DType::kFloat32, t.shape}, ir::ParamInit::external());
    values_[c->canonical] = id;
    consts_.materialize(c->canonical);
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

  const Constant* constant(const std::string& name) const { return consts_.find(name); }

  // `to` names what `from` names: a constant stays a constant (foldable downstream) even when it
  // also became a parameter.
  void alias(const std::string& to, const std::string& from) {
    if (consts_.contains(from)) {
      consts_.set(to, consts_.at(from));
    } else {
      values_[to] = values_.at(from);
    }
  }

  void import_constant(int i, const NodeAttributes& attrs) {
    using A = onnx::AttributeProto;
    const onnx::NodeProto& n = g_.node(i);
    check_extra_outputs(i, 1);
    BRAID_CHECK(n.attribute_size() == 1, kBad, describe(i),
                ": Constant needs exactly one value attribute");
    Constant c{nullptr, nullptr, n.output(0), "Constant " + describe(i)};
    auto t = std::make_shared<Tensor>();
    if (const A* a = attrs.find("value", A::TENSOR)) {
      c.proto = &a->t();
    } else if (const A* a = attrs.find("value_float", A::FLOAT)) {
      t->floats = {a->f()};
    } else if (const A* a = attrs.find("value_floats", A::FLOATS)) {
      t->floats.assign(a->floats().begin(), a->floats().end());
      t->shape = {a->floats_size()};
    } else if (const A* a = attrs.find("value_int", A::INT)) {
      t->dtype = ir::DType::kInt64;
      t->elem_type = onnx::TensorProto::INT64;
      t->ints = {a->i()};
    } else if (const A* a = attrs.find("value_ints", A::INTS)) {
      t->dtype = ir::DType::kInt64;
      t->elem_type = onnx::TensorProto::INT64;
      t->ints.assign(a->ints().begin(), a->ints().end());
      t->shape = {a->ints_size()};
    }
    if (!c.proto) c.tensor = std::move(t);
    consts_.set(n.output(0), std::move(c));
  }

  // braid runs inference: a Dropout is an alias of its input only when it provably does not
  // drop (is_test=1 before opset 7; no training_mode, a constant false one, or ratio 0 after).
  void check_inference_dropout(int i, const NodeAttributes& attrs) const {
    const onnx::NodeProto& n = g_.node(i);
    if (opset_ < 7) {
      BRAID_CHECK(attrs.get_int("is_test", 0) != 0, kUnsupported, describe(i),
                  ": Dropout in training mode (is_test=0); braid runs inference only");
      return;
    }
    if (n.input_size() < 3 || n.input(2).empty()) return;
    const Constant* training = constant(n.input(2));
    if (training && training->proto && is_all_zero(*training->proto)) return;
    if (n.input_size() >= 2 && !n.input(1).empty())
      if (const Constant* ratio = constant(n.input(1));
          ratio && ratio->proto && is_all_zero(*ratio->proto))
        return;
    BRAID_THROW(
        kUnsupported, describe(i),
        ": Dropout with training_mode that is not a constant false; braid runs inference only");
  }

  // Node i folds when every input is a constant (Shape: any tensor) at an opset the evaluator
  // covers; check_op_types applied the same rule.
  bool can_fold(int i, const onnx_detail::FoldableOp& f) const {
    const onnx::NodeProto& n = g_.node(i);
    if (opset_ < f.since_opset) return false;
    for (int k = 0; k < n.input_size(); ++k) {
      const std::string& name = n.input(k);
      if (!name.empty() && !consts_.contains(name) && !(f.needs_only_shape && k == 0)) return false;
    }
    return true;
  }

  void fold_node(int i, const onnx_detail::FoldableOp& f, const NodeAttributes& attrs) {
    const onnx::NodeProto& n = g_.node(i);
    attrs.check_known(f.attributes);
    std::vector<Tensor> data;  // the inputs, read; reserved so that pointers stay valid
    data.reserve(n.input_size());
    onnx_detail::FoldContext context{n, attrs, opset_, {}, options_.limits.max_tensor_elements};
    for (int k = 0; k < n.input_size(); ++k) {
      const std::string& name = n.input(k);
      if (name.empty()) {
        context.inputs.push_back(nullptr);
        continue;
      }
      if (f.needs_only_shape && k == 0) {  // the shape alone, without reading the data
        Tensor t;
        if (auto v = values_.find(name); v != values_.end()) {
          t.shape = b_.type(v->second).shape;
        } else {
          const Constant& c = consts_.at(name);
          t.shape =
              c.proto ? ir::Shape(c.proto->dims().begin(), c.proto->dims().end()) : c.tensor->shape;
        }
        data.push_back(std::move(t));
      } else {
        data.push_back(onnx_detail::read_constant(consts_.at(name)));
      }
      context.inputs.push_back(&data.back());
    }
    std::vector<Tensor> out = f.fold(context);
    BRAID_ASSERT(!out.empty(), "a fold function returns its outputs");
    check_extra_outputs(i, static_cast<int>(out.size()));
    for (size_t k = 0; k < out.size(); ++k) {
      const std::string& name = n.output(static_cast<int>(k));
      consts_.set(name, {nullptr, std::make_shared<const Tensor>(std::move(out[k])), name,
                         "the constant '" + name + "' folded from " + describe(i)});
    }
  }

  // Softmax before opset 13 normalizes over the dims [axis, rank) flattened into one; on any
  // axis but the last that is Reshape to 2-D, Softmax over dim 1, Reshape back (ONNX's own
  // definition of the old form). Returns false when axis is the last dim: the plain Softmax.
  bool import_coerced_softmax(int i, const NodeAttributes& attrs) {
    const onnx::NodeProto& n = g_.node(i);
    const std::vector<ValueId> in = operands(i, 1);
    const ir::Shape shape = b_.type(in[0]).shape;
    const int64_t rank = static_cast<int64_t>(shape.size());
    int64_t axis = attrs.get_int("axis", 1);
    BRAID_CHECK(axis >= -rank && axis < rank, kBad, describe(i), ": axis ", axis,
                " out of range for rank ", rank);
    if (axis < 0) axis += rank;
    if (axis == rank - 1) return false;
    check_extra_outputs(i, 1);
    const int64_t outer = ir::num_elements({shape.begin(), shape.begin() + axis});
    const std::string name = n.name().empty() ? n.output(0) : n.name();
    // Intermediate values get names of their own: an unnamed node is named after its output.
    const NodeId flat = b_.add_node(OpKind::Reshape, ir::ReshapeAttrs{{outer, -1}}, {in[0]},
                                    name + "/coerce_2d", 1, {name + "/coerce_2d"});
    const NodeId soft = b_.add_node(OpKind::Softmax, ir::AxisAttrs{1}, {b_.output(flat)}, name, 1,
                                    {name + "/softmax_2d"});
    const NodeId back = b_.add_node(OpKind::Reshape, ir::ReshapeAttrs{shape}, {b_.output(soft)},
                                    name + "/restore", 1, {n.output(0)});
    values_[n.output(0)] = b_.output(back);
    node_ids_[b_.node(back).name] = back;
    return true;
  }

  // A kRewrite node: its steps become braid nodes, the intermediate ones named after the node.
  void import_rewrite(int i, const OnnxOp& op, const NodeAttributes& attrs) {
    const onnx::NodeProto& n = g_.node(i);
    check_extra_outputs(i, 1);
    const std::vector<ValueId> in = operands(i, op.max_operands);
    std::vector<ir::TensorType> in_types;
    for (ValueId v : in) in_types.push_back(b_.type(v));
    const std::vector<onnx_detail::RewriteStep> steps =
        op.rewrite(onnx_detail::OpContext{n, attrs, opset_, in_types, consts_});
    BRAID_ASSERT(!steps.empty(), "a rewrite has at least one step");
    const std::string name = n.name().empty() ? n.output(0) : n.name();
    std::vector<ValueId> outputs;
    for (size_t j = 0; j < steps.size(); ++j) {
      const onnx_detail::RewriteStep& step = steps[j];
      const bool last = j + 1 == steps.size();
      std::vector<ValueId> step_in;
      for (int k : step.operands) {
        BRAID_ASSERT(k < static_cast<int>(in.size()) && -1 - k < static_cast<int>(j),
                     "a step reads an operand or an earlier step");
        step_in.push_back(k >= 0 ? in[k] : outputs[-1 - k]);
      }
      const std::string step_name = last ? name : name + "/" + step.suffix;
      const NodeId id = b_.add_node(step.kind, step.attrs, std::move(step_in), step_name, 1,
                                    {last ? n.output(0) : step_name});
      const ir::TensorType& t = b_.type(b_.output(id));
      BRAID_CHECK(t.elements() <= options_.limits.max_tensor_elements, kUnsupported, describe(i),
                  ": output '", b_.value(b_.output(id)).name, "' of shape ", ir::to_string(t.shape),
                  " has ", t.elements(), " elements, which exceeds the limit of ",
                  options_.limits.max_tensor_elements, " (raise with --max-tensor-elements)");
      outputs.push_back(b_.output(id));
      node_ids_[b_.node(id).name] = id;
    }
    values_[n.output(0)] = outputs.back();
  }

  void import_node(int i) {
    const onnx::NodeProto& n = g_.node(i);
    const NodeAttributes attrs(n, describe(i));
    if (const auto* f = onnx_detail::find_foldable_op(n.op_type()); f && can_fold(i, *f))
      return fold_node(i, *f, attrs);
    const OnnxOp* found = onnx_detail::find_onnx_op(n.op_type());
    BRAID_CHECK(found != nullptr, kUnsupported, describe(i), ": unsupported op type '", n.op_type(),
                "' (braid only folds it, when its inputs are constants)");
    const OnnxOp& op = *found;
    attrs.check_known(op.attributes);
    if (patterns_.fused_nodes.count(i)) return;     // its Conv already wrote its output
    if (patterns_.erf_gelu_parts.count(i)) return;  // folded into the Gelu its pattern's end writes
    if (auto g = patterns_.erf_gelu_input.find(i); g != patterns_.erf_gelu_input.end())
      return import_erf_gelu(i, g->second);
    if (op.role == OnnxOpRole::kConstant) return import_constant(i, attrs);
    if (op.role == OnnxOpRole::kRewrite) return import_rewrite(i, op, attrs);
    const bool dropout = op.role == OnnxOpRole::kAlias;
    if (dropout) check_inference_dropout(i, attrs);
    if (dropout ||
        (n.op_type() == "Identity" && n.input_size() == 1 && consts_.contains(n.input(0)))) {
      // Inference-time Dropout and Identity of a constant only rename their input.
      BRAID_CHECK(n.input_size() >= 1 && !n.input(0).empty(), kBad, describe(i), ": has no input");
      check_extra_outputs(i, 1);
      return alias(n.output(0), n.input(0));
    }
    if (n.op_type() == "Softmax" && opset_ < 13 && import_coerced_softmax(i, attrs)) return;
    const OpKind kind =
        op.role == OnnxOpRole::kReshape ? OpKind::Reshape : *ir::op_kind_from_onnx(n.op_type());
    // Gather's indices are an operand when computed at run time, GatherAttrs when constant.
    const bool constant_indices =
        kind == OpKind::Gather && n.input_size() >= 2 && constant(n.input(1)) != nullptr;
    std::vector<ValueId> in = operands(i, constant_indices ? 1 : op.max_operands);
    std::vector<ir::TensorType> in_types;
    for (ValueId v : in) in_types.push_back(b_.type(v));
    const onnx_detail::OpContext context{n, attrs, opset_, in_types, consts_};
    ir::OpAttrs op_attrs = op.import ? op.import(context) : ir::OpAttrs{};
    const int num_outputs = op.output_per_onnx_output ? n.output_size() : 1;
    check_extra_outputs(i, num_outputs);
    std::vector<std::string> out_names(n.output().begin(), n.output().begin() + num_outputs);
    if (auto f = patterns_.fused_activation.find(i); f != patterns_.fused_activation.end()) {
      std::get<ir::ConvAttrs>(op_attrs).activation =
          *onnx_detail::activation_of(g_.node(f->second));
      out_names[0] = g_.node(f->second).output(0);
    }
    const std::string name = n.name().empty() ? out_names[0] : n.name();
    NodeId id = b_.add_node(kind, std::move(op_attrs), std::move(in), name, num_outputs, out_names);
    for (int k = 0; k < num_outputs; ++k) {
      const ir::TensorType& t = b_.type(b_.output(id, k));
      // Checked here, before a larger tensor's FLOP count could overflow in build().
      BRAID_CHECK(t.elements() <= options_.limits.max_tensor_elements, kUnsupported, describe(i),
                  ": output '", out_names[k], "' of shape ", ir::to_string(t.shape), " has ",
                  t.elements(), " elements, which exceeds the limit of ",
                  options_.limits.max_tensor_elements, " (raise with --max-tensor-elements)");
      values_[out_names[k]] = b_.output(id, k);
    }
    node_ids_[b_.node(id).name] = id;
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

  onnx::ModelProto& m_;
  const onnx::GraphProto& g_;
  OnnxImportOptions options_;
  ir::GraphBuilder b_;
  int64_t opset_ = 0;
  std::unordered_map<std::string, ValueId> values_;  // ONNX name -> braid value
  onnx_detail::Constants consts_;                    // ONNX name -> constant not (yet) a value
  std::unordered_map<std::string, int> producer_;    // ONNX name -> node index
  std::unordered_map<std::string, int> uses_;        // input references plus graph outputs
  onnx_detail::NodePatterns patterns_;
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
  ImportedModel imported = Importer(model, name, options).run();
  ModelMetadata& meta = imported.metadata;
  meta.producer_name = model.producer_name();
  meta.domain = model.domain();
  meta.description = model.doc_string();
  meta.graph_name = model.graph().name();
  meta.graph_description = model.graph().doc_string();
  meta.version = model.model_version();
  for (const auto& p : model.metadata_props()) meta.custom.emplace_back(p.key(), p.value());
  return imported;
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
