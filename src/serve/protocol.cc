#include "serve/protocol.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>

#include <fmt/format.h>

namespace braid::serve {
namespace {

using nlohmann::json;

struct TypeName {
  DataType type;
  std::string_view name;
  size_t bytes;
};
constexpr std::array<TypeName, 13> kTypes = {{
    {DataType::kBool, "BOOL", 1},
    {DataType::kUint8, "UINT8", 1},
    {DataType::kUint16, "UINT16", 2},
    {DataType::kUint32, "UINT32", 4},
    {DataType::kUint64, "UINT64", 8},
    {DataType::kInt8, "INT8", 1},
    {DataType::kInt16, "INT16", 2},
    {DataType::kInt32, "INT32", 4},
    {DataType::kInt64, "INT64", 8},
    {DataType::kFp16, "FP16", 2},
    {DataType::kFp32, "FP32", 4},
    {DataType::kFp64, "FP64", 8},
    {DataType::kBytes, "BYTES", 0},
}};

std::string shape_text(std::span<const int64_t> shape) {
  return fmt::format("[{}]", fmt::join(shape, ","));
}

// IEEE half to float (FP16 inputs).
float half_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h >> 15) << 31;
  const uint32_t exponent = (h >> 10) & 0x1f;
  const uint32_t mantissa = h & 0x3ff;
  float magnitude;
  if (exponent == 0)
    magnitude = std::ldexp(float(mantissa), -24);
  else if (exponent == 31)
    magnitude =
        mantissa ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  else
    magnitude = std::ldexp(float(mantissa | 0x400), int(exponent) - 25);
  return sign ? -magnitude : magnitude;
}

// One little-endian element of `type` at `p`, as a float.
float load_element(DataType type, const char* p) {
  auto get = [p]<class T>(T) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
  };
  switch (type) {
    case DataType::kBool:
      return get(uint8_t{}) != 0 ? 1.0f : 0.0f;
    case DataType::kUint8:
      return float(get(uint8_t{}));
    case DataType::kUint16:
      return float(get(uint16_t{}));
    case DataType::kUint32:
      return float(get(uint32_t{}));
    case DataType::kUint64:
      return float(get(uint64_t{}));
    case DataType::kInt8:
      return float(get(int8_t{}));
    case DataType::kInt16:
      return float(get(int16_t{}));
    case DataType::kInt32:
      return float(get(int32_t{}));
    case DataType::kInt64:
      return float(get(int64_t{}));
    case DataType::kFp16:
      return half_to_float(get(uint16_t{}));
    case DataType::kFp32:
      return get(float{});
    case DataType::kFp64:
      return float(get(double{}));
    case DataType::kBytes:
      break;
  }
  return 0;
}

// Appends `v` as one little-endian element of `type`.
void store_element(DataType type, float v, std::string& out) {
  auto put = [&out]<class T>(T x) { out.append(reinterpret_cast<const char*>(&x), sizeof x); };
  switch (type) {
    case DataType::kBool:
      return put(uint8_t(v != 0));
    case DataType::kUint8:
      return put(uint8_t(v));
    case DataType::kUint16:
      return put(uint16_t(v));
    case DataType::kUint32:
      return put(uint32_t(v));
    case DataType::kUint64:
      return put(uint64_t(v));
    case DataType::kInt8:
      return put(int8_t(v));
    case DataType::kInt16:
      return put(int16_t(v));
    case DataType::kInt32:
      return put(int32_t(v));
    case DataType::kInt64:
      return put(int64_t(v));
    case DataType::kFp32:
      return put(v);
    case DataType::kFp64:
      return put(double(v));
    case DataType::kFp16:
    case DataType::kBytes:
      break;
  }
  BRAID_THROW(ErrorCode::kUnsupported, "cannot send a ", to_string(type), " tensor");
}

// A JSON value of `type` for `v` (integers as integers, BOOL as true/false).
json json_element(DataType type, float v) {
  switch (type) {
    case DataType::kBool:
      return v != 0;
    case DataType::kFp16:
    case DataType::kFp32:
    case DataType::kFp64:
      return v;
    default:
      return int64_t(v);
  }
}

// Flattens `data` (flat or nested arrays, row-major) into `out`, at most `limit` elements.
void flatten(const json& data, DataType type, const std::string& tensor, size_t limit,
             std::vector<float>& out, int depth = 0) {
  BRAID_CHECK(depth <= 32, ErrorCode::kInvalidArgument, "input '", tensor,
              "': data nested deeper than 32 levels");
  for (const json& x : data) {
    if (x.is_array()) {
      flatten(x, type, tensor, limit, out, depth + 1);
      continue;
    }
    BRAID_CHECK(out.size() < limit, ErrorCode::kInvalidArgument, "input '", tensor,
                "': data has more elements than its shape (", limit, ")");
    if (x.is_boolean() && type == DataType::kBool)
      out.push_back(x.get<bool>() ? 1.0f : 0.0f);
    else if (x.is_number())
      out.push_back(x.get<float>());
    else
      BRAID_THROW(ErrorCode::kInvalidArgument, "input '", tensor, "': data element ", out.size(),
                  " is ", x.type_name(), ", not a number");
  }
}

