// ONNX import, the node patterns found before the walk (onnx_import.cc), each imported as one
// braid node: the Conv + activation pairs braid's own export wrote as two nodes, and the exact
// GELU that PyTorch before opset 20 exports as five.
//
//   NodePatterns p = find_node_patterns(model, producer, uses, constants);
//   if (p.erf_gelu_parts.count(i)) ...  // node i is skipped: its pattern's last node writes it
#pragma once

#include <onnx/onnx_pb.h>

#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "ir/op.h"
#include "models/onnx_tensor.h"

namespace braid::models::onnx_detail {

// ONNX's default domain: "" or "ai.onnx".
bool is_default_domain(const std::string& domain);
// The activation a Conv can carry (ir::ConvAttrs) for a Relu, Sigmoid, Tanh or exact Gelu node.
std::optional<ir::Activation> activation_of(const onnx::NodeProto& node);
// "node 'conv1'", or "node #3 (Conv)" for an unnamed node.
std::string describe_node(const onnx::GraphProto& graph, int i);

struct NodePatterns {
  std::unordered_map<int, int> fused_activation;        // Conv node -> its activation node
  std::unordered_set<int> fused_nodes;                  // activation nodes folded into a Conv
  std::unordered_map<int, std::string> erf_gelu_input;  // a GELU pattern's last node -> its x
  std::unordered_set<int> erf_gelu_parts;               // the other nodes of those patterns
};

// `producer`: value name -> the index of the node writing it; `uses`: value name -> its input
// references plus graph outputs; `constants`: the initializers (the walk has read nothing yet).
NodePatterns find_node_patterns(const onnx::ModelProto& model,
                                const std::unordered_map<std::string, int>& producer,
                                const std::unordered_map<std::string, int>& uses,
                                const Constants& constants);

}  // namespace braid::models::onnx_detail
