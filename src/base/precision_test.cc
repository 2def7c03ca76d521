// parse_precision: the one place a precision name becomes a Precision.
#include "base/precision.h"

#include <gtest/gtest.h>

#include "base/error.h"

namespace braid {
namespace {

TEST(Precision, ParsesEveryNameAndPrintsItBack) {
  for (const char* text : {"fp32", "tf32", "fp16", "bf16"})
    EXPECT_EQ(to_string(parse_precision(text)), text);
  EXPECT_EQ(parse_precision("fp16"), Precision::kFp16);
  EXPECT_EQ(storage_bytes(Precision::kFp32), 4);
  EXPECT_EQ(storage_bytes(Precision::kTf32), 4);
  EXPECT_EQ(storage_bytes(Precision::kFp16), 2);
  EXPECT_EQ(storage_bytes(Precision::kBf16), 2);
}

TEST(Precision, UnknownNamesListTheKnownOnes) {
  for (const char* text : {"", "FP16", "half", "fp8", "float16", " fp32"}) {
    try {
      parse_precision(text);
      ADD_FAILURE() << "no error for '" << text << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("fp32, tf32, fp16, bf16"), std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
}  // namespace braid
