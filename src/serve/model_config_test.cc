// config.pbtxt: Triton's own files parse unchanged; what braid applies is applied, the rest is
// reported; what it cannot serve is refused naming the file, line and field.
#include "serve/model_config.h"

#include <gtest/gtest.h>

#include <optional>

#include "base/error.h"

namespace braid::serve {
namespace {

// A config as Triton's docs write one, with fields braid does not read.
constexpr const char* kTritonConfig = R"pb(
  name: "resnet50"
  platform: "onnxruntime_onnx"
  max_batch_size: 8 input
  [ {
    name: "input",
    data_type: TYPE_FP32,
    dims: [ 3, 224, 224 ]
  }] output
  [ {
    name: "output",
    data_type: TYPE_FP32,
    dims: [ 1000 ]
  }] instance_group
  [ { count: 2, kind: KIND_CPU }]
  dynamic_batching {
    preferred_batch_size: [ 4, 8 ]
    max_queue_delay_microseconds: 100
    default_queue_policy {
      timeout_action: REJECT
      default_timeout_microseconds: 50000
      allow_timeout_override: true
      max_queue_size: 16
    }
  }
)pb";

// The error code parsing `text` throws; nullopt when it parses.
std::optional<ErrorCode> code_of(std::string_view text, std::string* message = nullptr) {
  try {
    parse_model_config(text, "m/config.pbtxt", "m");
  } catch (const Error& e) {
    if (message) *message = e.what();
    return e.code();
  }
  return std::nullopt;
}

TEST(ModelConfig, TritonsOwnConfigIsReadAndTheRestReported) {
  const ModelConfig c = parse_model_config(kTritonConfig, "resnet50/config.pbtxt", "resnet50");
  EXPECT_EQ(c.max_batch_size, 8);
  EXPECT_EQ(c.max_queue_size, 16u);
  EXPECT_EQ(c.default_timeout_us, 50000u);
  EXPECT_TRUE(c.allow_timeout_override);
  std::string ignored;
  for (const std::string& line : c.ignored) ignored += line + "\n";
  for (const char* field : {"instance_group", "preferred_batch_size", "max_queue_delay"})
    EXPECT_NE(ignored.find(field), std::string::npos) << field << " not reported in:\n" << ignored;
  for (const std::string& line : c.ignored)
    EXPECT_EQ(line.rfind("resnet50/config.pbtxt:", 0), 0u) << line;  // each names the file
  ASSERT_EQ(c.inputs.size(), 1u);
  EXPECT_EQ(c.inputs[0].name, "input");
  EXPECT_EQ(c.inputs[0].datatype, DataType::kFp32);
  EXPECT_EQ(c.inputs[0].dims, (std::vector<int64_t>{3, 224, 224}));
  ASSERT_EQ(c.outputs.size(), 1u);

  // Against the model as Triton checks at load: batch dimension left out, -1 matches any.
  const std::vector<TensorSpec> in{{"input", DataType::kFp32, {1, 3, 224, 224}}};
  const std::vector<TensorSpec> out{{"output", DataType::kFp32, {1, 1000}}};
  check_model_config(c, in, out);
  auto refused = [&](const std::vector<TensorSpec>& i, const std::vector<TensorSpec>& o) {
    try {
      check_model_config(c, i, o);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(refused({{"x", DataType::kFp32, {1, 3, 224, 224}}}, out).find("input 'input' is not"),
            std::string::npos);
  EXPECT_NE(refused({{"input", DataType::kInt64, {1, 3, 224, 224}}}, out).find("TYPE_FP32"),
            std::string::npos);
  EXPECT_NE(refused(in, {{"output", DataType::kFp32, {1, 10}}}).find("dims [1000]"),
            std::string::npos);
}

TEST(ModelConfig, DefaultsWithoutAQueuePolicy) {
  const ModelConfig c = parse_model_config("", "m/config.pbtxt", "m");
  EXPECT_EQ(c.max_batch_size, 0);
  EXPECT_EQ(c.max_queue_size, 0u);
  EXPECT_EQ(c.default_timeout_us, 0u);
  EXPECT_TRUE(c.allow_timeout_override);  // braid's default: a request's timeout applies
  EXPECT_TRUE(c.ignored.empty());
  // Written, the policy is Triton's: override off unless it says so.
  EXPECT_FALSE(parse_model_config("dynamic_batching { default_queue_policy { max_queue_size: 2 } }",
                                  "m/config.pbtxt", "m")
                   .allow_timeout_override);
}

TEST(ModelConfig, WhatCannotBeServedIsRefusedByName) {
  std::string message;
  EXPECT_EQ(code_of("max_batch_size: [", &message), ErrorCode::kInvalidModel);
  EXPECT_EQ(message.rfind("m/config.pbtxt:1:", 0), 0u) << message;  // file:line:column
  EXPECT_EQ(code_of("max_batch_size: \"eight\"", &message), ErrorCode::kInvalidModel);
  EXPECT_EQ(code_of("max_batch_size: -1", &message), ErrorCode::kInvalidModel);
  EXPECT_NE(message.find("max_batch_size -1 is negative"), std::string::npos) << message;
  EXPECT_EQ(code_of("name: \"other\"", &message), ErrorCode::kInvalidModel);
  EXPECT_NE(message.find("'other'"), std::string::npos) << message;
  EXPECT_EQ(code_of("platform: \"tensorrt_plan\"", &message), ErrorCode::kInvalidModel);
  EXPECT_NE(message.find("tensorrt_plan"), std::string::npos) << message;
  EXPECT_EQ(code_of("backend: \"python\"", &message), ErrorCode::kInvalidModel);
  EXPECT_EQ(code_of("input [ { name: \"x\" reshape { shape: [ 1 ] } } ]", &message),
            ErrorCode::kUnsupported);
  EXPECT_EQ(code_of("input [ { data_type: TYPE_FP32 } ]", &message), ErrorCode::kInvalidModel);
  EXPECT_EQ(
      code_of("dynamic_batching { default_queue_policy { timeout_action: DELAY } }", &message),
      ErrorCode::kUnsupported);
  EXPECT_NE(message.find("DELAY"), std::string::npos) << message;
  EXPECT_EQ(code_of("max_batch_size: 4 platform: \"onnxruntime_onnx\" backend: \"onnxruntime\""),
            std::nullopt);
}

}  // namespace
}  // namespace braid::serve
