// A repository model's own settings, from the config.pbtxt beside its versions (Triton's model
// configuration, protobuf text format). braid applies the subset that means something for it and
// reports the rest as ignored, so a config written for Triton is read unchanged:
//
//   max_batch_size: 8                       # requests carry a leading batch dimension of 1..8
//   input [{ name: "x", data_type: TYPE_FP32, dims: [3, 48, 320] }]  # fixes x's dynamic dims
//   dynamic_batching {
//     default_queue_policy {
//       max_queue_size: 16                  # this model's queue (0: the server's --queue-capacity)
//       default_timeout_microseconds: 50000 # a request queued longer is rejected, never run late
//       allow_timeout_override: true        # a request's parameters.timeout replaces it
//     }
//   }
//
//   serve::ModelConfig c = serve::read_model_config("models/resnet50/config.pbtxt", "resnet50");
//   for (const std::string& w : c.ignored) ...  // "instance_group", ... (warnings, not errors)
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "models/input_shapes.h"
#include "serve/protocol.h"

namespace braid::serve {

// An input or output the config declares (Triton's ModelInput/ModelOutput).
struct ConfiguredTensor {
  std::string name;
  std::optional<DataType> datatype;  // nullopt: TYPE_INVALID (unset) or a type braid cannot name
  std::string type_name;             // as written: "TYPE_FP32"
  std::vector<int64_t> dims;         // without the batch dimension when max_batch_size > 0
};

struct ModelConfig {
  std::string where;  // the file, for messages ("" for defaults)
  // 0: requests carry the model's own shapes. N > 0 (Triton's batching contract): the model is
  // loaded at batch 1, its metadata shows a leading -1, and a request of b <= N samples runs as
  // b tasks of the runtime, answered together.
  int64_t max_batch_size = 0;
  size_t max_queue_size = 0;        // tasks waiting; 0: the server's --queue-capacity
  uint64_t default_timeout_us = 0;  // 0: none, unless the server gives one
  // Whether a request's parameters.timeout replaces default_timeout_us. Triton's default is false
  // once a queue policy is written; with none, a request's timeout applies (braid's default).
  bool allow_timeout_override = true;
  std::vector<ConfiguredTensor> inputs, outputs;  // checked against the model (check_model_config)
  // What the file sets that braid does not apply (fields unknown here, dynamic batching's delay
  // and preferred sizes, priorities): one line each, for the server to warn about.
  std::vector<std::string> ignored;
};

// Parses config.pbtxt text. `where` names it in errors, `model` is the repository directory's
// name (a `name` field must equal it, as in Triton). Throws braid::Error: kInvalidModel with
// "WHERE:LINE:COLUMN: ..." for text that does not parse, kInvalidModel for a value braid cannot
// serve (another platform or backend than ONNX, a negative max_batch_size), kUnsupported for
// timeout_action DELAY.
ModelConfig parse_model_config(std::string_view text, std::string_view where,
                               std::string_view model);
// Checks the declared inputs and outputs against the model's own (`inputs`, `outputs` as the
// model has them, batch dimension included), as Triton does at load: each must name a model
// tensor, with its datatype and its dims (-1 matches any; the leading batch dimension left out
// when max_batch_size > 0). Throws kInvalidModel naming the file and the tensor.
void check_model_config(const ModelConfig& config, const std::vector<TensorSpec>& inputs,
                        const std::vector<TensorSpec>& outputs);
// The declared inputs' dims as the shapes that fix an ONNX model's dynamic dims at load, as
// Triton does (models/input_shapes.h): with max_batch_size > 0 the dims leave out the batch
// dimension, which the load's batch of 1 fills; a -1 leaves a dim to the model (a dynamic one
// unfixed is then an error naming the input). Inputs declared without dims fix nothing.
// kInvalidModel naming the file for a dim below -1 or of 0.
models::InputShapes input_shapes(const ModelConfig& config);
// Reads and parses `file`; kNotFound if it cannot be read.
ModelConfig read_model_config(const std::filesystem::path& file, std::string_view model);

}  // namespace braid::serve
