// ONNX export: an ir::Graph and its Weights -> a self-contained .onnx model that onnx.checker
// (full_check) accepts and ONNX Runtime loads.
//
//   ir::Graph g = models::build_zoo_model("squeezenet");
//   ir::Weights w = ir::Weights::generate(g, /*seed=*/42);
//   models::export_onnx_file(g, w, "squeezenet.onnx");
//
// Opset 17 (ir_version 8), or opset 20 (ir_version 9) when the graph uses Gelu, which entered the
// default domain at opset 20. Node, value and parameter names are kept, so import_onnx_* gives the
// same graph back. Where braid's IR is richer than ONNX's op set:
//  - a Conv with a fused activation becomes Conv + the activation node; the activation's name is
//    listed under metadata "braid.fused_activations" so that import fuses it back;
//  - Reshape shapes, Pad pads and Split sizes become int64 initializers;
//  - Graph::unit_hints are written as metadata "braid.unit_hints" (JSON lists of node names).
// Parameters become initializers with embedded float32 data (weights.check_complete first).
// Graph inputs, outputs and every intermediate carry their full static shapes.
#pragma once

#include <string>

#include "ir/graph.h"
#include "ir/weights.h"

namespace braid::models {

// Throws braid::Error: kInvalidModel when a parameter has no data, kUnsupported when the model
// exceeds protobuf's 2 GiB limit, kInvalidArgument when the file cannot be written.
void export_onnx_file(const ir::Graph& graph, const ir::Weights& weights, const std::string& path);
std::string export_onnx_bytes(const ir::Graph& graph, const ir::Weights& weights);

}  // namespace braid::models