const json* member(const json& object, const char* key) {
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

std::vector<int64_t> parse_shape(const json& j, const std::string& tensor) {
  BRAID_CHECK(j.is_array(), ErrorCode::kInvalidArgument, "input '", tensor,
              "': shape must be an array of sizes");
  std::vector<int64_t> shape;
  for (const json& d : j) {
    BRAID_CHECK(d.is_number_integer() && d.get<int64_t>() >= 0, ErrorCode::kInvalidArgument,
                "input '", tensor, "': shape ", j.dump(), " holds ", d.dump(), ", not a size >= 0");
    shape.push_back(d.get<int64_t>());
  }
  return shape;
}

}  // namespace

std::string_view to_string(DataType type) {
  for (const TypeName& t : kTypes)
    if (t.type == type) return t.name;
  return "?";
}

std::optional<DataType> parse_datatype(std::string_view name) {
  for (const TypeName& t : kTypes)
    if (t.name == name) return t.type;
  return std::nullopt;
}

DataType datatype_of(ir::DType dtype) {
  switch (dtype) {
    case ir::DType::kFloat32:
      return DataType::kFp32;
    case ir::DType::kInt64:
      return DataType::kInt64;
    case ir::DType::kBool:
      return DataType::kBool;
  }
  return DataType::kFp32;
}

size_t element_bytes(DataType type) {
  for (const TypeName& t : kTypes)
    if (t.type == type) return t.bytes;
  return 0;
}

json to_json(const ModelMetadata& m) {
  auto tensors = [](const std::vector<TensorSpec>& specs) {
    json list = json::array();
    for (const TensorSpec& t : specs)
      list.push_back({{"name", t.name}, {"datatype", to_string(t.datatype)}, {"shape", t.shape}});
    return list;
  };
  return {{"name", m.name},
          {"versions", m.versions},
          {"platform", m.platform},
          {"inputs", tensors(m.inputs)},
          {"outputs", tensors(m.outputs)}};
}

