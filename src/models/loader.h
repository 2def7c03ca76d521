// One entry point for every way a model reaches braid: a zoo name, an .onnx file or a
// weighted DAG (.dag.json). The CLI and the tests load through here.
//
//   LoadedModel m = load_model("inception_v3", {.zoo = {.batch = 1}});
//   m.units.num_units();          // schedule units after fusion
//   m.graph, m.weights            // operators and their data (null/empty for a .dag.json)
//   m.declared.upcast()           // an FP16/BF16 ONNX model, run in float32
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "ir/graph.h"
#include "ir/limits.h"
#include "ir/unit_graph.h"
#include "ir/weights.h"
#include "models/input_shapes.h"
#include "models/onnx_import.h"
#include "models/zoo.h"

namespace braid::models {

enum class ModelSource : uint8_t { kZoo, kOnnx, kDag };
std::string_view to_string(ModelSource);

struct LoadOptions {
  ZooOptions zoo;  // batch applies to ONNX files too (an error where no input takes it)
  // zoo.batch was asked for (the CLI's --batch given): an ONNX file must then take it, even 1.
  bool batch_given = false;
  uint64_t seed = 42;  // zoo weights
  bool with_weights = true;
  // The model's name (reports, schedules, bench rows). Empty: the zoo name, an .onnx file's
  // name without its extension (exporters all write "torch_jit" or "main_graph" as the graph
  // name), a .dag.json's own "name".
  std::string name;
  ir::TensorLimits limits;  // checked for every zoo model and ONNX file (--max-tensor-elements ...)
  // ONNX files: the values of dynamic input dims (--shape NAME=1x3x320x320, --dim NAME=VALUE;
  // input_shapes.h). A zoo model or a weighted DAG given any is an error.
  InputShapes inputs;
  ir::FuseOptions fuse;  // how ops group into units
};

struct LoadedModel {
  ModelSource source = ModelSource::kZoo;
  std::string spec;                        // what the user named
  std::shared_ptr<const ir::Graph> graph;  // null for a weighted DAG
  ir::Weights weights;
  ir::UnitGraph units;
  // An ONNX file's own description of itself; a zoo model's names its producer "braid" and its
  // graph by the zoo name; empty for a weighted DAG.
  ModelMetadata metadata;
  // The element types the model declares (onnx_import.h): an FP16 or BF16 ONNX model runs upcast
  // to float32 and says so here (declared.upcast()), with its inputs' and outputs' own types; a
  // zoo model's are its graph's; empty for a weighted DAG.
  DeclaredTypes declared;
};

// Throws braid::Error: kNotFound for an unknown zoo name or missing file, kInvalidModel /
// kUnsupported for bad files or dynamic dims left unfixed, kInvalidArgument for a model over the
// limits, a batch size that an ONNX file's static shapes cannot take, or input shapes that do not
// fit the model.
LoadedModel load_model(std::string_view spec, const LoadOptions& options = {});
// An ONNX model given as bytes (a serialized ModelProto); `name` names it in messages and, unless
// options.name is set, is its name. Throws what load_model throws for an .onnx file.
LoadedModel load_onnx_bytes(std::string_view bytes, std::string_view name,
                            const LoadOptions& options = {});

}  // namespace braid::models
