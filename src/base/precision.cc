#include "base/precision.h"

#include "base/error.h"

namespace braid {

Precision parse_precision(std::string_view text) {
  if (text == "fp32") return Precision::kFp32;
  if (text == "tf32") return Precision::kTf32;
  if (text == "fp16") return Precision::kFp16;
  if (text == "bf16") return Precision::kBf16;
  BRAID_THROW(ErrorCode::kInvalidArgument, "unknown precision '", text,
              "' (available: fp32, tf32, fp16, bf16)");
}

std::string to_string(Precision p) {
  switch (p) {
    case Precision::kFp32:
      return "fp32";
    case Precision::kTf32:
      return "tf32";
    case Precision::kFp16:
      return "fp16";
    case Precision::kBf16:
      return "bf16";
  }
  return "fp32";
}

}  // namespace braid
