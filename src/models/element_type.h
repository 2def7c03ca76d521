// The element types a model exchanges its inputs and outputs in, and their conversion to and from
// the float values braid's executors take (issue 29). An FP16 or BF16 ONNX model runs upcast to
// float32 (ir::DType::kFloat32) but declares its inputs and outputs in 16 bits: the front ends
// (the CLI's .npy files, Python's arrays, the server's tensors) read and write them in that type.
//
//   ElementType t = ElementType::kFloat16;
//   std::vector<std::byte> bytes(n * size_of(t));
//   store_floats(t, values, bytes.data());      // rounded to nearest, ties to even
//   load_floats(t, bytes.data(), values);       // exact
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "ir/tensor_type.h"

namespace braid::models {

// An element type as a model's file declares it. braid computes kFloat16 and kBFloat16 tensors
// as float32 (ir::DType::kFloat32).
enum class ElementType : uint8_t { kFloat32, kFloat16, kBFloat16, kInt64, kBool };
std::string_view to_string(ElementType);  // "float32", "float16", "bfloat16", "int64", "bool"
// The inverse of to_string; nullopt for any other name.
std::optional<ElementType> parse_element_type(std::string_view name);
ElementType element_type_of(ir::DType dtype);
// The dtype braid computes a tensor of this type in.
ir::DType compute_dtype(ElementType t);
int64_t size_of(ElementType t);  // bytes per element

// `values.size()` elements of type `t` at `dst` from / to float values: float16 and bfloat16
// rounded to nearest (ties to even) when stored and widened exactly when loaded; int64 and bool
// as ir::store_floats / ir::load_floats convert them.
void store_floats(ElementType t, std::span<const float> values, std::byte* dst);
void load_floats(ElementType t, const std::byte* src, std::span<float> values);
// `values` made values of `t` in place: float16 and bfloat16 rounded as store_floats rounds them
// (what storing and loading them gives); the other types are left as they are.
void round_floats(ElementType t, std::span<float> values);

}  // namespace braid::models
