// ONNX import, shape checks: braid's shape inference (ir::GraphBuilder) is authoritative; these
// cross-check it against the shapes a file declares (value_info, outputs) and against ONNX's own
// shape inference, so that a misread attribute or an inconsistent file is an error naming the
// node rather than a silently different graph.
//
//   check_shapes(graph, declared_shapes(model.graph()), "the model declares");
//   onnx::ModelProto inferred = infer_onnx_shapes(model, graph);
//   check_shapes(graph, declared_shapes(inferred.graph()), "ONNX shape inference gives");
//
// Internal to the importer; not part of the models API.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>
#include <string_view>
#include <unordered_map>

#include "ir/graph.h"

namespace braid::models::onnx_detail {

// ONNX value name -> its declared type (value_info and graph outputs).
using DeclaredShapes = std::unordered_map<std::string, const onnx::ValueInfoProto*>;
DeclaredShapes declared_shapes(const onnx::GraphProto& g);

// ONNX's own shape inference on a clean copy of `model`: no weights beyond small constants,
// graph inputs with braid's shapes (batch filled in), no declared shapes (compared separately),
// no metadata or functions. Its result only cross-checks braid's shapes; failures are ignored.
// Call it only after braid validated every node: libonnx's shape inference is not hardened
// against malformed nodes (the fuzzer crashed it in convPoolShapeInference).
onnx::ModelProto infer_onnx_shapes(const onnx::ModelProto& model, const ir::Graph& graph);

// Throws kInvalidModel naming the node when a static shape in `known` differs from braid's.
// `source` says where `known` came from ("the model declares").
void check_shapes(const ir::Graph& graph, const DeclaredShapes& known, std::string_view source);

}  // namespace braid::models::onnx_detail
