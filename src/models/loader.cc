#include "models/loader.h"

#include <filesystem>

#include "base/error.h"
#include "models/dag_json.h"
#include "models/onnx_import.h"

namespace braid::models {

std::string_view to_string(ModelSource s) {
  switch (s) {
    case ModelSource::kZoo:
      return "zoo";
    case ModelSource::kOnnx:
      return "onnx";
    case ModelSource::kDag:
      return "dag";
  }
  return "?";
}

namespace {
bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}
// --batch on an ONNX file fills symbolic batch dims; a file whose inputs all have a static dim 0
// of another size cannot take it, and ignoring the flag would be silent.
void check_batch_applied(const ir::Graph& graph, int64_t batch, bool given, std::string_view spec,
                         const InputShapes& inputs) {
  if (!given && batch == 1) return;  // the default: nothing asked
  std::string shapes;
  for (ValueId id : graph.inputs()) {
    const ir::Value& v = graph.value(id);
    if (!v.type.shape.empty() && v.type.shape[0] == batch) return;
    shapes += (shapes.empty() ? "" : ", ") + v.name + " " + ir::to_string(v.type.shape);
  }
  if (!inputs.empty())
    BRAID_THROW(ErrorCode::kInvalidArgument, "--batch ", batch, " cannot apply to '", spec,
                "': its inputs' batch dimensions are static or fixed by --shape/--dim (", shapes,
                "); give the batch there, or leave out --batch");
  BRAID_THROW(ErrorCode::kInvalidArgument, "--batch ", batch, " cannot apply to '", spec,
              "': its inputs have a static batch dimension (", shapes,
              "); export it with a dynamic batch axis, or leave out --batch");
}

// --shape and --dim fix an ONNX file's dynamic dims; anything else has static shapes already.
void check_no_input_shapes(const LoadOptions& options, std::string_view spec,
                           std::string_view kind) {
  if (options.inputs.empty()) return;
  const std::string flag = options.inputs.shapes.empty() ? "--dim" : "--shape";
  BRAID_THROW(ErrorCode::kInvalidArgument, flag, " applies to ONNX files; '", spec, "' is ", kind,
              " with static shapes");
}

OnnxImportOptions import_options(const LoadOptions& options) {
  return {.batch = options.zoo.batch, .inputs = options.inputs, .limits = options.limits};
}

}  // namespace

LoadedModel load_model(std::string_view spec, const LoadOptions& options) {
  LoadedModel m;
  m.spec = spec;
  if (ends_with(spec, ".dag.json") || ends_with(spec, ".json")) {
    check_no_input_shapes(options, spec, "a weighted DAG");
    m.source = ModelSource::kDag;
    m.units = load_dag_json_file(std::string(spec));
    if (!options.name.empty()) m.units.set_name(options.name);
    return m;
  }
  if (ends_with(spec, ".onnx")) {
    m.source = ModelSource::kOnnx;
    ImportedModel imported = import_onnx_file(std::string(spec), import_options(options));
    m.graph = std::move(imported.graph);
    m.weights = std::move(imported.weights);
    m.metadata = std::move(imported.metadata);
    m.declared = std::move(imported.declared);
    check_batch_applied(*m.graph, options.zoo.batch, options.batch_given, spec, options.inputs);
  } else {
    BRAID_CHECK(spec.find('/') == std::string_view::npos, ErrorCode::kNotFound, "'", spec,
                "' is not a zoo model and has no .onnx or .dag.json extension");
    m.source = ModelSource::kZoo;
    check_no_input_shapes(options, spec, "a zoo model");
    m.graph = std::make_shared<const ir::Graph>(build_zoo_model(spec, options.zoo));
    ir::check_limits(*m.graph, options.limits);  // the ONNX importer checks its own graph
    if (options.with_weights) m.weights = ir::Weights::generate(*m.graph, options.seed);
    m.metadata.producer_name = "braid";
    m.metadata.graph_name = std::string(spec);
    for (ValueId id : m.graph->inputs())
      m.declared.inputs.push_back(element_type_of(m.graph->value(id).type.dtype));
    for (ValueId id : m.graph->outputs())
      m.declared.outputs.push_back(element_type_of(m.graph->value(id).type.dtype));
  }
  m.units = ir::fuse(m.graph, options.fuse);
  if (!options.name.empty())
    m.units.set_name(options.name);
  else if (m.source == ModelSource::kOnnx)
    m.units.set_name(std::filesystem::path(spec).stem().string());
  return m;
}

LoadedModel load_onnx_bytes(std::string_view bytes, std::string_view name,
                            const LoadOptions& options) {
  LoadedModel m;
  m.spec = name;
  m.source = ModelSource::kOnnx;
  ImportedModel imported = import_onnx_bytes(bytes, name, import_options(options));
  m.graph = std::move(imported.graph);
  m.weights = std::move(imported.weights);
  m.metadata = std::move(imported.metadata);
  m.declared = std::move(imported.declared);
  check_batch_applied(*m.graph, options.zoo.batch, options.batch_given, name, options.inputs);
  m.units = ir::fuse(m.graph, options.fuse);
  m.units.set_name(options.name.empty() ? std::string(name) : options.name);
  return m;
}

}  // namespace braid::models
