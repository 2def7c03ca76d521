// float16_to_float and bfloat16_to_float: every one of the 65536 bit patterns against a
// reference computed from the format's definition with std::ldexp, and the special values by name.
// float_to_float16 and float_to_bfloat16: every representable value back to itself, every
// midpoint between neighbours to the even one, and a sweep of floats against the nearest value
// found by search over the widened table.
#include "base/float16.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

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

// The bit pattern nearest to `f` among the finite, non-negative values of a 16-bit format
// (`widen` maps bits to float), ties to the even pattern; past the largest finite value by more
// than half an ulp (`overflow_from`), infinity. A brute-force oracle for the narrowings.
uint16_t nearest_by_search(float f, const std::vector<double>& values, double overflow_from,
                           uint16_t infinity) {
  const double a = std::fabs(static_cast<double>(f));
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  if (a >= overflow_from) return sign | infinity;
  // values is ascending over the patterns 0..largest finite.
  const auto hi = std::lower_bound(values.begin(), values.end(), a);
  if (hi == values.begin()) return sign;
  const auto lo = hi - 1;
  uint16_t pick = static_cast<uint16_t>(hi - values.begin());
  if (hi == values.end() || a - *lo < *hi - a)
    pick = static_cast<uint16_t>(lo - values.begin());
  else if (a - *lo == *hi - a && (pick & 1))
    pick = static_cast<uint16_t>(lo - values.begin());
  return sign | pick;
}

std::vector<double> finite_values(float (*widen)(uint16_t), uint16_t infinity) {
  std::vector<double> v;
  for (uint32_t bits = 0; bits < infinity; ++bits) v.push_back(widen(static_cast<uint16_t>(bits)));
  return v;
}

TEST(Float16, NarrowingRoundsToNearestEven) {
  const std::vector<double> halves = finite_values(float16_to_float, 0x7c00);
  const std::vector<double> bhalves = finite_values(bfloat16_to_float, 0x7f80);
  // Every finite value narrows back to its own pattern, and every midpoint to the even one.
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const auto b = static_cast<uint16_t>(bits);
    if ((b & 0x7fff) < 0x7c00) {
      EXPECT_EQ(float_to_float16(float16_to_float(b)), b) << std::hex << bits;
      if ((b & 0x7fff) < 0x7bff) {  // the midpoint to the next value up, exact in float
        const float mid = static_cast<float>(
            (static_cast<double>(float16_to_float(b)) + float16_to_float(b + 1)) / 2);
        EXPECT_EQ(float_to_float16(mid), (b & 1) ? b + 1 : b) << std::hex << bits;
      }
    }
    if ((b & 0x7fff) < 0x7f80) {
      EXPECT_EQ(float_to_bfloat16(bfloat16_to_float(b)), b);
    }
  }
  // Random floats over every exponent against the search.
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> any;
  for (int i = 0; i < 200000; ++i) {
    uint32_t x = any(rng);
    if (i % 2) x = (x & 0x807fffffu) | ((100 + x % 50) << 23);  // around half's range
    float f;
    std::memcpy(&f, &x, sizeof f);
    if (std::isnan(f)) continue;
    EXPECT_EQ(float_to_float16(f), nearest_by_search(f, halves, 65520.0, 0x7c00)) << f;
    EXPECT_EQ(float_to_bfloat16(f),
              nearest_by_search(f, bhalves, 0x1.ffp127 /* largest + half an ulp */, 0x7f80))
        << f;
  }
  // NaN stays NaN, with its sign; infinities stay.
  EXPECT_EQ(float_to_float16(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(float_to_float16(-std::numeric_limits<float>::quiet_NaN()) & 0xfe00, 0xfe00);
  EXPECT_TRUE(std::isnan(float16_to_float(float_to_float16(std::nanf("")))));
  EXPECT_TRUE(std::isnan(bfloat16_to_float(float_to_bfloat16(std::nanf("")))));
  EXPECT_EQ(float_to_bfloat16(-std::numeric_limits<float>::infinity()), 0xff80);
  static_assert(float_to_float16(65519.0f) == 0x7bff && float_to_float16(65520.0f) == 0x7c00);
  static_assert(float_to_float16(0x1p-25f) == 0 && float_to_float16(0x1.000002p-25f) == 1);
  static_assert(float_to_bfloat16(1.0f + 0x1p-8f) == 0x3f80);  // a tie, to the even 1.0
}

}  // namespace
}  // namespace braid
