#include "serve/protocol.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <type_traits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/float16.h"

namespace braid::serve {
namespace {

using nlohmann::json;

// The binary extension is little-endian; payloads are copied byte for byte into host values.
static_assert(std::endian::native == std::endian::little,
              "binary tensors assume a little-endian host");

struct DataTypeInfo {
  DataType type;
  std::string_view name;
  size_t bytes;
};
constexpr std::array<DataTypeInfo, 14> kDataTypes{{
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
    {DataType::kBf16, "BF16", 2},
}};

const DataTypeInfo& info(DataType t) {
  return kDataTypes[static_cast<size_t>(t)];
}

// Integers beyond 2^24 do not survive the float values braid's executors carry.
constexpr auto kMaxExactFloatInteger = static_cast<double>(ir::kMaxExactFloatInteger);

std::string shape_string(std::span<const int64_t> shape) {
  return fmt::format("[{}]", fmt::join(shape, ","));
}

// ---- request parsing --------------------------------------------------------------------------

// One input's validation context: every message names the tensor.
struct InputContext {
  std::string_view name;
  DataType datatype;
};

template <typename... Args>
[[noreturn]] void fail_input(const InputContext& in, fmt::format_string<Args...> what,
                             Args&&... args) {
  BRAID_THROW(ErrorCode::kInvalidArgument, "input '", in.name,
              "': ", fmt::format(what, std::forward<Args>(args)...));
}

// An integer element as float, refused when float would not hold it exactly or the datatype
// cannot hold it at all.
template <typename T>
float exact_integer(const InputContext& in, T v, size_t index) {
  const auto [low, high] = [&]() -> std::pair<double, double> {
    switch (in.datatype) {
      case DataType::kUint8:
        return {0, 255};
      case DataType::kUint16:
        return {0, 65535};
      case DataType::kUint32:
        return {0, 4294967295.0};
      case DataType::kUint64:
        return {0, 18446744073709551615.0};
      case DataType::kInt8:
        return {-128, 127};
      case DataType::kInt16:
        return {-32768, 32767};
      case DataType::kInt32:
        return {-2147483648.0, 2147483647.0};
      default:
        return {-9223372036854775808.0, 9223372036854775807.0};
    }
  }();
  const auto value = static_cast<double>(v);
  if (value < low || value > high) {
    fail_input(in, "element {} ({}) is out of range for {}", index, v, to_string(in.datatype));
  }
  if (std::fabs(value) > kMaxExactFloatInteger) {
    fail_input(
        in, "element {} ({}) is not exact in float (braid carries tensors as float; |v| <= 2^24)",
        index, v);
  }
  return static_cast<float>(value);
}

// `f` as a value of a float datatype: FP16 and BF16 rounded to their precision, the others as is.
float in_type(DataType t, float f) {
  return t == DataType::kFp16   ? round_to_float16(f)
         : t == DataType::kBf16 ? round_to_bfloat16(f)
                                : f;
}

// A floating-point element as float: FP16 rounded to half precision, values beyond float's range
// refused (the conversion would be undefined; infinities and NaN pass).
float narrow_float(const InputContext& in, double v, size_t index) {
  if (std::isfinite(v) && std::fabs(v) > std::numeric_limits<float>::max()) {
    fail_input(in, "element {} ({}) is out of float's range (braid carries tensors as float)",
               index, v);
  }
  const auto f = static_cast<float>(v);
  return in_type(in.datatype, f);
}

float json_element(const InputContext& in, const json& v, size_t index) {
  switch (in.datatype) {
    case DataType::kBool:
      if (!v.is_boolean())
        fail_input(in, "element {} is not a boolean (BOOL data is true/false)", index);
      return v.get<bool>() ? 1.0f : 0.0f;
    case DataType::kFp16:
    case DataType::kBf16:
    case DataType::kFp32:
    case DataType::kFp64:
      if (!v.is_number()) fail_input(in, "element {} is not a number", index);
      return narrow_float(in, v.get<double>(), index);
    case DataType::kBytes:
      break;  // refused before data is read
    default:
      if (v.is_number_unsigned()) return exact_integer(in, v.get<uint64_t>(), index);
      if (v.is_number_integer()) return exact_integer(in, v.get<int64_t>(), index);
      fail_input(in, "element {} is not an integer ({} data)", index, to_string(in.datatype));
  }
  BRAID_THROW(ErrorCode::kInternal, "BYTES input reached the element decoder");
}

// Nested data must follow the shape exactly: depth = rank, each level as long as its dimension.
void flatten_nested(const InputContext& in, const json& node, std::span<const int64_t> shape,
                    size_t depth, std::vector<float>& out) {
  if (depth == shape.size() && !node.is_array()) {
    out.push_back(json_element(in, node, out.size()));
    return;
  }
  if (depth == shape.size() || !node.is_array() ||
      node.size() != static_cast<size_t>(shape[depth])) {
    fail_input(in, "nested data does not follow shape {} (ragged, or wrong depth at level {})",
               shape_string(shape), depth);
  }
  for (const json& child : node) flatten_nested(in, child, shape, depth + 1, out);
}

std::vector<float> decode_json_data(const InputContext& in, const json& data,
                                    std::span<const int64_t> shape, size_t count) {
  if (!data.is_array()) fail_input(in, "'data' must be an array, got {}", data.type_name());
  std::vector<float> values;
  const bool nested = !data.empty() && data.front().is_array();
  if (nested && !shape.empty()) {
    values.reserve(count);  // count <= the body's length (checked by the caller)
    flatten_nested(in, data, shape, 0, values);
    return values;
  }
  if (data.size() != count) {
    fail_input(in, "data holds {} elements, shape {} needs {}", data.size(), shape_string(shape),
               count);
  }
  values.reserve(count);
  for (const json& v : data) values.push_back(json_element(in, v, values.size()));
  return values;
}

template <typename T>
T load_le(const char* src) {
  T v;
  std::memcpy(&v, src, sizeof v);
  return v;
}

std::vector<float> decode_binary(const InputContext& in, std::string_view bytes, size_t count) {
  std::vector<float> values(count);
  const size_t width = element_bytes(in.datatype);
  for (size_t i = 0; i < count; ++i) {
    const char* src = bytes.data() + i * width;
    switch (in.datatype) {
      case DataType::kBool: {
        const auto b = load_le<uint8_t>(src);
        if (b > 1) fail_input(in, "element {} is byte {}, BOOL bytes are 0 or 1", i, b);
        values[i] = b;
        break;
      }
      case DataType::kUint8:
        values[i] = load_le<uint8_t>(src);
        break;
      case DataType::kUint16:
        values[i] = load_le<uint16_t>(src);
        break;
      case DataType::kUint32:
        values[i] = exact_integer(in, load_le<uint32_t>(src), i);
        break;
      case DataType::kUint64:
        values[i] = exact_integer(in, load_le<uint64_t>(src), i);
        break;
      case DataType::kInt8:
        values[i] = load_le<int8_t>(src);
        break;
      case DataType::kInt16:
        values[i] = load_le<int16_t>(src);
        break;
      case DataType::kInt32:
        values[i] = exact_integer(in, load_le<int32_t>(src), i);
        break;
      case DataType::kInt64:
        values[i] = exact_integer(in, load_le<int64_t>(src), i);
        break;
      case DataType::kFp16:
        values[i] = float16_to_float(load_le<uint16_t>(src));
        break;
      case DataType::kBf16:
        values[i] = bfloat16_to_float(load_le<uint16_t>(src));
        break;
      case DataType::kFp32:
        values[i] = load_le<float>(src);
        break;
      case DataType::kFp64:
        values[i] = narrow_float(in, load_le<double>(src), i);
        break;
      case DataType::kBytes:
        BRAID_THROW(ErrorCode::kInternal, "BYTES input reached the decoder");
    }
  }
  return values;
}

const json* find_member(const json& object, const char* key) {
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

// A "parameters" member: absent or an object.
const json* parameters_of(const json& object, std::string_view owner) {
  const json* p = find_member(object, "parameters");
  BRAID_CHECK(p == nullptr || p->is_object(), ErrorCode::kInvalidArgument, owner,
              ": 'parameters' must be an object");
  return p;
}

// A tensor's parameters: Triton's shared-memory extension is refused by name rather than read as
// "no data".
const json* tensor_parameters_of(const json& object, std::string_view owner) {
  const json* p = parameters_of(object, owner);
  BRAID_CHECK(p == nullptr || !p->contains("shared_memory_region"), ErrorCode::kUnsupported, owner,
              ": the shared-memory extension is not supported");
  return p;
}

std::optional<bool> bool_parameter(const json* parameters, const char* key,
                                   std::string_view owner) {
  if (parameters == nullptr) return std::nullopt;
  const json* v = find_member(*parameters, key);
  if (v == nullptr) return std::nullopt;
  BRAID_CHECK(v->is_boolean(), ErrorCode::kInvalidArgument, owner, ": parameter '", key,
              "' must be true or false");
  return v->get<bool>();
}

std::optional<uint64_t> unsigned_parameter(const json* parameters, const char* key,
                                           std::string_view owner) {
  if (parameters == nullptr) return std::nullopt;
  const json* v = find_member(*parameters, key);
  if (v == nullptr) return std::nullopt;
  BRAID_CHECK(v->is_number_unsigned() || (v->is_number_integer() && v->get<int64_t>() >= 0),
              ErrorCode::kInvalidArgument, owner, ": parameter '", key,
              "' must be a non-negative integer");
  return v->get<uint64_t>();
}

std::string string_member(const json& object, const char* key, std::string_view owner) {
  const json* v = find_member(object, key);
  BRAID_CHECK(v != nullptr, ErrorCode::kInvalidArgument, owner, ": missing '", key, "'");
  BRAID_CHECK(v->is_string(), ErrorCode::kInvalidArgument, owner, ": '", key, "' must be a string");
  return v->get<std::string>();
}

// The request's shape: non-negative integers, matching the model's (-1: any size).
// `dims` (non-negative) against the model's shape (-1: any size).
void check_shape(const InputContext& in, std::span<const int64_t> dims, const TensorSpec& spec) {
  bool matches = dims.size() == spec.shape.size();
  for (size_t i = 0; matches && i < dims.size(); ++i) {
    matches = spec.shape[i] == -1 || spec.shape[i] == dims[i];
  }
  if (!matches) {
    fail_input(in, "shape {} does not match the model's {}", shape_string(dims),
               shape_string(spec.shape));
  }
}

std::vector<int64_t> parse_shape(const InputContext& in, const json& object,
                                 const TensorSpec& spec) {
  const json* shape = find_member(object, "shape");
  if (shape == nullptr) fail_input(in, "missing 'shape'");
  if (!shape->is_array()) fail_input(in, "'shape' must be an array of integers");
  std::vector<int64_t> dims;
  for (const json& d : *shape) {
    if (d.is_number_unsigned() &&
        d.get<uint64_t>() <= uint64_t{std::numeric_limits<int64_t>::max()}) {
      dims.push_back(d.get<int64_t>());
    } else if (d.is_number_integer() && !d.is_number_unsigned()) {
      fail_input(in, "shape has the negative dimension {}", d.get<int64_t>());
    } else {
      // Only scalars are printed: dumping a nested value recurses as deep as the body nests.
      fail_input(in, "shape has the dimension {}, not an integer of int64's range",
                 d.is_primitive() ? d.dump() : d.type_name());
    }
    if (dims.size() > spec.shape.size()) break;  // mismatched either way; stop reading a long array
  }
  check_shape(in, dims, spec);
  return dims;
}

// The product of `shape`, or nullopt when it exceeds `cap` (no overflow: checked before
// multiplying).
std::optional<size_t> element_count(std::span<const int64_t> shape, size_t cap) {
  size_t count = 1;
  for (const int64_t d : shape) {
    if (d == 0) return 0;
  }
  for (const int64_t d : shape) {
    const auto dim = static_cast<size_t>(d);
    if (count > cap / dim) return std::nullopt;
    count *= dim;
  }
  return count;
}

// A requested output: one of the model's, not among those requested before it.
void check_requested_output(const std::string& name, std::span<const RequestedOutput> earlier,
                            const ModelMetadata& model) {
  BRAID_CHECK(std::any_of(model.outputs.begin(), model.outputs.end(),
                          [&](const TensorSpec& s) { return s.name == name; }),
              ErrorCode::kInvalidArgument, "unknown output '", name, "' (not an output of model '",
              model.name, "')");
  BRAID_CHECK(std::none_of(earlier.begin(), earlier.end(),
                           [&](const RequestedOutput& o) { return o.name == name; }),
              ErrorCode::kInvalidArgument, "output '", name, "' is requested twice");
}

// The model's inputs in its order from what a request names (each known, given once, none
// missing).
template <typename Input, typename Parse>
std::vector<InputTensor> in_model_order(const std::vector<Input>& given, const ModelMetadata& model,
                                        const Parse& parse) {
  std::vector<std::optional<InputTensor>> by_model_index(model.inputs.size());
  for (const Input& input : given) {
    const std::string& name = input.name;
    const auto spec = std::find_if(model.inputs.begin(), model.inputs.end(),
                                   [&](const TensorSpec& s) { return s.name == name; });
    if (spec == model.inputs.end()) {
      std::vector<std::string_view> names;
      for (const TensorSpec& s : model.inputs) names.push_back(s.name);
      BRAID_THROW(ErrorCode::kInvalidArgument, "unknown input '", name, "' (model '", model.name,
                  "' takes ", fmt::format("{}", fmt::join(names, ", ")), ")");
    }
    auto& slot = by_model_index[static_cast<size_t>(spec - model.inputs.begin())];
    BRAID_CHECK(!slot, ErrorCode::kInvalidArgument, "input '", name, "' is given twice");
    slot = parse(input, *spec);
  }
  std::vector<InputTensor> out;
  for (size_t i = 0; i < model.inputs.size(); ++i) {
    BRAID_CHECK(by_model_index[i].has_value(), ErrorCode::kInvalidArgument, "missing input '",
                model.inputs[i].name, "'");
    out.push_back(std::move(*by_model_index[i]));
  }
  return out;
}

// Where the binary payloads are read from, in the order the request's inputs claim them.
struct BinaryCursor {
  std::string_view rest;
  bool allowed;  // only with an Inference-Header-Content-Length header
};

InputTensor parse_input(const json& object, const TensorSpec& spec, std::string_view body,
                        BinaryCursor& binary) {
  InputTensor tensor{spec.name, spec.datatype, {}, {}};
  const std::string datatype_name =
      string_member(object, "datatype", fmt::format("input '{}'", spec.name));
  const std::optional<DataType> datatype = parse_datatype(datatype_name);
  const InputContext in{spec.name, spec.datatype};
  if (!datatype) fail_input(in, "unknown datatype '{}'", datatype_name);
  BRAID_CHECK(*datatype != DataType::kBytes, ErrorCode::kUnsupported, "input '", spec.name,
              "': BYTES tensors are not supported");
  if (*datatype != spec.datatype) {
    fail_input(in, "datatype {} does not match the model's {}", datatype_name,
               to_string(spec.datatype));
  }
  tensor.shape = parse_shape(in, object, spec);
  // No tensor holds more elements than the body has bytes (JSON needs >= 1 byte per element).
  const std::optional<size_t> count = element_count(tensor.shape, body.size());
  if (!count) {
    fail_input(in, "shape {} holds more elements than the {}-byte request carries",
               shape_string(tensor.shape), body.size());
  }

  const json* parameters = tensor_parameters_of(object, fmt::format("input '{}'", spec.name));
  const std::optional<uint64_t> binary_size =
      unsigned_parameter(parameters, "binary_data_size", fmt::format("input '{}'", spec.name));
  const json* data = find_member(object, "data");
  if (binary_size) {
    if (data != nullptr) fail_input(in, "has both 'data' and parameters.binary_data_size");
    if (!binary.allowed) {
      fail_input(in, "binary_data_size without an Inference-Header-Content-Length header");
    }
    if (*binary_size > binary.rest.size()) {
      fail_input(in, "binary_data_size {} exceeds the {} binary bytes left in the body",
                 *binary_size, binary.rest.size());
    }
    const size_t width = element_bytes(spec.datatype);
    const auto size = static_cast<size_t>(*binary_size);
    if (size % width != 0 || size / width != *count) {
      fail_input(in, "binary_data_size {} does not hold {} {} elements of shape {} ({} bytes)",
                 size, *count, to_string(spec.datatype), shape_string(tensor.shape),
                 *count * width);
    }
    tensor.values = decode_binary(in, binary.rest.substr(0, size), *count);
    binary.rest.remove_prefix(size);
    return tensor;
  }
  if (data == nullptr) fail_input(in, "no data ('data' or parameters.binary_data_size)");
  tensor.values = decode_json_data(in, *data, tensor.shape, *count);
  return tensor;
}

InferRequest parse_header(const json& root, std::string_view body, BinaryCursor binary,
                          const ModelMetadata& model) {
  BRAID_CHECK(root.is_object(), ErrorCode::kInvalidArgument,
              "the request must be a JSON object, got ", root.type_name());
  InferRequest request;
  if (const json* id = find_member(root, "id")) {
    BRAID_CHECK(id->is_string(), ErrorCode::kInvalidArgument, "'id' must be a string");
    request.id = id->get<std::string>();
  }
  const json* parameters = parameters_of(root, "request");
  request.binary_data_output =
      bool_parameter(parameters, "binary_data_output", "request").value_or(false);
  request.timeout_us = unsigned_parameter(parameters, "timeout", "request");

  const json* inputs = find_member(root, "inputs");
  BRAID_CHECK(inputs != nullptr && inputs->is_array(), ErrorCode::kInvalidArgument,
              "the request needs an 'inputs' array");
  struct Named {
    std::string name;
    const json* object;
  };
  std::vector<Named> named;
  for (const json& input : *inputs) {
    BRAID_CHECK(input.is_object(), ErrorCode::kInvalidArgument, "each input must be an object");
    named.push_back({string_member(input, "name", "an input"), &input});
  }
  // Binary payloads are claimed in the request's order: parse_input runs in it.
  request.inputs = in_model_order(named, model, [&](const Named& n, const TensorSpec& spec) {
    return parse_input(*n.object, spec, body, binary);
  });
  BRAID_CHECK(binary.rest.empty(), ErrorCode::kInvalidArgument, binary.rest.size(),
              " bytes after the JSON header are claimed by no input's binary_data_size");

  if (const json* outputs = find_member(root, "outputs")) {
    BRAID_CHECK(outputs->is_array(), ErrorCode::kInvalidArgument, "'outputs' must be an array");
    for (const json& output : *outputs) {
      BRAID_CHECK(output.is_object(), ErrorCode::kInvalidArgument, "each output must be an object");
      const std::string name = string_member(output, "name", "a requested output");
      const std::string owner = fmt::format("output '{}'", name);
      check_requested_output(name, request.outputs, model);
      const json* output_parameters = tensor_parameters_of(output, owner);
      BRAID_CHECK(output_parameters == nullptr || !output_parameters->contains("classification"),
                  ErrorCode::kUnsupported, owner,
                  ": the classification extension is not supported");
      request.outputs.push_back({name, bool_parameter(output_parameters, "binary_data", owner)
                                           .value_or(request.binary_data_output)});
    }
  }
  return request;
}

// ---- response encoding ------------------------------------------------------------------------

template <typename T>
void append_le(std::string& out, T v) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &v, sizeof v);
  out.append(bytes, sizeof v);
}

// An output value as the integer its datatype holds (values came from integer tensors).
template <typename T>
T output_integer(const OutputTensor& t, size_t index) {
  const double v = t.values[index];
  // [low, high) as exact powers of two, so the cast below is always defined.
  const double high = std::ldexp(1.0, std::numeric_limits<T>::digits);
  const double low = std::numeric_limits<T>::is_signed ? -high : 0.0;
  BRAID_CHECK(std::isfinite(v) && v >= low && v < high, ErrorCode::kInternal, "output '", t.name,
              "': value ", v, " at index ", index, " is not a ", to_string(t.datatype));
  return static_cast<T>(v);
}

template <typename T>
void append_integers(const OutputTensor& t, std::string* binary, json* data) {
  for (size_t i = 0; i < t.values.size(); ++i) {
    const T v = output_integer<T>(t, i);
    if (binary != nullptr) {
      append_le(*binary, v);
    } else {
      data->push_back(v);
    }
  }
}

// Appends the values as binary (binary != nullptr) or as JSON elements of `data`.
void encode_values(const OutputTensor& t, std::string* binary, json* data) {
  switch (t.datatype) {
    case DataType::kBool:
      for (const float v : t.values) {
        if (binary != nullptr) {
          binary->push_back(v != 0.0f ? '\1' : '\0');
        } else {
          data->push_back(v != 0.0f);
        }
      }
      return;
    case DataType::kUint8:
      return append_integers<uint8_t>(t, binary, data);
    case DataType::kUint16:
      return append_integers<uint16_t>(t, binary, data);
    case DataType::kUint32:
      return append_integers<uint32_t>(t, binary, data);
    case DataType::kUint64:
      return append_integers<uint64_t>(t, binary, data);
    case DataType::kInt8:
      return append_integers<int8_t>(t, binary, data);
    case DataType::kInt16:
      return append_integers<int16_t>(t, binary, data);
    case DataType::kInt32:
      return append_integers<int32_t>(t, binary, data);
    case DataType::kInt64:
      return append_integers<int64_t>(t, binary, data);
    case DataType::kFp16:
    case DataType::kBf16:
    case DataType::kFp32:
    case DataType::kFp64:
      for (const float v : t.values) {
        if (binary == nullptr) {
          // The type's value, as the binary form gives it; JSON has no NaN or infinity: they are
          // written as null.
          data->push_back(in_type(t.datatype, v));
        } else if (t.datatype == DataType::kFp16) {
          append_le(*binary, float_to_float16(v));
        } else if (t.datatype == DataType::kBf16) {
          append_le(*binary, float_to_bfloat16(v));
        } else if (t.datatype == DataType::kFp32) {
          append_le(*binary, v);
        } else {
          append_le(*binary, static_cast<double>(v));
        }
      }
      return;
    case DataType::kBytes:
      BRAID_THROW(ErrorCode::kUnsupported, "output '", t.name,
                  "': BYTES tensors are not supported");
  }
}

std::string dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

std::string_view to_string(DataType t) {
  return info(t).name;
}

std::optional<DataType> parse_datatype(std::string_view name) {
  for (const DataTypeInfo& i : kDataTypes) {
    if (i.name == name) return i.type;
  }
  return std::nullopt;
}

DataType datatype_of(ir::DType t) {
  switch (t) {
    case ir::DType::kFloat32:
      return DataType::kFp32;
    case ir::DType::kInt64:
      return DataType::kInt64;
    case ir::DType::kBool:
      return DataType::kBool;
  }
  BRAID_THROW(ErrorCode::kInternal, "unknown ir::DType ", static_cast<int>(t));
}

DataType datatype_of(models::ElementType t) {
  switch (t) {  // the enum only: the protocol's library does not link the models library
    case models::ElementType::kFloat32:
      return DataType::kFp32;
    case models::ElementType::kFloat16:
      return DataType::kFp16;
    case models::ElementType::kBFloat16:
      return DataType::kBf16;
    case models::ElementType::kInt64:
      return DataType::kInt64;
    case models::ElementType::kBool:
      return DataType::kBool;
  }
  BRAID_THROW(ErrorCode::kInternal, "unknown models::ElementType ", static_cast<int>(t));
}

size_t element_bytes(DataType t) {
  return info(t).bytes;
}

nlohmann::json to_json(const ModelMetadata& model) {
  auto tensors = [](const std::vector<TensorSpec>& specs) {
    json list = json::array();
    for (const TensorSpec& s : specs) {
      list.push_back({{"name", s.name}, {"datatype", to_string(s.datatype)}, {"shape", s.shape}});
    }
    return list;
  };
  return {{"name", model.name},
          {"versions", model.versions},
          {"platform", model.platform},
          {"inputs", tensors(model.inputs)},
          {"outputs", tensors(model.outputs)}};
}

InferRequest parse_infer_request(std::string_view body, std::optional<size_t> header_length,
                                 const ModelMetadata& model) {
  std::string_view header = body;
  BinaryCursor binary{{}, false};
  if (header_length && *header_length > 0) {
    BRAID_CHECK(*header_length <= body.size(), ErrorCode::kInvalidArgument,
                "Inference-Header-Content-Length ", *header_length, " exceeds the body's ",
                body.size(), " bytes");
    header = body.substr(0, *header_length);
    binary = {body.substr(*header_length), true};
  }
  // nlohmann's lexer ends the input at a NUL byte; JSON text never holds one, so refuse it rather
  // than ignore what follows (typically binary data sent without the header-length header).
  const size_t nul = header.find('\0');
  BRAID_CHECK(nul == std::string_view::npos, ErrorCode::kInvalidArgument,
              "malformed JSON in the request: a NUL byte at offset ", nul,
              " (binary tensors need the Inference-Header-Content-Length header)");
  json root;
  try {
    root = json::parse(header);
  } catch (const json::exception& e) {
    BRAID_THROW(ErrorCode::kInvalidArgument, "malformed JSON in the request: ", e.what());
  }
  try {
    return parse_header(root, body, binary, model);
  } catch (const json::exception& e) {
    // Every access above checks its type first; this is a backstop so none escapes as a crash.
    BRAID_THROW(ErrorCode::kInvalidArgument, "invalid request: ", e.what());
  }
}

EncodedResponse encode_infer_response(std::string_view model_name, std::string_view model_version,
                                      const InferRequest& request,
                                      std::span<const OutputTensor> outputs) {
  std::vector<RequestedOutput> wanted = request.outputs;
  if (wanted.empty()) {
    for (const OutputTensor& t : outputs) wanted.push_back({t.name, request.binary_data_output});
  }
  json root = {{"model_name", model_name}};
  if (!model_version.empty()) root["model_version"] = model_version;
  root["id"] = request.id;
  json& list = root["outputs"] = json::array();
  std::string payloads;
  bool any_binary = false;
  for (const RequestedOutput& w : wanted) {
    const auto t = std::find_if(outputs.begin(), outputs.end(),
                                [&](const OutputTensor& o) { return o.name == w.name; });
    BRAID_CHECK(t != outputs.end(), ErrorCode::kInternal, "output '", w.name,
                "' was requested but not computed");
    const bool shape_ok =
        std::all_of(t->shape.begin(), t->shape.end(), [](int64_t d) { return d >= 0; });
    BRAID_CHECK(shape_ok && element_count(t->shape, t->values.size()) == t->values.size(),
                ErrorCode::kInternal, "output '", t->name, "': ", t->values.size(),
                " values for shape ", shape_string(t->shape));
    json out = {{"name", t->name}, {"datatype", to_string(t->datatype)}, {"shape", t->shape}};
    if (w.binary) {
      const size_t before = payloads.size();
      encode_values(*t, &payloads, nullptr);
      out["parameters"] = {{"binary_data_size", payloads.size() - before}};
      any_binary = true;
    } else {
      json& data = out["data"] = json::array();
      encode_values(*t, nullptr, &data);
    }
    list.push_back(std::move(out));
  }
  EncodedResponse response;
  response.body = dump(root);
  if (any_binary) {
    response.header_length = response.body.size();
    response.body += payloads;
    response.content_type = "application/octet-stream";
  } else {
    response.content_type = "application/json";
  }
  return response;
}

std::string error_body(std::string_view message) {
  return dump(json{{"error", std::string(message)}});
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

InferRequest make_infer_request(std::string id, const std::vector<RawInput>& inputs,
                                std::vector<RequestedOutput> outputs,
                                std::optional<uint64_t> timeout_us, const ModelMetadata& model) {
  InferRequest request{.id = std::move(id), .timeout_us = timeout_us};
  request.inputs = in_model_order(inputs, model, [](const RawInput& raw, const TensorSpec& spec) {
    const InputContext in{spec.name, spec.datatype};
    const std::optional<DataType> datatype = parse_datatype(raw.datatype);
    if (!datatype) fail_input(in, "unknown datatype '{}'", raw.datatype);
    BRAID_CHECK(*datatype != DataType::kBytes, ErrorCode::kUnsupported, "input '", spec.name,
                "': BYTES tensors are not supported");
    if (*datatype != spec.datatype) {
      fail_input(in, "datatype {} does not match the model's {}", raw.datatype,
                 to_string(spec.datatype));
    }
    for (const int64_t d : raw.shape)
      if (d < 0) fail_input(in, "shape has the negative dimension {}", d);
    check_shape(in, raw.shape, spec);
    const size_t width = element_bytes(spec.datatype);
    const std::optional<size_t> count = element_count(raw.shape, raw.bytes.size() / width + 1);
    if (!count) {
      fail_input(in, "shape {} holds more {} elements than the {} bytes given",
                 shape_string(raw.shape), to_string(spec.datatype), raw.bytes.size());
    }
    if (*count * width != raw.bytes.size()) {
      fail_input(in, "{} bytes do not hold the {} {} elements of shape {}", raw.bytes.size(),
                 *count, to_string(spec.datatype), shape_string(raw.shape));
    }
    return InputTensor{spec.name, spec.datatype, raw.shape, decode_binary(in, raw.bytes, *count)};
  });
  for (size_t i = 0; i < outputs.size(); ++i)
    check_requested_output(outputs[i].name, std::span(outputs).first(i), model);
  request.outputs = std::move(outputs);
  return request;
}

std::string encode_tensor_bytes(const OutputTensor& tensor) {
  std::string bytes;
  encode_values(tensor, &bytes, nullptr);
  return bytes;
}

}  // namespace braid::serve
