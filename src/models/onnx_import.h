// ONNX import: an .onnx file (or its bytes) -> an ir::Graph plus the initializers' data.
//
//   ImportedModel m = import_onnx_file("googlenet.onnx", {.batch = 8});
//   ir::UnitGraph units = ir::fuse(m.graph);
//   m.weights.data(m.graph->find_value("conv1.weight").value());
//
// What the importer does, in order:
//  1. parses the ModelProto (protobuf); bytes that are not a model -> kInvalidModel;
//  2. rejects ops outside braid's op set (op_kinds.inc) with kUnsupported, naming node and type;
//  3. sorts the nodes topologically (files may list them in any order; a cycle is an error);
//  4. maps each node to an OpKind with typed attributes through ir::GraphBuilder, whose shape
//     inference is authoritative. Constant inputs become attributes (Reshape shape, Pad pads,
//     Split sizes); float initializers and Constant nodes become parameters; Dropout and
//     Identity-of-initializer become aliases;
//  5. cross-checks braid's shapes against ONNX's own shape inference (and any value_info the file
//     declares): a different static shape is a shape-mismatch error naming the node.
// Symbolic (dim_param or unset) batch dims of graph inputs take OnnxImportOptions::batch; a
// fixed 0 is a zero-size tensor (unsupported); any other dynamic
// dim is an error. Only embedded float32 data is read (no external data files).
//
// Files written by export_onnx_* carry braid metadata (metadata_props) that the importer restores:
//   "braid.unit_hints"        JSON list of lists of node names (Graph::unit_hints);
//   "braid.fused_activations" JSON list of activation node names that were a Conv's fused
//                             activation (ConvAttrs::activation) before export.
// Metadata that names unknown nodes or does not fit the graph is ignored.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "ir/graph.h"
#include "ir/weights.h"

namespace braid::models {

struct OnnxImportOptions {
  int64_t batch = 1;  // given to symbolic / dynamic (dim_param or unset) dim 0 of graph inputs
};

struct ImportedModel {
  std::shared_ptr<const ir::Graph> graph;
  ir::Weights weights;  // data for every parameter of `graph`
};

// Throws braid::Error: kNotFound (no such file), kInvalidModel (not ONNX, undefined value,
// cycle, shape mismatch), kUnsupported (op, attribute or data type braid does not handle).
// Messages start with the file name (or `name`).
ImportedModel import_onnx_file(const std::string& path, const OnnxImportOptions& options = {});
ImportedModel import_onnx_bytes(std::string_view bytes, std::string_view name,
                                const OnnxImportOptions& options = {});

}  // namespace braid::models
