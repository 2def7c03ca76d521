#include "serve/model_config.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.h"
#include "serve/model_config.pb.h"

namespace braid::serve {
namespace {

// Errors fail the parse; warnings are the fields the parser skipped (unknown to our subset).
class Collector final : public google::protobuf::io::ErrorCollector {
 public:
  explicit Collector(std::string_view where) : where_(where) {}
  void AddError(int line, int column, const std::string& message) override {
    if (error_.empty()) error_ = fmt::format("{}:{}:{}: {}", where_, line + 1, column + 1, message);
  }
  void AddWarning(int line, int column, const std::string& message) override {
    warnings_.push_back(fmt::format("{}:{}:{}: {}", where_, line + 1, column + 1, message));
  }
  const std::string& error() const { return error_; }
  std::vector<std::string>& warnings() { return warnings_; }

 private:
  std::string where_, error_;
  std::vector<std::string> warnings_;
};

template <typename Tensor>
ConfiguredTensor configured(const Tensor& t, std::string_view where, std::string_view what) {
  BRAID_CHECK(!t.name().empty(), ErrorCode::kInvalidModel, where, ": an ", what, " has no name");
  BRAID_CHECK(!t.has_reshape(), ErrorCode::kUnsupported, where, ": ", what, " '", t.name(),
              "': reshape is not supported");
  ConfiguredTensor c{.name = t.name(), .type_name = triton::DataType_Name(t.data_type())};
  // "TYPE_FP32" -> "FP32", the protocol's name (Triton's own mapping).
  if (t.data_type() != triton::TYPE_INVALID && t.data_type() != triton::TYPE_STRING)
    c.datatype = parse_datatype(c.type_name.substr(5));
  c.dims.assign(t.dims().begin(), t.dims().end());
  return c;
}

void check_tensors(const ModelConfig& config, const std::vector<ConfiguredTensor>& declared,
                   const std::vector<TensorSpec>& actual, std::string_view what) {
  for (const ConfiguredTensor& c : declared) {
    auto it = std::find_if(actual.begin(), actual.end(),
                           [&](const TensorSpec& t) { return t.name == c.name; });
    BRAID_CHECK(it != actual.end(), ErrorCode::kInvalidModel, config.where, ": ", what, " '",
                c.name, "' is not an ", what, " of the model");
    BRAID_CHECK(c.datatype == it->datatype, ErrorCode::kInvalidModel, config.where, ": ", what,
                " '", c.name, "' is ", c.type_name, " but the model's is ",
                to_string(it->datatype));
    std::vector<int64_t> shape = it->shape;
    if (config.max_batch_size > 0 && !shape.empty()) shape.erase(shape.begin());
    bool same = shape.size() == c.dims.size();
    for (size_t i = 0; same && i < shape.size(); ++i)
      same = c.dims[i] == -1 || c.dims[i] == shape[i];
    BRAID_CHECK(same, ErrorCode::kInvalidModel, config.where, ": ", what, " '", c.name,
                "' has dims [", fmt::format("{}", fmt::join(c.dims, ",")),
                "] but the model's are [", fmt::format("{}", fmt::join(shape, ",")), "]",
                config.max_batch_size > 0 ? " (without the batch dimension)" : "");
  }
}

}  // namespace

void check_model_config(const ModelConfig& config, const std::vector<TensorSpec>& inputs,
                        const std::vector<TensorSpec>& outputs) {
  check_tensors(config, config.inputs, inputs, "input");
  check_tensors(config, config.outputs, outputs, "output");
}

ModelConfig parse_model_config(std::string_view text, std::string_view where,
                               std::string_view model) {
  triton::ModelConfig proto;
  Collector collector(where);
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&collector);
  parser.AllowUnknownField(true);  // instance_group, input, output, ...: Triton's, not ours
  const bool parsed = parser.ParseFromString(std::string(text), &proto);
  BRAID_CHECK(
      parsed && collector.error().empty(), ErrorCode::kInvalidModel,
      collector.error().empty() ? fmt::format("{}: does not parse", where) : collector.error());

