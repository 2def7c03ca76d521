// IEEE 754 binary16 (float16) and bfloat16 to float32, from their bit patterns (issue 29: FP16
// and BF16 ONNX models run upcast to float32 on the CPU).
//
//   float x = float16_to_float(0x3c00);   // 1.0f
//   float y = bfloat16_to_float(0x3f80);  // 1.0f
//
// Both widenings are exact: every float16 and bfloat16 value, subnormals included, is a float32
// value. Signed zeros and infinities keep their sign; a NaN stays a NaN with its payload in the
// top mantissa bits.
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

}  // namespace braid
