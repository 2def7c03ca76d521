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
    return TensorSpec{value.name, datatype_of(value.type.dtype), value.type.shape};
  };
  for (ValueId v : g.inputs()) m.inputs.push_back(spec(v));
  for (ValueId v : g.outputs()) m.outputs.push_back(spec(v));
  if (served.config.max_batch_size > 0)
    for (const std::vector<TensorSpec>* tensors : {&m.inputs, &m.outputs})
      for (const TensorSpec& t : *tensors)
        BRAID_CHECK(!t.shape.empty() && t.shape[0] == 1, ErrorCode::kInvalidModel, "model '",
                    model.name, "': max_batch_size ", served.config.max_batch_size,
                    " needs a leading batch dimension of 1 on every input and output (load it at "
                    "batch 1); '",
                    t.name, "' has shape [", fmt::format("{}", fmt::join(t.shape, ",")), "]");
  check_model_config(served.config, m.inputs, m.outputs);  // as the model has them
  // A batching model's leading 1 shows as -1: a request carries 1..max_batch_size.
  if (served.config.max_batch_size > 0)
    for (std::vector<TensorSpec>* tensors : {&m.inputs, &m.outputs})
      for (TensorSpec& t : *tensors) t.shape[0] = -1;
  return m;
}

}  // namespace braid::serve
