#include "ir/tensor_type.h"

#include <cmath>
#include <cstring>
#include <numeric>

namespace braid::ir {

std::string_view to_string(DType t) {
  switch (t) {
    case DType::kFloat32:
      return "float32";
    case DType::kInt64:
      return "int64";
    case DType::kBool:
      return "bool";
  }
  return "?";
}

int64_t size_of(DType t) {
  switch (t) {
    case DType::kFloat32:
      return 4;
    case DType::kInt64:
      return 8;
    case DType::kBool:
      return 1;
  }
  return 0;
}

void store_floats(DType dtype, std::span<const float> values, std::byte* dst) {
  switch (dtype) {
    case DType::kFloat32:
      std::memcpy(dst, values.data(), values.size_bytes());
      return;
    case DType::kInt64:
      for (size_t i = 0; i < values.size(); ++i) {
        const auto v = static_cast<int64_t>(std::llround(values[i]));
        std::memcpy(dst + i * sizeof(int64_t), &v, sizeof v);
      }
      return;
    case DType::kBool:
      for (size_t i = 0; i < values.size(); ++i) dst[i] = std::byte{values[i] != 0.0f};
      return;
  }
}

void load_floats(DType dtype, const std::byte* src, std::span<float> values) {
  switch (dtype) {
    case DType::kFloat32:
      std::memcpy(values.data(), src, values.size_bytes());
      return;
    case DType::kInt64:
      for (size_t i = 0; i < values.size(); ++i) {
        int64_t v;
        std::memcpy(&v, src + i * sizeof(int64_t), sizeof v);
        values[i] = static_cast<float>(v);
      }
      return;
    case DType::kBool:
      for (size_t i = 0; i < values.size(); ++i) values[i] = src[i] != std::byte{0} ? 1.0f : 0.0f;
      return;
  }
}

std::optional<std::pair<size_t, int64_t>> first_inexact_int64(const std::byte* src, size_t count) {
  for (size_t k = 0; k < count; ++k) {
    int64_t v;
    std::memcpy(&v, src + k * sizeof v, sizeof v);
    if (v < -kMaxExactFloatInteger || v > kMaxExactFloatInteger) return std::pair{k, v};
  }
  return std::nullopt;
}

int64_t num_elements(const Shape& s) {
  return std::accumulate(s.begin(), s.end(), int64_t{1}, std::multiplies<>());
}

std::string to_string(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? "," : "") + std::to_string(s[i]);
  return out + "]";
}

std::string to_string(const TensorType& t) {
  return std::string(to_string(t.dtype)) + to_string(t.shape);
}

}  // namespace braid::ir
