// The Open Inference Protocol v2 (KServe v2, as Triton speaks it over HTTP/REST) as a codec:
// request bodies in, validated tensors out; output tensors in, response bodies out. No transport
// here: the server hands the POST body (and the Inference-Header-Content-Length header) to
// parse_infer_request and writes what encode_infer_response returns.
//
//   ModelMetadata model{"tiny", {"1"}, "braid", {{"x", DataType::kFp32, {-1, 3}}}, {{"y", ...}}};
//   InferRequest req = parse_infer_request(body, header_length, model);   // throws braid::Error
//   ... run req.inputs (in the model's input order) ...
//   EncodedResponse res = encode_infer_response("tiny", "1", req, outputs);
//
// Formats (docs/serving.md; KServe "v2-protocol", Triton "extension_binary_data"):
//   request  {"id"?, "parameters"?: {"binary_data_output"?, "timeout"? (µs)},
//             "inputs": [{"name", "datatype", "shape", "parameters"?: {"binary_data_size"?},
//             "data"?}], "outputs"?: [{"name", "parameters"?: {"binary_data"?}}]}
//   response {"model_name", "model_version"?, "id", "outputs": [{"name", "datatype", "shape",
//             "data" | "parameters": {"binary_data_size"}}]}
// Binary payloads (little-endian, row-major, BOOL one byte 0/1) follow the JSON header in the order
// of the tensors that claim them. Any byte string gives a result or a braid::Error; nothing else.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "ir/tensor_type.h"
#include "models/element_type.h"

namespace braid::serve {

/// The protocol's tensor element types ("BOOL", "UINT8", ..., "FP32", "BYTES", "BF16"), in
/// Triton's order.
enum class DataType : uint8_t {
  kBool,
  kUint8,
  kUint16,
  kUint32,
  kUint64,
  kInt8,
  kInt16,
  kInt32,
  kInt64,
  kFp16,
  kFp32,
  kFp64,
  kBytes,
  kBf16
};

std::string_view to_string(DataType);  // "FP32"
std::optional<DataType> parse_datatype(std::string_view);
DataType datatype_of(ir::DType);
// A model's declared type: FP16 and BF16 for an FP16 or BF16 model's tensors (computed as float).
DataType datatype_of(models::ElementType);
size_t element_bytes(DataType);  // 0 for BYTES (variable length)

/// A model input or output as the metadata endpoint describes it; -1 marks a dimension of any size.
struct TensorSpec {
  std::string name;
  DataType datatype = DataType::kFp32;
  std::vector<int64_t> shape;
};

struct ModelMetadata {
  std::string name;
  std::vector<std::string> versions;
  std::string platform;
  std::vector<TensorSpec> inputs, outputs;
};

/// The body of GET /v2/models/{m}.
nlohmann::json to_json(const ModelMetadata&);

/// A validated input. Values are float because braid's executors take float (ir::store_floats
/// converts int64/bool back); FP32 is bit-exact, integers are refused unless exact in float
/// (|v| <= 2^24), FP64 is rounded to the nearest float.
struct InputTensor {
  std::string name;
  DataType datatype = DataType::kFp32;
  std::vector<int64_t> shape;
  std::vector<float> values;
};

struct RequestedOutput {
  std::string name;
  bool binary = false;  // the output's binary_data, else the request's binary_data_output
};

struct InferRequest {
  std::string id;                        // echoed back ("" if none)
  std::vector<InputTensor> inputs;       // in the MODEL's input order (reordered from the request)
  std::vector<RequestedOutput> outputs;  // empty: all outputs, binary iff binary_data_output
  bool binary_data_output = false;       // request-level parameter
  std::optional<uint64_t> timeout_us;    // parameters.timeout (Triton: microseconds), if given
};

/// Parses and validates one POST .../infer body against `model`.
/// `header_length` is the Inference-Header-Content-Length header's value when present: the JSON
/// header is body[0, header_length) and binary payloads follow (0, like an absent header, means
/// the whole body is JSON, as Triton reads it). Every model input must be given exactly once with
/// the model's datatype, a matching shape (-1 matches any size) and as many elements as the shape
/// holds; requested outputs must exist. Throws braid::Error(kInvalidArgument) naming the tensor and
/// what was expected, kUnsupported for BYTES tensors and the classification extension.
InferRequest parse_infer_request(std::string_view body, std::optional<size_t> header_length,
                                 const ModelMetadata& model);

/// An input as a transport other than JSON carries it (gRPC's ModelInferRequest): the datatype
/// and shape it declares and its values as little-endian bytes (the binary extension's layout).
struct RawInput {
  std::string name;
  std::string datatype;
  std::vector<int64_t> shape;
  std::string_view bytes;
};

/// Validates `inputs` as parse_infer_request validates a body (every model input exactly once,
/// its datatype, a matching shape, bytes for exactly that many elements; requested outputs exist,
/// once each) and returns the request, inputs in the model's order. Same errors.
InferRequest make_infer_request(std::string id, const std::vector<RawInput>& inputs,
                                std::vector<RequestedOutput> outputs,
                                std::optional<uint64_t> timeout_us, const ModelMetadata& model);

/// A computed output; values.size() must equal the product of shape.
struct OutputTensor {
  std::string name;
  DataType datatype = DataType::kFp32;
  std::vector<int64_t> shape;
  std::vector<float> values;
};

struct EncodedResponse {
  std::string body;
  std::optional<size_t> header_length;  // set iff binary payloads follow the JSON
  std::string content_type;             // application/json or application/octet-stream
};

/// Encodes the response to `request`: the outputs it asked for, in its order (all of `outputs`
/// when it named none), each as JSON data or as a binary payload. Throws braid::Error(kInternal)
/// when a requested output is absent from `outputs` or has the wrong number of values.
EncodedResponse encode_infer_response(std::string_view model_name, std::string_view model_version,
                                      const InferRequest& request,
                                      std::span<const OutputTensor> outputs);

/// An output's values as little-endian bytes of its datatype (the binary extension's layout).
std::string encode_tensor_bytes(const OutputTensor& tensor);

/// {"error": "..."}, JSON-escaped (invalid UTF-8 replaced, never thrown on).
std::string error_body(std::string_view message);

/// The HTTP status for an error, as Triton maps its errors: bad input 400, kNotFound 404,
/// kUnsupported 501, kInternal 500. 503 (overload, draining) is the server's decision.
int http_status(ErrorCode code);

}  // namespace braid::serve
