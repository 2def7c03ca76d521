// ONNX import: an .onnx file (or its bytes) -> an ir::Graph plus the initializers' data.
//
//   ImportedModel m = import_onnx_file("googlenet.onnx", {.batch = 8});
//   ir::UnitGraph units = ir::fuse(m.graph);
//   m.weights.data(m.graph->find_value("conv1.weight").value());
//
// What the importer does, in order:
//  1. parses the ModelProto (protobuf); bytes that are not a model -> kInvalidModel; an opset of
//     the default domain outside [kMinOnnxOpset, kMaxOnnxOpset] -> kUnsupported;
//  2. sorts the nodes topologically (files may list them in any order; a cycle is an error);
//  3. rejects every op it cannot import at once with kUnsupported, naming each op type and its
//     nodes: types outside supported_onnx_ops(), and ops braid only folds (Shape, Gather, ...)
//     whose inputs are not constants;
//  4. folds nodes whose inputs are all constants (or, for Shape, static shapes) into constants
//     (onnx_fold.h): the shape arithmetic exporters emit, ConstantOfShape-built weights;
//  5. maps each other node to an OpKind with typed attributes through ir::GraphBuilder, whose
//     shape inference is authoritative. Constant inputs become attributes (Reshape shape, Pad
//     pads, Split sizes); float initializers and Constant nodes become parameters; Dropout and
//     Identity-of-initializer become aliases;
//  6. refuses tensors over OnnxImportOptions' limits (elements per tensor, activation bytes);
//  7. cross-checks braid's shapes against ONNX's own shape inference (and any value_info the file
//     declares): a different static shape is a shape-mismatch error naming the node.
// Dynamic dims of graph inputs (a dim_param, no value, or the -1 and 0 exporters write for
// "dynamic") are fixed by OnnxImportOptions::inputs (--shape NAME=1x3x320x320, --dim NAME=VALUE;
// the rules are in input_shapes.h), a dynamic dim 0 otherwise by OnnxImportOptions::batch; a
// dynamic dim left unfixed is an error naming the input, the dim and both flags. The shape
// arithmetic on fixed dims (Shape -> Gather -> Concat -> Reshape) then folds like any other.
// Only embedded data is read (no external data files): float32 for weights (float16 and
// bfloat16 too, widened exactly to float32: DeclaredTypes below), int64 / int32 / bool for the
// constants that are folded or read as attributes.
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
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "ir/limits.h"
#include "ir/weights.h"
#include "models/element_type.h"
#include "models/input_shapes.h"

namespace braid::models {

struct OnnxImportOptions {
  int64_t batch = 1;   // given to a dynamic dim 0 of graph inputs that `inputs` leaves unfixed
  InputShapes inputs;  // --shape / --dim: the dynamic dims' values (input_shapes.h)
  // Limits that turn an absurd shape (a 100000x100000 input, a huge batch) into a clear error
  // at import instead of std::bad_alloc at run time.
  ir::TensorLimits limits;
};

// The opsets of the default ONNX domain braid imports. 21 is the newest whose changes to the
// supported ops braid has read (19 and 21 only add element types braid rejects anyway).
inline constexpr int kMinOnnxOpset = 1;
inline constexpr int kMaxOnnxOpset = 21;

// One ONNX op type braid imports, for `braid ops`.
struct SupportedOnnxOp {
  std::string op_type;
  int min_opset = kMinOnnxOpset;  // braid imports the op at model opsets [min_opset, max_opset]
  int max_opset = kMaxOnnxOpset;
  bool runs = false;   // becomes an op of braid's graph (or an alias) when its inputs are tensors
  bool folds = false;  // evaluated at import when its inputs are constants (or static shapes)
  // The braid ops it may become when it runs (none for a constant; a rewrite's every kind).
  std::vector<ir::OpKind> kinds;
};
// Sorted by op type.
std::vector<SupportedOnnxOp> supported_onnx_ops();

// What a ModelProto says about itself, as ONNX Runtime's ModelMetadata reports it.
struct ModelMetadata {
  std::string producer_name, domain;
  std::string description;  // the model's doc_string
  std::string graph_name, graph_description;
  int64_t version = 0;                                      // model_version
  std::vector<std::pair<std::string, std::string>> custom;  // metadata_props, in file order
};

// The element types a model's file declares where braid computes in others (issue 29). FP16 and
// BF16 ONNX models (FLOAT16 or BFLOAT16 weights and values, as onnxconverter-common's float16
// converter or a `.half()` export writes them) import upcast to float32: their weights are
// widened exactly, their values are float32 in the graph, and a Cast to FLOAT16 or BFLOAT16 is
// one to float32. These types say what the file holds, so that a front end can read and write
// the inputs and outputs in the model's own type.
struct DeclaredTypes {
  // kFloat16 or kBFloat16 when any tensor of the file (weights, constants, values, Cast targets)
  // has that type (kFloat16 when both do), kFloat32 otherwise.
  ElementType floats = ElementType::kFloat32;
  // Each graph input's and output's type in the file, in graph order: kFloat16 for a FLOAT16
  // input that braid's graph holds as float32.
  std::vector<ElementType> inputs, outputs;

  bool upcast() const { return floats != ElementType::kFloat32; }
};

struct ImportedModel {
  std::shared_ptr<const ir::Graph> graph;
  ir::Weights weights;  // data for every parameter of `graph`
  ModelMetadata metadata;
  DeclaredTypes declared;
};

// Throws braid::Error: kNotFound (no such file), kInvalidModel (not ONNX, undefined value,
// cycle, shape mismatch), kUnsupported (op, attribute or data type braid does not handle, opset
// out of range, a tensor over the limits).
// Messages start with the file name (or `name`).
ImportedModel import_onnx_file(const std::string& path, const OnnxImportOptions& options = {});
ImportedModel import_onnx_bytes(std::string_view bytes, std::string_view name,
                                const OnnxImportOptions& options = {});

}  // namespace braid::models