InferRequest parse_infer_request(std::string_view body, std::optional<size_t> header_length,
                                 const ModelMetadata& model) {
  std::string_view head = body, binary;
  if (header_length) {
    BRAID_CHECK(*header_length <= body.size(), ErrorCode::kInvalidArgument,
                "Inference-Header-Content-Length is ", *header_length, " but the body has ",
                body.size(), " bytes");
    head = body.substr(0, *header_length);
    binary = body.substr(*header_length);
  }
  json j;
  try {
    j = json::parse(head);
  } catch (const json::exception& e) {
    BRAID_THROW(ErrorCode::kInvalidArgument, "malformed JSON in the request: ", e.what());
  }
  BRAID_CHECK(j.is_object(), ErrorCode::kInvalidArgument, "the request must be a JSON object, got ",
              j.type_name());

  InferRequest r;
  try {
    if (const json* id = member(j, "id")) {
      BRAID_CHECK(id->is_string(), ErrorCode::kInvalidArgument, "'id' must be a string");
      r.id = id->get<std::string>();
    }
    if (const json* params = member(j, "parameters")) {
      BRAID_CHECK(params->is_object(), ErrorCode::kInvalidArgument,
                  "'parameters' must be an object");
      if (const json* b = member(*params, "binary_data_output")) {
        BRAID_CHECK(b->is_boolean(), ErrorCode::kInvalidArgument,
                    "parameters.binary_data_output must be true or false");
        r.binary_data_output = b->get<bool>();
      }
      if (const json* t = member(*params, "timeout")) {
        BRAID_CHECK(t->is_number_integer() && t->get<int64_t>() >= 0, ErrorCode::kInvalidArgument,
                    "parameters.timeout must be microseconds >= 0");
        r.timeout_us = t->get<uint64_t>();
      }
    }

    const json* inputs = member(j, "inputs");
    BRAID_CHECK(inputs && inputs->is_array(), ErrorCode::kInvalidArgument,
                "the request has no 'inputs' array");
    std::vector<std::optional<InputTensor>> by_index(model.inputs.size());
    size_t cursor = 0;  // into the binary part
    for (const json& in : *inputs) {
      BRAID_CHECK(in.is_object(), ErrorCode::kInvalidArgument, "an input must be an object");
      const json* name = member(in, "name");
      BRAID_CHECK(name && name->is_string(), ErrorCode::kInvalidArgument,
                  "an input has no 'name' string");
      InputTensor t{.name = name->get<std::string>()};
      auto spec = std::find_if(model.inputs.begin(), model.inputs.end(),
                               [&](const TensorSpec& s) { return s.name == t.name; });
      if (spec == model.inputs.end()) {
        std::vector<std::string> known;
        for (const TensorSpec& s : model.inputs) known.push_back("'" + s.name + "'");
        BRAID_THROW(ErrorCode::kInvalidArgument, "input '", t.name, "' is not an input of model '",
                    model.name, "' (it takes ", fmt::format("{}", fmt::join(known, ", ")), ")");
      }
      const size_t k = size_t(spec - model.inputs.begin());
      BRAID_CHECK(!by_index[k], ErrorCode::kInvalidArgument, "input '", t.name, "' is given twice");

      const json* datatype = member(in, "datatype");
      BRAID_CHECK(datatype && datatype->is_string(), ErrorCode::kInvalidArgument, "input '", t.name,
                  "' has no 'datatype' string");
      const std::optional<DataType> type = parse_datatype(datatype->get<std::string>());
      BRAID_CHECK(type.has_value(), ErrorCode::kInvalidArgument, "input '", t.name,
                  "': unknown datatype '", datatype->get<std::string>(), "'");
      BRAID_CHECK(*type != DataType::kBytes, ErrorCode::kUnsupported, "input '", t.name,
                  "': BYTES tensors are not supported");
      BRAID_CHECK(*type == spec->datatype, ErrorCode::kInvalidArgument, "input '", t.name,
                  "': datatype ", to_string(*type), ", the model takes ",
                  to_string(spec->datatype));
      t.datatype = *type;

      const json* shape = member(in, "shape");
      BRAID_CHECK(shape != nullptr, ErrorCode::kInvalidArgument, "input '", t.name,
                  "' has no 'shape'");
      t.shape = parse_shape(*shape, t.name);
      bool matches = t.shape.size() == spec->shape.size();
      for (size_t d = 0; matches && d < t.shape.size(); ++d)
        matches = spec->shape[d] < 0 || spec->shape[d] == t.shape[d];
      BRAID_CHECK(matches, ErrorCode::kInvalidArgument, "input '", t.name, "': shape ",
                  shape_text(t.shape), " does not match the model's ", shape_text(spec->shape));
      // The model's fixed dims bound the product; a -1 dim is bounded by the body below.
      uint64_t elements = 1;
      for (int64_t d : t.shape) {
        BRAID_CHECK(d == 0 || elements <= std::numeric_limits<uint32_t>::max() / uint64_t(d),
                    ErrorCode::kInvalidArgument, "input '", t.name, "': shape ",
                    shape_text(t.shape), " has too many elements");
        elements *= uint64_t(d);
      }

      const json* params = member(in, "parameters");
      const json* binary_size =
          params && params->is_object() ? member(*params, "binary_data_size") : nullptr;
      if (binary_size) {
        BRAID_CHECK(binary_size->is_number_integer() && binary_size->get<int64_t>() >= 0,
                    ErrorCode::kInvalidArgument, "input '", t.name,
                    "': binary_data_size must be a size >= 0");
        const auto size = binary_size->get<uint64_t>();
        const uint64_t want = elements * element_bytes(t.datatype);
        BRAID_CHECK(size == want, ErrorCode::kInvalidArgument, "input '", t.name,
                    "': binary_data_size is ", size, " bytes, its shape ", shape_text(t.shape),
                    " of ", to_string(t.datatype), " needs ", want);
        BRAID_CHECK(header_length.has_value(), ErrorCode::kInvalidArgument, "input '", t.name,
                    "' is binary but the request has no Inference-Header-Content-Length");
        BRAID_CHECK(size <= binary.size() - cursor, ErrorCode::kInvalidArgument, "input '", t.name,
                    "': ", size, " binary bytes expected, ", binary.size() - cursor,
                    " left in the body");
        t.values.resize(size_t(elements));
        const size_t step = element_bytes(t.datatype);
        for (size_t i = 0; i < t.values.size(); ++i)
          t.values[i] = load_element(t.datatype, binary.data() + cursor + i * step);
        cursor += size_t(size);
      } else {
        const json* data = member(in, "data");
        BRAID_CHECK(data != nullptr, ErrorCode::kInvalidArgument, "input '", t.name,
                    "' has neither 'data' nor parameters.binary_data_size");
        BRAID_CHECK(data->is_array(), ErrorCode::kInvalidArgument, "input '", t.name,
                    "': 'data' must be an array");
        flatten(*data, t.datatype, t.name, size_t(elements), t.values);
        BRAID_CHECK(t.values.size() == elements, ErrorCode::kInvalidArgument, "input '", t.name,
                    "': data has ", t.values.size(), " elements, its shape ", shape_text(t.shape),
                    " has ", elements);
      }
      by_index[k] = std::move(t);
    }
    BRAID_CHECK(cursor == binary.size(), ErrorCode::kInvalidArgument, binary.size() - cursor,
                " bytes after the binary inputs");
    for (size_t k = 0; k < by_index.size(); ++k) {
      BRAID_CHECK(by_index[k].has_value(), ErrorCode::kInvalidArgument, "input '",
                  model.inputs[k].name, "' of model '", model.name, "' is missing");
      r.inputs.push_back(std::move(*by_index[k]));
    }

    if (const json* outputs = member(j, "outputs")) {
      BRAID_CHECK(outputs->is_array(), ErrorCode::kInvalidArgument, "'outputs' must be an array");
      for (const json& out : *outputs) {
        BRAID_CHECK(out.is_object(), ErrorCode::kInvalidArgument, "an output must be an object");
        const json* name = member(out, "name");
        BRAID_CHECK(name && name->is_string(), ErrorCode::kInvalidArgument,
                    "a requested output has no 'name' string");
        RequestedOutput o{.name = name->get<std::string>(), .binary = r.binary_data_output};
        BRAID_CHECK(std::any_of(model.outputs.begin(), model.outputs.end(),
                                [&](const TensorSpec& s) { return s.name == o.name; }),
                    ErrorCode::kInvalidArgument, "output '", o.name,
                    "' is not an output of model '", model.name, "'");
        BRAID_CHECK(std::none_of(r.outputs.begin(), r.outputs.end(),
                                 [&](const RequestedOutput& x) { return x.name == o.name; }),
                    ErrorCode::kInvalidArgument, "output '", o.name, "' is requested twice");
        if (const json* params = member(out, "parameters")) {
          BRAID_CHECK(params->is_object(), ErrorCode::kInvalidArgument, "output '", o.name,
                      "': 'parameters' must be an object");
          if (const json* b = member(*params, "binary_data")) {
            BRAID_CHECK(b->is_boolean(), ErrorCode::kInvalidArgument, "output '", o.name,
                        "': binary_data must be true or false");
            o.binary = b->get<bool>();
          }
        }
        r.outputs.push_back(std::move(o));
      }
    }
  } catch (const json::exception& e) {  // a value of an unexpected type, read anyway
    BRAID_THROW(ErrorCode::kInvalidArgument, "malformed request: ", e.what());
  }
  return r;
}

