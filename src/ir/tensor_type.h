// Tensor types: element type plus a static shape. braid plans memory and kernels ahead of
// time, so every activation shape is known once the batch size is fixed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace braid::ir {

enum class DType : uint8_t { kFloat32, kInt64 };

std::string_view to_string(DType);
int64_t size_of(DType);

using Shape = std::vector<int64_t>;

int64_t num_elements(const Shape&);
std::string to_string(const Shape&);

struct TensorType {
  DType dtype = DType::kFloat32;
  Shape shape;

  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  int64_t elements() const { return num_elements(shape); }
  int64_t bytes() const { return elements() * size_of(dtype); }
  bool operator==(const TensorType&) const = default;
};

std::string to_string(const TensorType&);

}  // namespace braid::ir
