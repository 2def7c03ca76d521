// The protocol codec alone: JSON and binary requests parsed against a model, every check with
// its message, and responses encoded as asked.
#include "serve/protocol.h"

#include <gtest/gtest.h>

#include <cstring>

namespace braid::serve {
namespace {

using nlohmann::json;

// Two inputs (one with a variable batch), two outputs.
ModelMetadata model() {
  return {.name = "m",
          .versions = {"1"},
          .platform = "onnxruntime_onnx",
          .inputs = {{"x", DataType::kFp32, {-1, 3}}, {"ids", DataType::kInt64, {2}}},
          .outputs = {{"y", DataType::kFp32, {1, 2}}, {"z", DataType::kInt64, {1}}}};
}

json good_json() {
  return {{"id", "r1"},
          {"inputs",
           {{{"name", "ids"}, {"shape", {2}}, {"datatype", "INT64"}, {"data", {7, 9}}},
            {{"name", "x"},
             {"shape", {2, 3}},
             {"datatype", "FP32"},
             {"data", {{1.5, 2, 3}, {4, 5, 6.25}}}}}}};
}

void expect_error(const std::string& body, std::optional<size_t> header_length,
                  const std::string& fragment, ErrorCode code = ErrorCode::kInvalidArgument) {
  try {
    parse_infer_request(body, header_length, model());
    ADD_FAILURE() << "accepted: " << body.substr(0, 200);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos)
        << "'" << e.what() << "' lacks '" << fragment << "'";
  }
}

TEST(Protocol, JsonRequestNestedDataInModelOrder) {
  const InferRequest r = parse_infer_request(good_json().dump(), std::nullopt, model());
  EXPECT_EQ(r.id, "r1");
  ASSERT_EQ(r.inputs.size(), 2u);
  EXPECT_EQ(r.inputs[0].name, "x");  // reordered to the model's order
  EXPECT_EQ(r.inputs[0].shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(r.inputs[0].values, (std::vector<float>{1.5f, 2, 3, 4, 5, 6.25f}));
  EXPECT_EQ(r.inputs[1].values, (std::vector<float>{7, 9}));
  EXPECT_TRUE(r.outputs.empty());
  EXPECT_FALSE(r.timeout_us.has_value());
}

TEST(Protocol, BinaryInputsAreBitExact) {
  const std::vector<float> x = {0.1f, -3.25f, 1e-30f, 7, 8, 9};
  const std::vector<int64_t> ids = {123456, -4};
  json head = {{"inputs",
                {{{"name", "x"},
                  {"shape", {2, 3}},
                  {"datatype", "FP32"},
                  {"parameters", {{"binary_data_size", 24}}}},
                 {{"name", "ids"},
                  {"shape", {2}},
                  {"datatype", "INT64"},
                  {"parameters", {{"binary_data_size", 16}}}}}},
               {"parameters", {{"binary_data_output", true}, {"timeout", 5000}}},
               {"outputs", {{{"name", "z"}, {"parameters", {{"binary_data", false}}}}}}};
  const std::string h = head.dump();
  std::string body = h;
  body.append(reinterpret_cast<const char*>(x.data()), 24);
  body.append(reinterpret_cast<const char*>(ids.data()), 16);
  const InferRequest r = parse_infer_request(body, h.size(), model());
  EXPECT_EQ(r.inputs[0].values, x);
  EXPECT_EQ(r.inputs[1].values, (std::vector<float>{123456, -4}));
  EXPECT_TRUE(r.binary_data_output);
  EXPECT_EQ(r.timeout_us, 5000u);
  ASSERT_EQ(r.outputs.size(), 1u);
  EXPECT_FALSE(r.outputs[0].binary);  // its own parameter wins
  // A byte short, a byte over, and a header length beyond the body.
  expect_error(body.substr(0, body.size() - 1), h.size(), "left in the body");
  expect_error(body + "x", h.size(), "bytes after the binary inputs");
  expect_error(body, body.size() + 1, "Inference-Header-Content-Length");
  expect_error(h, std::nullopt, "no Inference-Header-Content-Length");
}

TEST(Protocol, EveryCheckNamesTheTensor) {
  auto with = [](auto edit) {
    json j = good_json();
    edit(j);
    return j.dump();
  };
  expect_error("{not json", std::nullopt, "malformed JSON");
  expect_error("[1,2]", std::nullopt, "JSON object");
  expect_error("{}", std::nullopt, "no 'inputs'");
  expect_error(with([](json& j) {
                 j["inputs"][1]["shape"] = {2, 4};
               }),
               std::nullopt, "input 'x': shape [2,4] does not match the model's [-1,3]");
  expect_error(with([](json& j) {
                 j["inputs"][1]["shape"] = {2, -3};
               }),
               std::nullopt, "not a size >= 0");
  expect_error(with([](json& j) { j["inputs"][1]["datatype"] = "FP64"; }), std::nullopt,
               "input 'x': datatype FP64, the model takes FP32");
  expect_error(with([](json& j) { j["inputs"][1]["datatype"] = "FLOAT"; }), std::nullopt,
               "unknown datatype 'FLOAT'");
  expect_error(with([](json& j) { j["inputs"][1]["datatype"] = "BYTES"; }), std::nullopt, "BYTES",
               ErrorCode::kUnsupported);
  expect_error(with([](json& j) {
                 j["inputs"][1]["data"] = {1, 2, 3};
               }),
               std::nullopt, "input 'x': data has 3 elements, its shape [2,3] has 6");
  expect_error(with([](json& j) { j["inputs"][1]["data"] = {1, 2, 3, 4, 5, 6, 7}; }), std::nullopt,
               "more elements than its shape");
  expect_error(with([](json& j) { j["inputs"][1]["data"] = "abc"; }), std::nullopt,
               "'data' must be an array");
  expect_error(with([](json& j) { j["inputs"][1]["data"][0][1] = "two"; }), std::nullopt,
               "is string, not a number");
  expect_error(with([](json& j) { j["inputs"][1]["name"] = "w"; }), std::nullopt,
               "input 'w' is not an input of model 'm' (it takes 'x', 'ids')");
  expect_error(with([](json& j) { j["inputs"][1]["name"] = "ids"; }), std::nullopt, "given twice");
  expect_error(with([](json& j) { j["inputs"].erase(0); }), std::nullopt,
               "input 'ids' of model 'm' is missing");
  expect_error(with([](json& j) {
                 j["outputs"] = {{{"name", "q"}}};
               }),
               std::nullopt, "output 'q' is not an output");
  expect_error(with([](json& j) { j["id"] = 5; }), std::nullopt, "'id' must be a string");
  expect_error(with([](json& j) { j["parameters"] = {{"timeout", -1}}; }), std::nullopt, "timeout");
  expect_error(with([](json& j) { j["inputs"][1]["shape"] = {4000000000, 3}; }), std::nullopt, "");
}

TEST(Protocol, ResponsesAsAsked) {
  InferRequest r{.id = "abc"};
  const std::vector<OutputTensor> outputs = {{"y", DataType::kFp32, {1, 2}, {0.5f, -1e-7f}},
                                             {"z", DataType::kInt64, {1}, {42}}};
  // Everything in JSON.
  EncodedResponse e = encode_infer_response("m", "1", r, outputs);
  EXPECT_FALSE(e.header_length.has_value());
  EXPECT_EQ(e.content_type, "application/json");
  json j = json::parse(e.body);
  EXPECT_EQ(j["id"], "abc");
  EXPECT_EQ(j["model_name"], "m");
  EXPECT_EQ(j["outputs"][0]["data"].get<std::vector<float>>(), outputs[0].values);
  EXPECT_EQ(j["outputs"][1]["data"][0], 42);
  EXPECT_TRUE(j["outputs"][1]["data"][0].is_number_integer());

  // y alone, in binary.
  r.outputs = {{.name = "y", .binary = true}};
  e = encode_infer_response("m", "1", r, outputs);
  ASSERT_TRUE(e.header_length.has_value());
  j = json::parse(e.body.substr(0, *e.header_length));
  ASSERT_EQ(j["outputs"].size(), 1u);
  EXPECT_EQ(j["outputs"][0]["parameters"]["binary_data_size"], 8);
  ASSERT_EQ(e.body.size(), *e.header_length + 8);
  std::vector<float> y(2);
  std::memcpy(y.data(), e.body.data() + *e.header_length, 8);
  EXPECT_EQ(y, outputs[0].values);

  EXPECT_EQ(json::parse(error_body("bad \"x\"\n"))["error"], "bad \"x\"\n");
  EXPECT_EQ(http_status(ErrorCode::kInvalidArgument), 400);
  EXPECT_EQ(http_status(ErrorCode::kNotFound), 404);
  EXPECT_EQ(http_status(ErrorCode::kUnsupported), 501);
}

TEST(Protocol, DatatypesRoundTripTheirNames) {
  for (std::string_view name : {"BOOL", "UINT8", "INT64", "FP16", "FP32", "FP64", "BYTES"}) {
    const auto t = parse_datatype(name);
    ASSERT_TRUE(t.has_value()) << name;
    EXPECT_EQ(to_string(*t), name);
  }
  EXPECT_FALSE(parse_datatype("fp32").has_value());
  EXPECT_EQ(element_bytes(DataType::kFp16), 2u);
  EXPECT_EQ(datatype_of(ir::DType::kInt64), DataType::kInt64);
  EXPECT_EQ(to_json(model())["inputs"][0]["shape"], json({-1, 3}));
}

}  // namespace
}  // namespace braid::serve
