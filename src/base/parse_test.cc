// parse_int / parse_double: every malformed or out-of-range text becomes one kInvalidArgument
// sentence naming what was parsed and its limits, never std::stoi's out_of_range or a wrap.
#include "base/parse.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "base/error.h"

namespace braid {
namespace {

// The sentence `f` throws; fails when it throws nothing or anything but kInvalidArgument.
template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return {};
}

TEST(Parse, WholeNumbersWithinTheirLimits) {
  EXPECT_EQ(parse_int("0", 0, 1023, "the index"), 0);
  EXPECT_EQ(parse_int("1023", 0, 1023, "the index"), 1023);
  EXPECT_EQ(parse_int("-5", -10, 10, "x"), -5);
  const int64_t max = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(parse_int("9223372036854775807", 0, max, "x"), max);
}

// The user's report: cuda:99999999999 escaped std::stoi as "internal error: stoi".
TEST(Parse, BeyondInt64IsOutOfRangeNotAnInternalError) {
  const std::string e = error_of([] {
    parse_int("99999999999999999999999", 0, 1023, "the CUDA device index", "device 'cuda:9'");
  });
  EXPECT_EQ(e,
            "device 'cuda:9': 99999999999999999999999 is out of range: the CUDA device index must "
            "be from 0 to 1023");
  EXPECT_NE(error_of([] { parse_int("1024", 0, 1023, "the index"); }).find("from 0 to 1023"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_int("-1", 0, 1023, "the index"); }).find("-1 is out of range"),
            std::string::npos);
}

// Trailing text, blanks, signs from_chars refuses, and the empty string are not numbers: a
// partial parse would read "12abc" as 12 and run something the user did not ask for.
TEST(Parse, TextThatIsNotWhollyANumberIsRefused) {
  for (const char* text : {"", " 1", "1 ", "12abc", "+1", "0x10", "1.5", "1e3", "--"}) {
    const std::string e = error_of([&] { parse_int(text, 0, 100, "the count", "--iters"); });
    EXPECT_NE(e.find("is not a whole number (the count)"), std::string::npos) << text << ": " << e;
    EXPECT_TRUE(e.starts_with("--iters: ")) << e;
  }
  for (const char* text : {"", "1.5x", "inf", "nan", "-inf", "0x1p3", " 2", "1e", "e5"})
    EXPECT_NE(error_of([&] { parse_double(text, 0, 100, "the rate"); }).find("the rate"),
              std::string::npos)
        << text;
}

TEST(Parse, DecimalNumbersWithinTheirLimits) {
  EXPECT_DOUBLE_EQ(parse_double("1.5", 0, 10, "x"), 1.5);
  EXPECT_DOUBLE_EQ(parse_double("1e3", 0, 1e5, "x"), 1000);
  EXPECT_DOUBLE_EQ(parse_double("0", 0, 1, "x"), 0);
  EXPECT_EQ(error_of([] { parse_double("1e9", 0, 1e5, "the rate (FPS)", "--model 'sq:1e9'"); }),
            "--model 'sq:1e9': 1e9 is out of range: the rate (FPS) must be from 0 to 100000");
  // Beyond double's range (from_chars says result_out_of_range) is out of range too.
  EXPECT_NE(error_of([] { parse_double("1e999", 0, 1e5, "x"); }).find("out of range"),
            std::string::npos);
}

// A fuzzer's megabyte of digits must not come back as a megabyte-long message.
TEST(Parse, LongTextIsQuotedShort) {
  const std::string digits(100000, '7');
  EXPECT_LT(error_of([&] { parse_int(digits, 0, 10, "x"); }).size(), 200u);
  EXPECT_LT(error_of([&] { parse_double(std::string(100000, 'z'), 0, 10, "x"); }).size(), 200u);
}

TEST(Parse, CheckInRangeSaysTheSameSentence) {
  EXPECT_NO_THROW(check_in_range(5.0, 0, 10, "x"));
  EXPECT_EQ(error_of([] { check_in_range(1e9, 0, 1e5, "fps", "scenario.json: models[0]"); }),
            "scenario.json: models[0]: 1000000000 is out of range: fps must be from 0 to 100000");
  EXPECT_NE(error_of([] {
              check_in_range(std::numeric_limits<double>::quiet_NaN(), 0, 1, "x");
            }).find("out of range"),
            std::string::npos);
  EXPECT_EQ(error_of([] { check_int_in_range(0, 1, 64, "H"); }),
            "0 is out of range: H must be from 1 to 64");
}

// The device names of --device: cuda:N with N from 0 to kMaxCudaDevice; other names pass by.
TEST(Parse, CudaDeviceIndex) {
  EXPECT_EQ(parse_cuda_device("cuda:0"), 0);
  EXPECT_EQ(parse_cuda_device("cuda:1023"), 1023);
  EXPECT_EQ(parse_cuda_device("cpu"), std::nullopt);
  EXPECT_EQ(parse_cuda_device("sim:h100"), std::nullopt);
  EXPECT_EQ(error_of([] { parse_cuda_device("cuda:99999999999"); }),
            "device 'cuda:99999999999': 99999999999 is out of range: the CUDA device index N of "
            "cuda:N must be from 0 to 1023");
  for (const char* bad : {"cuda:", "cuda:-1", "cuda:x", "cuda:1 ", "cuda:0:0"})
    EXPECT_NE(error_of([&] { parse_cuda_device(bad); }).find("device 'cuda:"), std::string::npos)
        << bad;
}

}  // namespace
}  // namespace braid
