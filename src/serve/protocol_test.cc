#include "serve/protocol.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include <gtest/gtest.h>

namespace braid::serve {
namespace {

using nlohmann::json;

// Two inputs (a variable batch and a fixed vector), two outputs.
ModelMetadata tiny_model() {
  return {"tiny",
          {"1"},
          "braid",
          {{"x", DataType::kFp32, {-1, 2}}, {"ids", DataType::kInt64, {3}}},
          {{"y", DataType::kFp32, {-1, 2}}, {"mask", DataType::kBool, {3}}}};
}

json x_json(json data, json shape = {2, 2}) {
  return {{"name", "x"}, {"datatype", "FP32"}, {"shape", shape}, {"data", data}};
}
json ids_json(json data = {7, -8, 9}) {
  return {{"name", "ids"}, {"datatype", "INT64"}, {"shape", {3}}, {"data", data}};
}

InferRequest parse(const json& body) {
  return parse_infer_request(body.dump(), std::nullopt, tiny_model());
}

template <typename T>
std::string bytes_of(std::initializer_list<T> values) {
  std::string out;
  for (const T v : values) out.append(reinterpret_cast<const char*>(&v), sizeof v);
  return out;
}

// Expects kInvalidArgument (or `code`) with `fragment` in the message.
void expect_error(std::string_view body, std::optional<size_t> header_length,
                  std::string_view fragment, ErrorCode code = ErrorCode::kInvalidArgument) {
  try {
    parse_infer_request(body, header_length, tiny_model());
    ADD_FAILURE() << "accepted: " << body;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos)
        << "message '" << e.what() << "' lacks '" << fragment << "'";
  }
}
void expect_error(const json& body, std::string_view fragment,
                  ErrorCode code = ErrorCode::kInvalidArgument) {
  expect_error(body.dump(), std::nullopt, fragment, code);
}

TEST(Protocol, DataTypeNames) {
  for (int i = 0; i <= static_cast<int>(DataType::kBytes); ++i) {
    const auto t = static_cast<DataType>(i);
    EXPECT_EQ(parse_datatype(to_string(t)), t);
  }
  EXPECT_EQ(to_string(DataType::kFp32), "FP32");
  EXPECT_EQ(parse_datatype("fp32"), std::nullopt);  // the protocol's names are upper case
  EXPECT_EQ(datatype_of(ir::DType::kFloat32), DataType::kFp32);
  EXPECT_EQ(datatype_of(ir::DType::kInt64), DataType::kInt64);
  EXPECT_EQ(datatype_of(ir::DType::kBool), DataType::kBool);
  EXPECT_EQ(element_bytes(DataType::kFp16), 2u);
  EXPECT_EQ(element_bytes(DataType::kBytes), 0u);
}

TEST(Protocol, MetadataJson) {
  const json j = to_json(tiny_model());
  EXPECT_EQ(j["name"], "tiny");
  EXPECT_EQ(j["versions"], json::array({"1"}));
  EXPECT_EQ(j["platform"], "braid");
  EXPECT_EQ(j["inputs"][0], json({{"name", "x"}, {"datatype", "FP32"}, {"shape", {-1, 2}}}));
  EXPECT_EQ(j["outputs"][1]["datatype"], "BOOL");
}

TEST(Protocol, JsonFlatAndNestedInModelOrder) {
  // ids comes first in the request; the parsed inputs follow the model's order.
  const InferRequest flat = parse({{"id", "r1"}, {"inputs", {ids_json(), x_json({1.5, 2, 3, 4})}}});
  ASSERT_EQ(flat.inputs.size(), 2u);
  EXPECT_EQ(flat.id, "r1");
  EXPECT_EQ(flat.inputs[0].name, "x");
  EXPECT_EQ(flat.inputs[0].shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(flat.inputs[0].values, (std::vector<float>{1.5f, 2, 3, 4}));
  EXPECT_EQ(flat.inputs[1].name, "ids");
  EXPECT_EQ(flat.inputs[1].datatype, DataType::kInt64);
  EXPECT_EQ(flat.inputs[1].values, (std::vector<float>{7, -8, 9}));
  EXPECT_TRUE(flat.outputs.empty());
  EXPECT_FALSE(flat.binary_data_output);
  EXPECT_FALSE(flat.timeout_us.has_value());

  const InferRequest nested =
      parse({{"inputs", {x_json(json::parse("[[1.5, 2], [3, 4]]")), ids_json()}}});
  EXPECT_EQ(nested.id, "");
  EXPECT_EQ(nested.inputs[0].values, flat.inputs[0].values);
}

TEST(Protocol, VariableDimensionTakesAnySize) {
  EXPECT_EQ(
      parse({{"inputs", {x_json(json::array(), {0, 2}), ids_json()}}}).inputs[0].values.size(), 0u);
  EXPECT_EQ(
      parse({{"inputs", {x_json({1, 2, 3, 4, 5, 6}, {3, 2}), ids_json()}}}).inputs[0].shape[0], 3);
}

TEST(Protocol, ParametersAndRequestedOutputs) {
  const InferRequest r =
      parse({{"parameters", {{"binary_data_output", true}, {"timeout", 2500}}},
             {"inputs", {x_json({1, 2, 3, 4}), ids_json()}},
             {"outputs",
              {{{"name", "mask"}, {"parameters", {{"binary_data", false}}}}, {{"name", "y"}}}}});
  EXPECT_TRUE(r.binary_data_output);
  EXPECT_EQ(r.timeout_us, 2500u);
  ASSERT_EQ(r.outputs.size(), 2u);
  EXPECT_EQ(r.outputs[0].name, "mask");
  EXPECT_FALSE(r.outputs[0].binary);  // the output's own parameter wins
  EXPECT_EQ(r.outputs[1].name, "y");
  EXPECT_TRUE(r.outputs[1].binary);  // the request's binary_data_output
}

TEST(Protocol, BinaryInputsAreBitExact) {
  // Values that a decimal round trip could disturb: a NaN payload, a subnormal, -0, max float.
  const float nan_payload = std::bit_cast<float>(0x7fc12345u);
  const float subnormal = std::numeric_limits<float>::denorm_min();
  const std::string x_bytes = bytes_of<float>({nan_payload, subnormal, -0.0f, 3.4028235e38f});
  const std::string ids_bytes = bytes_of<int64_t>({16777216, -16777216, 0});
  const json header = {{"inputs",
                        {{{"name", "ids"},
                          {"datatype", "INT64"},
                          {"shape", {3}},
                          {"parameters", {{"binary_data_size", ids_bytes.size()}}}},
                         {{"name", "x"},
                          {"datatype", "FP32"},
                          {"shape", {2, 2}},
                          {"parameters", {{"binary_data_size", x_bytes.size()}}}}}}};
  const std::string text = header.dump();
  const InferRequest r = parse_infer_request(text + ids_bytes + x_bytes, text.size(), tiny_model());
  ASSERT_EQ(r.inputs[0].values.size(), 4u);
  EXPECT_EQ(std::memcmp(r.inputs[0].values.data(), x_bytes.data(), x_bytes.size()), 0);
  EXPECT_EQ(r.inputs[1].values, (std::vector<float>{16777216, -16777216, 0}));
}

TEST(Protocol, BinaryAndJsonInputsMix) {
  const std::string x_bytes = bytes_of<float>({1, 2, 3, 4});
  const json header = {{"inputs",
                        {{{"name", "x"},
                          {"datatype", "FP32"},
                          {"shape", {2, 2}},
                          {"parameters", {{"binary_data_size", x_bytes.size()}}}},
                         ids_json()}}};
  const std::string text = header.dump();
  const InferRequest r = parse_infer_request(text + x_bytes, text.size(), tiny_model());
  EXPECT_EQ(r.inputs[0].values, (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(r.inputs[1].values, (std::vector<float>{7, -8, 9}));
}

TEST(Protocol, HeaderLengthZeroOrFullMeansJsonOnly) {
  const std::string body = json{{"inputs", {x_json({1, 2, 3, 4}), ids_json()}}}.dump();
  EXPECT_EQ(parse_infer_request(body, 0, tiny_model()).inputs.size(), 2u);
  EXPECT_EQ(parse_infer_request(body, body.size(), tiny_model()).inputs.size(), 2u);
}

TEST(Protocol, ValidationErrorsNameTheTensor) {
  const json ids = ids_json();
  expect_error({{"inputs", {x_json({1, 2, 3}, {1, 3}), ids}}},
               "input 'x': shape [1,3] does not match the model's [-1,2]");
  expect_error({{"inputs", {x_json({1, 2, 3, 4}, {4}), ids}}},
               "input 'x': shape [4] does not match the model's [-1,2]");
  expect_error({{"inputs", {x_json({1, 2, 3}), ids}}},
               "input 'x': data holds 3 elements, shape [2,2] needs 4");
  expect_error({{"inputs", {x_json({1, 2, 3, 4}, {2, -2}), ids}}},
               "input 'x': shape has the negative dimension -2");
  expect_error({{"inputs", {x_json({1, 2, 3, 4}, {2, 2.0}), ids}}},
               "input 'x': shape has the dimension 2.0");
  expect_error({{"inputs", {x_json("abc"), ids}}},
               "input 'x': 'data' must be an array, got string");
  expect_error({{"inputs", {x_json({1, "2", 3, 4}), ids}}}, "input 'x': element 1 is not a number");
  expect_error({{"inputs", {x_json(json::parse("[[1, 2], [3]]")), ids}}},
               "input 'x': nested data does not follow shape [2,2]");
  expect_error({{"inputs", {x_json(json::parse("[[1, 2], 3]")), ids}}},
               "input 'x': nested data does not follow");
  expect_error({{"inputs", {x_json(json::parse("[[[1], [2]], [[3], [4]]]")), ids}}},
               "nested data does not follow");
  expect_error({{"inputs", {x_json({1, 2, 3, 4}), ids_json({1, 2.5, 3})}}},
               "input 'ids': element 1 is not an integer");
  expect_error({{"inputs", {x_json({1, 2, 3, 4}), ids_json({1, 16777217, 3})}}},
               "input 'ids': element 1 (16777217) is not exact in float");
  json wrong_type = ids;
  wrong_type["datatype"] = "INT32";
  expect_error({{"inputs", {x_json({1, 2, 3, 4}), wrong_type}}},
               "input 'ids': datatype INT32 does not match the model's INT64");
  wrong_type["datatype"] = "FLOAT";
  expect_error({{"inputs", {x_json({1, 2, 3, 4}), wrong_type}}},
               "input 'ids': unknown datatype 'FLOAT'");
  wrong_type["datatype"] = "BYTES";
  expect_error({{"inputs", {x_json({1, 2, 3, 4}), wrong_type}}},
               "input 'ids': BYTES tensors are not supported", ErrorCode::kUnsupported);
  expect_error({{"inputs", {x_json({1, 2, 3, 4})}}}, "missing input 'ids'");
  expect_error({{"inputs", {x_json({1, 2, 3, 4}), ids, x_json({1, 2, 3, 4})}}},
               "input 'x' is given twice");
  expect_error({{"inputs",
                 {x_json({1, 2, 3, 4}),
                  ids,
                  {{"name", "z"}, {"datatype", "FP32"}, {"shape", {1}}, {"data", {1}}}}}},
               "unknown input 'z' (model 'tiny' takes x, ids)");
  expect_error({{"inputs", {x_json({1, 2, 3, 4}), ids}}, {"outputs", {{{"name", "nope"}}}}},
               "unknown output 'nope'");
  expect_error(
      {{"inputs", {x_json({1, 2, 3, 4}), ids}}, {"outputs", {{{"name", "y"}}, {{"name", "y"}}}}},
      "output 'y' is requested twice");
  expect_error({{"inputs", {x_json({1, 2, 3, 4}), ids}},
                {"outputs", {{{"name", "y"}, {"parameters", {{"classification", 2}}}}}}},
               "classification extension is not supported", ErrorCode::kUnsupported);
  expect_error(
      {{"inputs",
        {ids,
         {{"name", "x"},
          {"datatype", "FP32"},
          {"shape", {1, 2}},
          {"parameters", {{"shared_memory_region", "r"}, {"shared_memory_byte_size", 8}}}}}}},
      "input 'x': the shared-memory extension is not supported", ErrorCode::kUnsupported);
  expect_error({{"inputs", {x_json({1, 2, 3, 4}), ids}},
                {"outputs", {{{"name", "y"}, {"parameters", {{"shared_memory_region", "r"}}}}}}},
               "output 'y': the shared-memory extension is not supported", ErrorCode::kUnsupported);
  expect_error({{"id", 5}, {"inputs", {x_json({1, 2, 3, 4}), ids}}}, "'id' must be a string");
  expect_error({{"parameters", {{"timeout", -1}}}, {"inputs", {x_json({1, 2, 3, 4}), ids}}},
               "parameter 'timeout' must be a non-negative integer");
  expect_error(
      {{"parameters", {{"binary_data_output", "yes"}}}, {"inputs", {x_json({1, 2, 3, 4}), ids}}},
      "parameter 'binary_data_output' must be true or false");
  expect_error({{"inputs", {{{"name", "x"}, {"datatype", "FP32"}, {"shape", {2, 2}}}, ids}}},
               "input 'x': no data");
}

TEST(Protocol, MalformedBodiesAreInvalidArgument) {
  const std::string good = json{{"inputs", {x_json({1, 2, 3, 4}), ids_json()}}}.dump();
  const std::string x_bytes = bytes_of<float>({1, 2, 3, 4});
  auto binary_header = [](uint64_t size) {
    return json{{"inputs",
                 {{{"name", "x"},
                   {"datatype", "FP32"},
                   {"shape", {2, 2}},
                   {"parameters", {{"binary_data_size", size}}}},
                  ids_json()}}}
        .dump();
  };
  const std::string h_both = json{{"inputs",
                                   {ids_json(),
                                    {{"name", "x"},
                                     {"datatype", "FP32"},
                                     {"shape", {1, 2}},
                                     {"data", {1, 2}},
                                     {"parameters", {{"binary_data_size", 8}}}}}}}
                                 .dump();
  const std::string h16 = binary_header(16), h12 = binary_header(12),
                    h_huge = binary_header(1ull << 62);
  struct Case {
    std::string name, body;
    std::optional<size_t> header_length;
    std::string fragment;
  };
  const Case cases[] = {
      {"empty", "", std::nullopt, "malformed JSON"},
      {"truncated JSON", good.substr(0, good.size() / 2), std::nullopt, "malformed JSON"},
      {"not an object", "[1,2]", std::nullopt, "must be a JSON object"},
      {"no inputs", "{}", std::nullopt, "'inputs' array"},
      {"inputs not an array", R"({"inputs": {}})", std::nullopt, "'inputs' array"},
      {"input not an object", R"({"inputs": [3]})", std::nullopt, "each input must be an object"},
      {"input without name", R"({"inputs": [{"datatype": "FP32"}]})", std::nullopt,
       "missing 'name'"},
      {"header_length beyond the body", good, good.size() + 1, "exceeds the body's"},
      {"binary without header length", h16 + x_bytes, std::nullopt, "malformed JSON"},
      {"binary_data_size without header", h16, std::nullopt,
       "without an Inference-Header-Content-Length"},
      {"binary_data_size lying (too big)", h16 + x_bytes.substr(0, 8), h16.size(),
       "binary_data_size 16 exceeds the 8 binary bytes left"},
      {"binary_data_size lying (huge)", h_huge + x_bytes, h_huge.size(),
       "exceeds the 16 binary bytes"},
      {"binary_data_size too small", h12 + x_bytes.substr(0, 12), h12.size(),
       "binary_data_size 12 does not hold 4 FP32 elements"},
      {"bytes left over", h16 + x_bytes + "zz", h16.size(), "2 bytes after the JSON header"},
      {"huge shape", json{{"inputs", {x_json({1}, {4611686018427387904LL, 2}), ids_json()}}}.dump(),
       std::nullopt, "holds more elements than the"},
      {"missing data",
       json{{"inputs", {ids_json(), {{"name", "x"}, {"datatype", "FP32"}, {"shape", {1, 2}}}}}}
           .dump(),
       std::nullopt, "no data"},
      {"duplicate input", json{{"inputs", {ids_json(), ids_json(), x_json({1, 2, 3, 4})}}}.dump(),
       std::nullopt, "given twice"},
      {"data and binary", h_both + bytes_of<float>({1, 2}), h_both.size(),
       "has both 'data' and parameters.binary_data_size"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    expect_error(c.body, c.header_length, c.fragment);
  }
}

TEST(Protocol, FloatsBeyondFloatRangeAreRefused) {
  expect_error({{"inputs", {x_json({1, 2, 3, 1e300}), ids_json()}}},
               "input 'x': element 3 (1e+300) is out of float's range");
  ModelMetadata model = tiny_model();
  model.inputs = {{"d", DataType::kFp64, {2}}};
  const json header = {{"inputs",
                        {{{"name", "d"},
                          {"datatype", "FP64"},
                          {"shape", {2}},
                          {"parameters", {{"binary_data_size", 16}}}}}}};
  const std::string text = header.dump();
  EXPECT_EQ(parse_infer_request(text + bytes_of<double>({0.5, -1e30}), text.size(), model)
                .inputs[0]
                .values,
            (std::vector<float>{0.5f, -1e30f}));
  EXPECT_THROW(parse_infer_request(text + bytes_of<double>({0.5, 1e39}), text.size(), model),
               Error);
}

TEST(Protocol, DeepNestingIsAnErrorNotAStackOverflow) {
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  const std::string ids = ids_json().dump();
  expect_error(R"({"inputs":[{"name":"x","datatype":"FP32","shape":)" + deep + "}," + ids + "]}",
               std::nullopt, "input 'x': shape has the dimension array");
  expect_error(R"({"inputs":[{"name":"x","datatype":"FP32","shape":[1,2],"data":)" + deep + "}," +
                   ids + "]}",
               std::nullopt, "input 'x': nested data does not follow shape [1,2]");
  expect_error(R"({"id":)" + deep + "}", std::nullopt, "'id' must be a string");
}

TEST(Protocol, BinaryBoolMustBeZeroOrOne) {
  ModelMetadata model = tiny_model();
  model.inputs = {{"flag", DataType::kBool, {2}}};
  const json header = {{"inputs",
                        {{{"name", "flag"},
                          {"datatype", "BOOL"},
                          {"shape", {2}},
                          {"parameters", {{"binary_data_size", 2}}}}}}};
  const std::string text = header.dump();
  EXPECT_EQ(parse_infer_request(text + std::string("\1\0", 2), text.size(), model).inputs[0].values,
            (std::vector<float>{1, 0}));
  EXPECT_THROW(parse_infer_request(text + std::string("\1\2", 2), text.size(), model), Error);
}

TEST(Protocol, JsonResponseEchoesIdAndAllOutputs) {
  InferRequest request = parse({{"id", "abc"}, {"inputs", {x_json({1, 2, 3, 4}), ids_json()}}});
  const OutputTensor outputs[] = {{"y", DataType::kFp32, {1, 2}, {0.1f, -2.5f}},
                                  {"mask", DataType::kBool, {3}, {1, 0, 1}}};
  const EncodedResponse r = encode_infer_response("tiny", "1", request, outputs);
  EXPECT_EQ(r.content_type, "application/json");
  EXPECT_FALSE(r.header_length.has_value());
  const json j = json::parse(r.body);
  EXPECT_EQ(j["model_name"], "tiny");
  EXPECT_EQ(j["model_version"], "1");
  EXPECT_EQ(j["id"], "abc");
  ASSERT_EQ(j["outputs"].size(), 2u);
  EXPECT_EQ(j["outputs"][0]["name"], "y");
  EXPECT_EQ(j["outputs"][0]["datatype"], "FP32");
  EXPECT_EQ(j["outputs"][0]["shape"], json({1, 2}));
  // FP32 survives the decimal text: parsing it back as float gives the same bits.
  EXPECT_EQ(j["outputs"][0]["data"][0].get<float>(), 0.1f);
  EXPECT_EQ(j["outputs"][1]["data"], json({true, false, true}));
}

TEST(Protocol, BinaryResponseSubsetInRequestOrder) {
  const InferRequest request =
      parse({{"inputs", {x_json({1, 2, 3, 4}), ids_json()}},
             {"outputs",
              {{{"name", "mask"}}, {{"name", "y"}, {"parameters", {{"binary_data", true}}}}}}});
  const float nan_payload = std::bit_cast<float>(0x7fc12345u);
  const OutputTensor outputs[] = {{"y", DataType::kFp32, {1, 2}, {nan_payload, 1e-45f}},
                                  {"mask", DataType::kBool, {3}, {1, 0, 1}}};
  const EncodedResponse r = encode_infer_response("tiny", "", request, outputs);
  EXPECT_EQ(r.content_type, "application/octet-stream");
  ASSERT_TRUE(r.header_length.has_value());
  const json j = json::parse(r.body.substr(0, *r.header_length));
  EXPECT_FALSE(j.contains("model_version"));
  EXPECT_EQ(j["id"], "");
  ASSERT_EQ(j["outputs"].size(), 2u);
  EXPECT_EQ(j["outputs"][0]["name"], "mask");
  EXPECT_EQ(j["outputs"][0]["data"], json({true, false, true}));
  EXPECT_EQ(j["outputs"][1]["name"], "y");
  EXPECT_EQ(j["outputs"][1]["parameters"]["binary_data_size"], 8);
  EXPECT_FALSE(j["outputs"][1].contains("data"));
  const std::string payload = r.body.substr(*r.header_length);
  ASSERT_EQ(payload.size(), 8u);
  EXPECT_EQ(payload, bytes_of<float>({nan_payload, 1e-45f}));
}

TEST(Protocol, BinaryDataOutputAppliesToAllOutputs) {
  const InferRequest request = parse({{"parameters", {{"binary_data_output", true}}},
                                      {"inputs", {x_json({1, 2, 3, 4}), ids_json()}}});
  const OutputTensor outputs[] = {{"y", DataType::kFp32, {1, 1}, {2.0f}},
                                  {"ids_out", DataType::kInt64, {2}, {-3, 16777216}}};
  const EncodedResponse r = encode_infer_response("tiny", "1", request, outputs);
  ASSERT_TRUE(r.header_length.has_value());
  EXPECT_EQ(r.body.substr(*r.header_length),
            bytes_of<float>({2.0f}) + bytes_of<int64_t>({-3, 16777216}));
}

TEST(Protocol, IntegerAndHalfOutputsInJson) {
  const InferRequest request = parse({{"inputs", {x_json({1, 2, 3, 4}), ids_json()}}});
  // FP16 and BF16 outputs carry their type's values, as the binary form does: 0.1 is 1638/16384
  // in half precision and 0.10009765625 in bfloat16.
  const OutputTensor outputs[] = {{"i", DataType::kInt64, {2}, {-3, 16777216}},
                                  {"h", DataType::kFp16, {2}, {0.5f, 0.1f}},
                                  {"b", DataType::kBf16, {1}, {0.1f}}};
  const json j = json::parse(encode_infer_response("m", "1", request, outputs).body);
  EXPECT_EQ(j["outputs"][0]["data"], json({-3, 16777216}));
  EXPECT_EQ(j["outputs"][1]["data"], json({0.5, 1638.0 / 16384.0}));
  EXPECT_EQ(j["outputs"][2]["data"], json({0.10009765625}));
  EXPECT_EQ(j["outputs"][2]["datatype"], "BF16");
}

TEST(Protocol, Fp16RoundTripThroughBinary) {
  // Normal, subnormal, max, rounding to even, overflow to infinity.
  ModelMetadata model{
      "h", {"1"}, "braid", {{"h", DataType::kFp16, {6}}}, {{"h", DataType::kFp16, {6}}}};
  const std::string half_bytes = bytes_of<uint16_t>(
      {0x3c00 /*1*/, 0x0001 /*2^-24*/, 0x7bff /*65504*/, 0xc000 /*-2*/, 0x7c00, 0x3555});
  const json header = {{"inputs",
                        {{{"name", "h"},
                          {"datatype", "FP16"},
                          {"shape", {6}},
                          {"parameters", {{"binary_data_size", 12}}}}}},
                       {"parameters", {{"binary_data_output", true}}}};
  const std::string text = header.dump();
  const InferRequest request = parse_infer_request(text + half_bytes, text.size(), model);
  const std::vector<float>& v = request.inputs[0].values;
  EXPECT_EQ(v[0], 1.0f);
  EXPECT_EQ(v[1], std::ldexp(1.0f, -24));
  EXPECT_EQ(v[2], 65504.0f);
  EXPECT_EQ(v[3], -2.0f);
  EXPECT_TRUE(std::isinf(v[4]));
  const OutputTensor out[] = {{"h", DataType::kFp16, {6}, v}};
  const EncodedResponse r = encode_infer_response("h", "1", request, out);
  EXPECT_EQ(r.body.substr(*r.header_length), half_bytes);

  const OutputTensor rounding[] = {
      {"h", DataType::kFp16, {4}, {1.0f + std::ldexp(1.0f, -11), 70000.0f, 65519.0f, 1e-10f}}};
  const EncodedResponse rr = encode_infer_response("h", "1", request, rounding);
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to even gives 1.
  EXPECT_EQ(rr.body.substr(*rr.header_length),
            bytes_of<uint16_t>({0x3c00, 0x7c00, 0x7bff, 0x0000}));
}

TEST(Protocol, Fp16JsonValuesRoundToHalfPrecision) {
  ModelMetadata model{"h", {"1"}, "braid", {{"h", DataType::kFp16, {2}}}, {}};
  const json body = {
      {"inputs", {{{"name", "h"}, {"datatype", "FP16"}, {"shape", {2}}, {"data", {0.1, 1}}}}}};
  // 0.1 is 0x2e66 in half precision: 1638 / 16384.
  EXPECT_EQ(parse_infer_request(body.dump(), std::nullopt, model).inputs[0].values,
            (std::vector<float>{1638.0f / 16384.0f, 1.0f}));
}

TEST(Protocol, ResponseInconsistenciesAreInternal) {
  InferRequest request =
      parse({{"inputs", {x_json({1, 2, 3, 4}), ids_json()}}, {"outputs", {{{"name", "y"}}}}});
  const OutputTensor missing[] = {{"mask", DataType::kBool, {3}, {1, 0, 1}}};
  try {
    encode_infer_response("tiny", "1", request, missing);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInternal);
  }
  const OutputTensor wrong_count[] = {{"y", DataType::kFp32, {2, 2}, {1, 2, 3}}};
  EXPECT_THROW(encode_infer_response("tiny", "1", request, wrong_count), Error);
  const OutputTensor not_int[] = {{"y", DataType::kInt32, {1}, {std::nanf("")}}};
  EXPECT_THROW(encode_infer_response("tiny", "1", request, not_int), Error);
}

TEST(Protocol, ErrorBodyAndStatus) {
  EXPECT_EQ(json::parse(error_body("input 'x': \"bad\"\n"))["error"], "input 'x': \"bad\"\n");
  EXPECT_NO_THROW(json::parse(error_body("\xff\xfe not utf-8")));
  EXPECT_EQ(http_status(ErrorCode::kInvalidArgument), 400);
  EXPECT_EQ(http_status(ErrorCode::kInvalidModel), 400);
  EXPECT_EQ(http_status(ErrorCode::kInvalidSchedule), 400);
  EXPECT_EQ(http_status(ErrorCode::kNotFound), 404);
  EXPECT_EQ(http_status(ErrorCode::kUnsupported), 501);
  EXPECT_EQ(http_status(ErrorCode::kInternal), 500);
}

}  // namespace
}  // namespace braid::serve

namespace braid::serve {
namespace {

// Raw inputs (what the gRPC front hands the codec) are validated as a JSON body is, and decode
// to the same values.
TEST(Protocol, RawInputsAreValidatedLikeABody) {
  const std::string x = bytes_of<float>({1.5f, -2, 3, 4.25f});
  const std::string ids = bytes_of<int64_t>({7, -8, 9});
  InferRequest r = make_infer_request("r1", {{"ids", "INT64", {3}, ids}, {"x", "FP32", {2, 2}, x}},
                                      {{"mask", true}}, 250, tiny_model());
  EXPECT_EQ(r.id, "r1");
  ASSERT_EQ(r.inputs.size(), 2u);  // the model's order
  EXPECT_EQ(r.inputs[0].name, "x");
  EXPECT_EQ(r.inputs[0].values, (std::vector<float>{1.5f, -2, 3, 4.25f}));
  EXPECT_EQ(r.inputs[1].values, (std::vector<float>{7, -8, 9}));
  EXPECT_EQ(r.timeout_us, 250u);
  ASSERT_EQ(r.outputs.size(), 1u);
  // The same request as a JSON body decodes to the same values.
  const InferRequest j = parse(json{{"inputs", {x_json({1.5, -2, 3, 4.25}), ids_json()}}});
  EXPECT_EQ(j.inputs[0].values, r.inputs[0].values);
  EXPECT_EQ(j.inputs[1].values, r.inputs[1].values);

  auto refused = [&](std::vector<RawInput> inputs, std::vector<RequestedOutput> outputs,
                     std::string_view fragment) {
    try {
      make_infer_request("", inputs, outputs, std::nullopt, tiny_model());
      ADD_FAILURE() << "accepted; expected '" << fragment << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  refused({{"x", "FP32", {2, 2}, x}}, {}, "missing input 'ids'");
  refused({{"x", "FP32", {2, 2}, x}, {"ids", "INT64", {3}, ids}, {"x", "FP32", {2, 2}, x}}, {},
          "input 'x' is given twice");
  refused({{"x", "FP32", {2, 2}, x}, {"z", "INT64", {3}, ids}}, {}, "unknown input 'z'");
  refused({{"x", "FP64", {2, 2}, x}, {"ids", "INT64", {3}, ids}}, {},
          "datatype FP64 does not match the model's FP32");
  refused({{"x", "FP32", {2, 3}, x}, {"ids", "INT64", {3}, ids}}, {},
          "shape [2,3] does not match the model's [-1,2]");
  refused({{"x", "FP32", {1, 2}, x}, {"ids", "INT64", {3}, ids}}, {},
          "16 bytes do not hold the 2 FP32 elements");
  refused({{"x", "FP32", {3, 2}, x}, {"ids", "INT64", {3}, ids}}, {},
          "shape [3,2] holds more FP32 elements than the 16 bytes given");
  refused({{"x", "FP32", {-1, 2}, x}, {"ids", "INT64", {3}, ids}}, {}, "negative dimension -1");
  refused({{"x", "FP32", {2, 2}, x}, {"ids", "INT64", {3}, ids}}, {{"y"}, {"y"}},
          "output 'y' is requested twice");
  refused({{"x", "FP32", {2, 2}, x}, {"ids", "INT64", {3}, ids}}, {{"q"}}, "unknown output 'q'");
  refused({{"x", "FP32", {2, 2}, x}, {"ids", "INT64", {3}, bytes_of<int64_t>({1, 2, 1 << 25})}}, {},
          "2^24");
}

TEST(Protocol, TensorBytesAreTheBinaryExtensionsLayout) {
  EXPECT_EQ(encode_tensor_bytes({"y", DataType::kFp32, {2}, {1.5f, -2}}),
            bytes_of<float>({1.5f, -2}));
  EXPECT_EQ(encode_tensor_bytes({"ids", DataType::kInt64, {2}, {7, -8}}),
            bytes_of<int64_t>({7, -8}));
  EXPECT_EQ(encode_tensor_bytes({"mask", DataType::kBool, {2}, {1, 0}}), std::string("\1\0", 2));
}

}  // namespace
}  // namespace braid::serve
