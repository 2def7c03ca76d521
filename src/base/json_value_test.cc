#include "base/json_value.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace braid {
namespace {

using nlohmann::json;

// The error's message for `text` read as T, or "" when it converts.
template <class T>
std::string error_of(const std::string& text) {
  try {
    json_value<T>(json::parse(text), "s.json", "f");
    return "";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    return e.what();
  }
}

TEST(JsonValue, IntegersMustFitTheirType) {
  EXPECT_EQ(json_value<int>(json::parse("8"), "s.json", "batch"), 8);
  EXPECT_EQ(json_value<int>(json::parse("-3"), "s.json", "batch"), -3);
  EXPECT_EQ(json_value<int>(json::parse("1e3"), "s.json", "batch"), 1000);  // integral
  EXPECT_EQ(json_value<uint64_t>(json::parse("18446744073709551615"), "s.json", "seed"),
            UINT64_MAX);
  EXPECT_EQ(json_value<int64_t>(json::parse("-9223372036854775808"), "s.json", "x"), INT64_MIN);
  // nlohmann's get<int> gives 1 for 4294967297 and is undefined for 1e30.
  EXPECT_EQ(error_of<int>("4294967297"),
            "s.json: field \"f\" is 4294967297, not an integer in -2147483648 .. 2147483647");
  EXPECT_NE(error_of<int>("1e30"), "");
  EXPECT_NE(error_of<int64_t>("9223372036854775808"), "");  // 2^63
  EXPECT_NE(error_of<int64_t>("9.3e18"), "");
  EXPECT_NE(error_of<uint64_t>("-1"), "");
  EXPECT_NE(error_of<size_t>("-1.0"), "");
  EXPECT_NE(error_of<int>("2.5"), "");
  EXPECT_EQ(error_of<int>("\"8\""), "s.json: field \"f\" must be an integer, got string");
  EXPECT_NE(error_of<int>("true"), "");
}

TEST(JsonValue, FloatsMustBeFiniteNumbers) {
  EXPECT_EQ(json_value<double>(json::parse("2.5"), "s.json", "fps"), 2.5);
  EXPECT_EQ(json_value<double>(json::parse("7"), "s.json", "fps"), 7.0);
  EXPECT_EQ(json_value<float>(json::parse("1e-3"), "s.json", "fps"), 1e-3f);
  EXPECT_NE(error_of<float>("1e39"), "");  // beyond float
  EXPECT_EQ(error_of<double>("null"), "s.json: field \"f\" must be a number, got null");
}

TEST(JsonValue, OtherTypesConvertOrNameTheirType) {
  EXPECT_EQ(json_value<std::string>(json::parse("\"ios\""), "s.json", "scheduler"), "ios");
  EXPECT_TRUE(json_value<bool>(json::parse("true"), "s.json", "drain"));
  EXPECT_EQ(json_value<std::vector<std::string>>(json::parse("[\"a\"]"), "s.json", "p").size(), 1u);
  EXPECT_EQ(error_of<bool>("1"), "s.json: field \"f\" has the wrong type (number)");
  EXPECT_EQ(error_of<std::string>("{}"), "s.json: field \"f\" has the wrong type (object)");
}

}  // namespace
}  // namespace braid
