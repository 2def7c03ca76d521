// float16_to_float and bfloat16_to_float: every one of the 65536 bit patterns against a
// reference computed from the format's definition with std::ldexp, and the special values by name.
#include "base/float16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace braid {
namespace {

// binary16: sign, 5 exponent bits (bias 15), 10 mantissa bits.
double float16_reference(uint16_t h) {
  const double sign = (h & 0x8000) ? -1.0 : 1.0;
  const int exponent = (h >> 10) & 0x1f;
  const int mantissa = h & 0x3ff;
  if (exponent == 0x1f)
    return mantissa ? std::numeric_limits<double>::quiet_NaN()
                    : sign * std::numeric_limits<double>::infinity();
  if (exponent == 0) return sign * std::ldexp(mantissa, -24);
  return sign * std::ldexp(1024 + mantissa, exponent - 25);
}

// bfloat16: sign, 8 exponent bits (bias 127), 7 mantissa bits.
double bfloat16_reference(uint16_t b) {
  const double sign = (b & 0x8000) ? -1.0 : 1.0;
  const int exponent = (b >> 7) & 0xff;
  const int mantissa = b & 0x7f;
  if (exponent == 0xff)
    return mantissa ? std::numeric_limits<double>::quiet_NaN()
                    : sign * std::numeric_limits<double>::infinity();
  if (exponent == 0) return sign * std::ldexp(mantissa, -133);
  return sign * std::ldexp(128 + mantissa, exponent - 134);
}

void expect_same(float got, double want, uint32_t bits) {
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << std::hex << bits;
    return;
  }
  EXPECT_EQ(static_cast<double>(got), want) << std::hex << bits;
  EXPECT_EQ(std::signbit(got), std::signbit(want)) << std::hex << bits;  // -0 stays -0
}

TEST(Float16, EveryBitPatternWidensExactly) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    expect_same(float16_to_float(static_cast<uint16_t>(bits)),
                float16_reference(static_cast<uint16_t>(bits)), bits);
    expect_same(bfloat16_to_float(static_cast<uint16_t>(bits)),
                bfloat16_reference(static_cast<uint16_t>(bits)), bits);
  }
}

TEST(Float16, SpecialValues) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  // float16
  static_assert(float16_to_float(0x3c00) == 1.0f);
  static_assert(float16_to_float(0xc000) == -2.0f);
  static_assert(float16_to_float(0x7bff) == 65504.0f);         // largest normal
  static_assert(float16_to_float(0x0400) == 0x1p-14f);         // smallest normal
  static_assert(float16_to_float(0x0001) == 0x1p-24f);         // smallest subnormal
  static_assert(float16_to_float(0x03ff) == 1023 * 0x1p-24f);  // largest subnormal
  static_assert(float16_to_float(0x8001) == -0x1p-24f);        // negative subnormal
  static_assert(float16_to_float(0x7c00) == kInf);
  static_assert(float16_to_float(0xfc00) == -kInf);
  EXPECT_TRUE(std::signbit(float16_to_float(0x8000)));
  EXPECT_EQ(float16_to_float(0x8000), 0.0f);
  EXPECT_FALSE(std::signbit(float16_to_float(0x0000)));
  EXPECT_TRUE(std::isnan(float16_to_float(0x7e00)));  // quiet NaN
  EXPECT_TRUE(std::isnan(float16_to_float(0x7c01)));  // signalling NaN: stays a NaN
  EXPECT_TRUE(std::isnan(float16_to_float(0xfe00)));
  // bfloat16
  static_assert(bfloat16_to_float(0x3f80) == 1.0f);
  static_assert(bfloat16_to_float(0xc0a0) == -5.0f);
  static_assert(bfloat16_to_float(0x7f7f) == 0x1.fep127f);  // largest finite
  static_assert(bfloat16_to_float(0x0001) == 0x1p-133f);    // smallest subnormal
  static_assert(bfloat16_to_float(0x7f80) == kInf);
  static_assert(bfloat16_to_float(0xff80) == -kInf);
  EXPECT_TRUE(std::signbit(bfloat16_to_float(0x8000)));
  EXPECT_TRUE(std::isnan(bfloat16_to_float(0x7fc0)));
  EXPECT_TRUE(std::isnan(bfloat16_to_float(0xff81)));
}

}  // namespace
}  // namespace braid