EncodedResponse encode_infer_response(std::string_view model_name, std::string_view model_version,
                                      const InferRequest& request,
                                      std::span<const OutputTensor> outputs) {
  std::vector<RequestedOutput> wanted = request.outputs;
  if (wanted.empty())
    for (const OutputTensor& o : outputs)
      wanted.push_back({.name = o.name, .binary = request.binary_data_output});
  json list = json::array();
  std::string payload;
  for (const RequestedOutput& w : wanted) {
    auto it = std::find_if(outputs.begin(), outputs.end(),
                           [&](const OutputTensor& o) { return o.name == w.name; });
    BRAID_CHECK(it != outputs.end(), ErrorCode::kInternal, "output '", w.name,
                "' was not computed");
    json t = {{"name", it->name}, {"datatype", to_string(it->datatype)}, {"shape", it->shape}};
    if (w.binary) {
      const size_t before = payload.size();
      for (float v : it->values) store_element(it->datatype, v, payload);
      t["parameters"] = {{"binary_data_size", payload.size() - before}};
    } else {
      json data = json::array();
      for (float v : it->values) data.push_back(json_element(it->datatype, v));
      t["data"] = std::move(data);
    }
    list.push_back(std::move(t));
  }
  json head = {{"model_name", model_name}, {"model_version", model_version}, {"outputs", list}};
  if (!request.id.empty()) head["id"] = request.id;
  EncodedResponse out;
  out.body = head.dump(-1, ' ', false, json::error_handler_t::replace);
  if (payload.empty() && std::none_of(wanted.begin(), wanted.end(),
                                      [](const RequestedOutput& w) { return w.binary; })) {
    out.content_type = "application/json";
    return out;
  }
  out.header_length = out.body.size();
  out.body += payload;
  out.content_type = "application/octet-stream";
  return out;
}

std::string error_body(std::string_view message) {
  return json{{"error", message}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

int http_status(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
    case ErrorCode::kInvalidModel:
    case ErrorCode::kInvalidSchedule:
      return 400;
    case ErrorCode::kNotFound:
      return 404;
    case ErrorCode::kUnsupported:
      return 501;
    case ErrorCode::kInternal:
      return 500;
  }
  return 500;
}

}  // namespace braid::serve
