// Tensor types: element type plus a static shape. braid plans memory and kernels ahead of
// time, so every activation shape is known once the batch size is fixed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace braid::ir {

// kBool is one byte per element (0 or 1), as in ONNX and numpy.
enum class DType : uint8_t { kFloat32, kInt64, kBool };

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

// The largest integer magnitude a float holds exactly: int64 values carried as floats (the
// executors' set_input, the runtime's tasks, the server's protocol) are refused beyond it.
inline constexpr int64_t kMaxExactFloatInteger = int64_t{1} << 24;
// The first of `count` int64 values at `src` beyond ±kMaxExactFloatInteger (its index and
// value), if any: what load_floats would round.
std::optional<std::pair<size_t, int64_t>> first_inexact_int64(const std::byte* src, size_t count);

// Executors take and return graph inputs and outputs as float values; int64 and bool tensors
// convert at that boundary (int64 exactly up to 2^24, bool as 0/1). `dst` / `src` hold
// values.size() elements of `dtype`.
void store_floats(DType dtype, std::span<const float> values, std::byte* dst);
void load_floats(DType dtype, const std::byte* src, std::span<float> values);

}  // namespace braid::ir
