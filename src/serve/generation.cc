#include "serve/generation.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.h"

namespace braid::serve {

ModelMetadata metadata_of(const runtime::RuntimeModel& model, const ServedModel& served) {
  ModelMetadata m{.name = model.name, .versions = {served.version}, .platform = "onnxruntime_onnx"};
  const ir::Graph& g = *model.loaded.graph;
  auto spec = [&](ValueId v) {
    const ir::Value& value = g.value(v);
    TensorSpec t{value.name, datatype_of(value.type.dtype), value.type.shape};
    if (served.config.max_batch_size > 0) {
      BRAID_CHECK(!t.shape.empty() && t.shape[0] == 1, ErrorCode::kInvalidModel, "model '",
                  model.name, "': max_batch_size ", served.config.max_batch_size,
                  " needs a leading batch dimension of 1 on every input and output (load it at "
                  "batch 1); '",
                  t.name, "' has shape [", fmt::format("{}", fmt::join(t.shape, ",")), "]");
      t.shape[0] = -1;
    }
    return t;
  };
  for (ValueId v : g.inputs()) m.inputs.push_back(spec(v));
  for (ValueId v : g.outputs()) m.outputs.push_back(spec(v));
  std::vector<TensorSpec> inputs, outputs;  // as the model has them, batch dimension included
  for (ValueId v : g.inputs())
    inputs.push_back({g.value(v).name, datatype_of(g.value(v).type.dtype), g.value(v).type.shape});
  for (ValueId v : g.outputs())
    outputs.push_back({g.value(v).name, datatype_of(g.value(v).type.dtype), g.value(v).type.shape});
  check_model_config(served.config, inputs, outputs);
  return m;
}

}  // namespace braid::serve
