// IEEE 754 binary16 (float16) and bfloat16 to and from float32, as bit patterns (issue 29: FP16
// and BF16 ONNX models run upcast to float32 on the CPU, and exchange their inputs and outputs in
// their own type).
//
//   float x = float16_to_float(0x3c00);   // 1.0f
//   float y = bfloat16_to_float(0x3f80);  // 1.0f
//   uint16_t h = float_to_float16(0.1f);  // 0x2e66, the nearest half
//
// Both widenings are exact: every float16 and bfloat16 value, subnormals included, is a float32
// value. Signed zeros and infinities keep their sign; a NaN stays a NaN with its payload in the
// top mantissa bits. The narrowings round to nearest, ties to even.
//
// Our own rather than a library's: none of braid's C++ dependencies exposes these (oneDNN's
// float16_t is internal; std::float16_t needs C++23 and GCC 13).
#pragma once

#include <bit>
#include <cstdint>

namespace braid {

constexpr float float16_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  uint32_t bits = sign;
  if (exponent == 0x1f) {  // infinity or NaN
    bits |= 0x7f800000u | mantissa << 13;
  } else if (exponent != 0) {  // normal: rebias 15 -> 127
    bits |= (exponent + 112) << 23 | mantissa << 13;
  } else if (mantissa != 0) {  // subnormal, mantissa * 2^-24: normalize, a normal float32
    uint32_t e = 113;          // the biased float32 exponent of 2^-14
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --e;
    }
    bits |= e << 23 | (mantissa & 0x3ffu) << 13;
  }
  return std::bit_cast<float>(bits);
}

// bfloat16 is float32's top half.
constexpr float bfloat16_to_float(uint16_t b) {
  return std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
}

// float32 to IEEE 754 binary16, rounding to nearest, ties to even (as numpy's astype(float16)
// and CUDA's __float2half_rn): beyond the largest half (65504) a value rounds to infinity from
// 65520 on; values below 2^-24 round to a signed zero; NaN stays a (quiet) NaN.
constexpr uint16_t float_to_float16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  const auto sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  x &= 0x7fffffffu;
  if (x >= 0x7f800000u) return sign | 0x7c00u | (x > 0x7f800000u ? 0x200u : 0u);  // inf, NaN
  if (x >= 0x477ff000u) return sign | 0x7c00u;  // >= 65520 rounds to infinity
  if (x < 0x38800000u) {               // below 2^-14: a subnormal half (or zero), mantissa * 2^-24
    if (x < 0x33000000u) return sign;  // below 2^-25 (half the smallest subnormal): zero
    const uint32_t exponent = x >> 23;
    const uint32_t mantissa = (x & 0x7fffffu) | 0x800000u;  // the implicit bit made explicit
    const uint32_t shift = 126 - exponent;                  // 14..24: to units of 2^-24
    uint32_t h = mantissa >> shift;
    const uint32_t rest = mantissa & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rest > half || (rest == half && (h & 1u))) ++h;  // may carry into the smallest normal
    return sign | static_cast<uint16_t>(h);
  }
  const uint32_t exponent = (x >> 23) - 127 + 15;
  const uint32_t mantissa = x & 0x7fffffu;
  uint32_t h = (exponent << 10) | (mantissa >> 13);
  const uint32_t rest = mantissa & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // a carry moves into the exponent
  return sign | static_cast<uint16_t>(h);
}

// float32 to bfloat16, rounding to nearest, ties to even (as PyTorch's .to(torch.bfloat16) and
// CUDA's __float2bfloat16_rn); NaN stays a (quiet) NaN, values past bfloat16's largest round to
// infinity.
constexpr uint16_t float_to_bfloat16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  const uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

// A float32 made a float16 / bfloat16 value: the nearest, ties to even (store then load).
constexpr float round_to_float16(float f) {
  return float16_to_float(float_to_float16(f));
}
constexpr float round_to_bfloat16(float f) {
  return bfloat16_to_float(float_to_bfloat16(f));
}

}  // namespace braid
