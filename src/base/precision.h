// The arithmetic a GPU plan computes in (issue 29): a plan dimension beside the device. Parsed
// once at the edge (`--precision`, a Python argument), passed typed below.
//
//   kFp32  FP32 storage, FP32 FMA math: outputs compare with the CPU executor at 1e-3.
//   kTf32  FP32 storage, TF32 tensor cores in convolutions and GEMMs (10-bit mantissa products).
//   kFp16  FP16 activations and weights, FP32 accumulation, reductions and statistics.
//   kBf16  BF16 likewise (FP32's range, an 8-bit mantissa).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace braid {

enum class Precision : uint8_t { kFp32, kTf32, kFp16, kBf16 };

// "fp32", "tf32", "fp16" or "bf16"; throws braid::Error(kInvalidArgument) naming the text and
// the accepted spellings otherwise.
Precision parse_precision(std::string_view text);
std::string to_string(Precision p);
// Bytes per stored activation or weight element: 4, 4, 2, 2.
inline int storage_bytes(Precision p) {
  return p == Precision::kFp16 || p == Precision::kBf16 ? 2 : 4;
}

}  // namespace braid
