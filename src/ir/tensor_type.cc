#include "ir/tensor_type.h"

#include <numeric>

namespace braid::ir {

std::string_view to_string(DType t) {
  switch (t) {
    case DType::kFloat32: return "float32";
    case DType::kInt64: return "int64";
  }
  return "?";
}

int64_t size_of(DType t) {
  switch (t) {
    case DType::kFloat32: return 4;
    case DType::kInt64: return 8;
  }
  return 0;
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
