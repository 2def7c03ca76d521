#include "models/loader.h"

#include <filesystem>

#include "base/error.h"
#include "models/dag_json.h"
#include "models/onnx_import.h"

namespace braid::models {

std::string_view to_string(ModelSource s) {
  switch (s) {
    case ModelSource::kZoo: return "zoo";
    case ModelSource::kOnnx: return "onnx";
    case ModelSource::kDag: return "dag";
  }
  return "?";
}

namespace {
bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}
}  // namespace

LoadedModel load_model(std::string_view spec, const LoadOptions& options) {
  LoadedModel m;
  m.spec = spec;
  if (ends_with(spec, ".dag.json") || ends_with(spec, ".json")) {
    m.source = ModelSource::kDag;
    m.units = load_dag_json_file(std::string(spec));
    return m;
  }
  if (ends_with(spec, ".onnx")) {
    m.source = ModelSource::kOnnx;
    ImportedModel imported = import_onnx_file(
        std::string(spec), {.batch = options.zoo.batch,
                            .max_tensor_elements = options.limits.max_tensor_elements,
                            .max_activation_bytes = options.limits.max_activation_bytes});
    m.graph = std::move(imported.graph);
    m.weights = std::move(imported.weights);
  } else {
    BRAID_CHECK(spec.find('/') == std::string_view::npos, ErrorCode::kNotFound, "'", spec,
                "' is not a zoo model and has no .onnx or .dag.json extension");
    m.source = ModelSource::kZoo;
    m.graph = std::make_shared<const ir::Graph>(build_zoo_model(spec, options.zoo));
    ir::check_limits(*m.graph, options.limits);
    if (options.with_weights) m.weights = ir::Weights::generate(*m.graph, options.seed);
  }
  m.units = ir::fuse(m.graph);
  return m;
}

}  // namespace braid::models