  auto fail = [&](std::string_view what) {
    throw Error(ErrorCode::kInvalidModel, fmt::format("{}: {}", where, what));
  };
  if (!proto.name().empty() && proto.name() != model)
    fail(fmt::format("name '{}' is not the model's directory name '{}'", proto.name(), model));
  if (!proto.platform().empty() && proto.platform() != "onnxruntime_onnx")
    fail(fmt::format("platform '{}': braid serves ONNX models (onnxruntime_onnx)",
                     proto.platform()));
  if (!proto.backend().empty() && proto.backend() != "onnxruntime")
    fail(fmt::format("backend '{}': braid serves ONNX models (onnxruntime)", proto.backend()));
  if (proto.max_batch_size() < 0)
    fail(fmt::format("max_batch_size {} is negative", proto.max_batch_size()));

  ModelConfig config;
  config.where = std::string(where);
  config.max_batch_size = proto.max_batch_size();
  for (const triton::ModelInput& t : proto.input())
    config.inputs.push_back(configured(t, where, "input"));
  for (const triton::ModelOutput& t : proto.output())
    config.outputs.push_back(configured(t, where, "output"));
  config.ignored = std::move(collector.warnings());
  // The runtime decides where and how many instances run (TOP's policy), not the config.
  if (proto.instance_group_size() > 0)
    config.ignored.push_back(fmt::format("{}: instance_group", where));
  if (proto.has_dynamic_batching()) {
    const triton::ModelDynamicBatching& batching = proto.dynamic_batching();
    // braid pipelines a request's samples block by block; it does not hold requests back to
    // batch them, so the batcher's own knobs have nothing to act on.
    if (batching.preferred_batch_size_size() > 0)
      config.ignored.push_back(fmt::format("{}: dynamic_batching.preferred_batch_size", where));
    if (batching.max_queue_delay_microseconds() > 0)
      config.ignored.push_back(
          fmt::format("{}: dynamic_batching.max_queue_delay_microseconds", where));
    if (batching.priority_levels() > 0)
      config.ignored.push_back(fmt::format("{}: dynamic_batching.priority_levels", where));
    if (batching.has_default_queue_policy()) {
      const triton::ModelQueuePolicy& policy = batching.default_queue_policy();
      BRAID_CHECK(policy.timeout_action() == triton::ModelQueuePolicy::REJECT,
                  ErrorCode::kUnsupported, where,
                  ": default_queue_policy.timeout_action DELAY is not supported (a request past "
                  "its timeout is rejected: REJECT)");
      config.max_queue_size = policy.max_queue_size();
      config.default_timeout_us = policy.default_timeout_microseconds();
      config.allow_timeout_override = policy.allow_timeout_override();
    }
  }
  return config;
}

models::InputShapes input_shapes(const ModelConfig& config) {
  models::InputShapes shapes{.origin = config.where};
  for (const ConfiguredTensor& t : config.inputs) {
    if (t.dims.empty()) continue;
    std::vector<int64_t> shape;
    if (config.max_batch_size > 0) shape.push_back(-1);  // the batch: the load's
    for (int64_t d : t.dims) {
      BRAID_CHECK(d == -1 || d >= 1, ErrorCode::kInvalidModel, config.where, ": input '", t.name,
                  "' has dims [", fmt::format("{}", fmt::join(t.dims, ",")),
                  "]; a dim is >= 1, or -1 for a dynamic one");
      shape.push_back(d);
    }
    shapes.shapes[t.name] = std::move(shape);
  }
  return shapes;
}

ModelConfig read_model_config(const std::filesystem::path& file, std::string_view model) {
  std::ifstream in(file);
  BRAID_CHECK(in.good(), ErrorCode::kNotFound, "cannot read '", file.string(), "'");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_model_config(text.str(), file.string(), model);
}

}  // namespace braid::serve
