// The Open Inference Protocol v2 (KServe v2, what Triton's clients speak), as data: model
// metadata, inference requests parsed and checked against a model, responses encoded — JSON
// tensors and Triton's binary tensor extension (the JSON header's length in the
// Inference-Header-Content-Length header, raw tensors after it). No HTTP here: the server
// (server.h) feeds bodies in and writes what comes out.
//
//   InferRequest r = parse_infer_request(body, header_length, metadata);  // or kInvalidArgument
//   EncodedResponse out = encode_infer_response("resnet50", "1", r, outputs);
//
// Any byte string gives a request or a braid::Error naming what is wrong and where: never a
// crash, an uncaught exception of the JSON library, or an allocation sized by a lying field.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "ir/tensor_type.h"

namespace braid::serve {

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
};
std::string_view to_string(DataType);  // "FP32"
std::optional<DataType> parse_datatype(std::string_view);
DataType datatype_of(ir::DType);
size_t element_bytes(DataType);  // 0 for BYTES

struct TensorSpec {
  std::string name;
  DataType datatype = DataType::kFp32;
  std::vector<int64_t> shape;  // -1: any size
};

struct ModelMetadata {
  std::string name;
  std::vector<std::string> versions;
  std::string platform;
  std::vector<TensorSpec> inputs, outputs;
};
nlohmann::json to_json(const ModelMetadata&);  // GET /v2/models/{m}

// Values are floats (braid's executors take float; int64 and bool convert back at the
// executor, ir::store_floats); FP32 is carried bit for bit.
struct InputTensor {
  std::string name;
  DataType datatype = DataType::kFp32;
  std::vector<int64_t> shape;
  std::vector<float> values;
};

struct RequestedOutput {
  std::string name;
  bool binary = false;
};

struct InferRequest {
  std::string id;                        // echoed back ("" if none)
  std::vector<InputTensor> inputs;       // in the model's input order
  std::vector<RequestedOutput> outputs;  // empty: every output
  bool binary_data_output = false;       // parameters.binary_data_output: outputs in binary
  std::optional<uint64_t> timeout_us;    // parameters.timeout (µs, as Triton)
};

// `header_length`: the Inference-Header-Content-Length value when given (the JSON is
// body[0, header_length); binary inputs follow in input order, each its
// parameters.binary_data_size bytes). Checked against `model`: every input given once, none
// unknown, its datatype the model's, its shape the model's (-1 matches any size), its data as
// many elements as its shape; requested outputs exist. kInvalidArgument naming the tensor and
// what was expected; kUnsupported for BYTES tensors.
InferRequest parse_infer_request(std::string_view body, std::optional<size_t> header_length,
                                 const ModelMetadata& model);

struct OutputTensor {
  std::string name;
  DataType datatype = DataType::kFp32;
  std::vector<int64_t> shape;
  std::vector<float> values;
};

struct EncodedResponse {
  std::string body;
  std::optional<size_t> header_length;  // set when binary tensors follow the JSON
  std::string content_type;             // application/json or application/octet-stream
};

// The outputs the request asked for (all when it named none), each in JSON or binary as asked.
EncodedResponse encode_infer_response(std::string_view model_name, std::string_view model_version,
                                      const InferRequest& request,
                                      std::span<const OutputTensor> outputs);

std::string error_body(std::string_view message);  // {"error": "..."}
// The status Triton gives an error of this kind: 400 bad input, 404 not found, 501
// unsupported, 500 internal.
int http_status(ErrorCode code);

}  // namespace braid::serve
