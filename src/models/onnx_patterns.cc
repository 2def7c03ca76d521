#include "models/onnx_patterns.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <numbers>
#include <vector>

namespace braid::models::onnx_detail {

bool is_default_domain(const std::string& domain) {
  return domain.empty() || domain == "ai.onnx";
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

std::string describe_node(const onnx::GraphProto& graph, int i) {
  const onnx::NodeProto& n = graph.node(i);
  if (!n.name().empty()) return "node '" + n.name() + "'";
  return "node #" + std::to_string(i) + " (" + n.op_type() + ")";
}

namespace {

class PatternFinder {
 public:
  PatternFinder(const onnx::ModelProto& model, const std::unordered_map<std::string, int>& producer,
                const std::unordered_map<std::string, int>& uses, const Constants& constants)
      : m_(model), g_(model.graph()), producer_(producer), uses_(uses), consts_(constants) {}

  NodePatterns find() {
    find_fused_activations();
    find_erf_gelus();
    return std::move(p_);
  }

 private:
  int uses(const std::string& name) const {
    auto it = uses_.find(name);
    return it == uses_.end() ? 0 : it->second;
  }

  // Conv + activation pairs that braid exported from one Conv with a fused activation.
  void find_fused_activations() {
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
      if (p == producer_.end() || uses(act.input(0)) != 1) continue;
      const onnx::NodeProto& conv = g_.node(p->second);
      if (conv.op_type() != "Conv" || !is_default_domain(conv.domain()) ||
          conv.output_size() != 1 || p_.fused_activation.count(p->second))
        continue;
      p_.fused_activation[p->second] = i;
      p_.fused_nodes.insert(i);
    }
  }

  // A float scalar constant's value (GELU's sqrt(2), 1 and 0.5): an initializer, or a Constant
  // node (planning runs before the walk has read those).
  std::optional<float> scalar_constant(const std::string& name) const {
    Tensor t;
    if (const Constant* c = consts_.find(name)) {
      t = read_constant(*c);
    } else if (auto p = producer_.find(name); p != producer_.end()) {
      const onnx::NodeProto& n = g_.node(p->second);
      if (n.op_type() != "Constant" || !is_default_domain(n.domain()) || n.attribute_size() != 1)
        return std::nullopt;
      const onnx::AttributeProto& a = n.attribute(0);
      if (a.name() == "value_float" && a.type() == onnx::AttributeProto::FLOAT) return a.f();
      if (a.name() != "value" || a.type() != onnx::AttributeProto::TENSOR) return std::nullopt;
      t = read_tensor(a.t(), "Constant " + describe_node(g_, p->second));
    } else {
      return std::nullopt;
    }
    if (t.dtype != ir::DType::kFloat32 || t.floats.size() != 1) return std::nullopt;
    return t.floats[0];
  }

  // PyTorch before opset 20 exports the exact GELU as Div(x, sqrt 2) -> Erf -> Add(1) ->
  // Mul(x) -> Mul(0.5) (nn.GELU) or with the 0.5 applied to x first (HF BERT's
  // x * 0.5 * (1 + erf(x / sqrt 2))). Each match becomes one braid Gelu written by the last
  // Mul; its other nodes are skipped. Intermediate values must have no other reader.
  void find_erf_gelus() {
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
      if (uses(out) != 1 || it == readers.end() || it->second.size() != 1) return std::nullopt;
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
      if (e.op_type() != "Erf" || !is_default_domain(e.domain()) || e.input_size() != 1 ||
          e.output_size() != 1)
        continue;
      auto p = producer_.find(e.input(0));
      if (p == producer_.end() || !is_op(p->second, "Div") || uses(e.input(0)) != 1) continue;
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
                                                 uses(other) == 1 && other_is(h->second, x, 0.5f)) {
        parts.push_back(h->second);  // (x * 0.5) * (1 + erf)
        last = *mul;
      } else {
        continue;
      }
      if (p_.fused_nodes.count(last) || p_.erf_gelu_input.count(last)) continue;
      p_.erf_gelu_input[last] = x;
      p_.erf_gelu_parts.insert(parts.begin(), parts.end());
    }
  }

  const onnx::ModelProto& m_;
  const onnx::GraphProto& g_;
  const std::unordered_map<std::string, int>& producer_;
  const std::unordered_map<std::string, int>& uses_;
  const Constants& consts_;
  NodePatterns p_;
};

}  // namespace

NodePatterns find_node_patterns(const onnx::ModelProto& model,
                                const std::unordered_map<std::string, int>& producer,
                                const std::unordered_map<std::string, int>& uses,
                                const Constants& constants) {
  return PatternFinder(model, producer, uses, constants).find();
}

}  // namespace braid::models::onnx_detail
