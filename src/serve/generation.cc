#include "serve/generation.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.h"

namespace braid::serve {

ModelMetadata metadata_of(const runtime::RuntimeModel& model, const ServedModel& served) {
  ModelMetadata m{.name = model.name, .versions = {served.version}, .platform = "onnxruntime_onnx"};
  const ir::Graph& g = *model.loaded.graph;
  // In the model's own types: an FP16 model's tensors are FP16 (computed upcast, as float).
  auto spec = [&](ValueId v, const std::vector<models::ElementType>& declared, size_t i) {
    const ir::Value& value = g.value(v);
    const DataType type =
        i < declared.size() ? datatype_of(declared[i]) : datatype_of(value.type.dtype);
    return TensorSpec{value.name, type, value.type.shape};
  };
  const models::DeclaredTypes& declared = model.loaded.declared;
  for (size_t i = 0; i < g.inputs().size(); ++i)
    m.inputs.push_back(spec(g.inputs()[i], declared.inputs, i));
  for (size_t i = 0; i < g.outputs().size(); ++i)
    m.outputs.push_back(spec(g.outputs()[i], declared.outputs, i));
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
