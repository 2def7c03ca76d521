// libFuzzer entry point for the inference request parser (protocol.h) on a fixed two-input model.
// The first two bytes choose the Inference-Header-Content-Length header (little-endian; 0xffff: no
// header), the rest is the body. Any bytes must end in a validated request or a braid::Error; a
// crash, an abort, a sanitizer report or any other exception is a bug. An accepted request must
// hold what was validated, and encoding a response to it must give parseable JSON.
// scripts/fuzz.sh runs it.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string_view>

#include "base/error.h"
#include "serve/protocol.h"

namespace {

using braid::serve::DataType;

const braid::serve::ModelMetadata& model() {
  static const braid::serve::ModelMetadata m{
      "fuzz",
      {"1"},
      "braid",
      {{"x", DataType::kFp32, {-1, 3}}, {"ids", DataType::kInt64, {2}}},
      {{"y", DataType::kFp32, {-1, 3}}, {"ids", DataType::kInt64, {2}}}};
  return m;
}

constexpr uint16_t kNoHeader = 0xffff;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const auto choice = static_cast<uint16_t>(data[0] | (data[1] << 8));
  const std::optional<size_t> header_length =
      choice == kNoHeader ? std::nullopt : std::optional<size_t>(choice);
  const std::string_view body(reinterpret_cast<const char*>(data) + 2, size - 2);
  braid::serve::InferRequest request;
  try {
    request = braid::serve::parse_infer_request(body, header_length, model());
  } catch (const braid::Error&) {
    return 0;  // rejected with a message: fine
  }
  // Accepted: every model input, in the model's order, with as many values as its shape holds.
  if (request.inputs.size() != model().inputs.size()) std::abort();
  std::vector<braid::serve::OutputTensor> outputs;
  for (size_t i = 0; i < request.inputs.size(); ++i) {
    const braid::serve::InputTensor& in = request.inputs[i];
    if (in.name != model().inputs[i].name) std::abort();
    size_t count = 1;
    for (const int64_t d : in.shape) count *= static_cast<size_t>(d);
    if (in.values.size() != count) std::abort();
    outputs.push_back({in.name == "x" ? "y" : "ids", in.datatype, in.shape, in.values});
  }
  // The outputs echo the inputs; their header must parse. An exception here escapes and is
  // reported.
  const braid::serve::EncodedResponse response =
      braid::serve::encode_infer_response("fuzz", "1", request, outputs);
  const size_t json_size = response.header_length.value_or(response.body.size());
  (void)nlohmann::json::parse(std::string_view(response.body).substr(0, json_size));
  return 0;
}
