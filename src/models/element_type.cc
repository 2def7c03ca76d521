#include "models/element_type.h"

#include <cstring>

#include "base/float16.h"

namespace braid::models {

std::string_view to_string(ElementType t) {
  switch (t) {
    case ElementType::kFloat32:
      return "float32";
    case ElementType::kFloat16:
      return "float16";
    case ElementType::kBFloat16:
      return "bfloat16";
    case ElementType::kInt64:
      return "int64";
    case ElementType::kBool:
      return "bool";
  }
  return "?";
}

std::optional<ElementType> parse_element_type(std::string_view name) {
  for (ElementType t : {ElementType::kFloat32, ElementType::kFloat16, ElementType::kBFloat16,
                        ElementType::kInt64, ElementType::kBool})
    if (to_string(t) == name) return t;
  return std::nullopt;
}

ElementType element_type_of(ir::DType dtype) {
  switch (dtype) {
    case ir::DType::kFloat32:
      return ElementType::kFloat32;
    case ir::DType::kInt64:
      return ElementType::kInt64;
    case ir::DType::kBool:
      return ElementType::kBool;
  }
  return ElementType::kFloat32;
}

ir::DType compute_dtype(ElementType t) {
  switch (t) {
    case ElementType::kInt64:
      return ir::DType::kInt64;
    case ElementType::kBool:
      return ir::DType::kBool;
    case ElementType::kFloat32:
    case ElementType::kFloat16:
    case ElementType::kBFloat16:
      break;
  }
  return ir::DType::kFloat32;
}

int64_t size_of(ElementType t) {
  return t == ElementType::kFloat16 || t == ElementType::kBFloat16 ? 2
                                                                   : ir::size_of(compute_dtype(t));
}

void store_floats(ElementType t, std::span<const float> values, std::byte* dst) {
  if (t != ElementType::kFloat16 && t != ElementType::kBFloat16)
    return ir::store_floats(compute_dtype(t), values, dst);
  for (size_t i = 0; i < values.size(); ++i) {
    const uint16_t h =
        t == ElementType::kFloat16 ? float_to_float16(values[i]) : float_to_bfloat16(values[i]);
    std::memcpy(dst + 2 * i, &h, sizeof h);  // little-endian hosts only, as the rest of braid
  }
}

void load_floats(ElementType t, const std::byte* src, std::span<float> values) {
  if (t != ElementType::kFloat16 && t != ElementType::kBFloat16)
    return ir::load_floats(compute_dtype(t), src, values);
  for (size_t i = 0; i < values.size(); ++i) {
    uint16_t h;
    std::memcpy(&h, src + 2 * i, sizeof h);
    values[i] = t == ElementType::kFloat16 ? float16_to_float(h) : bfloat16_to_float(h);
  }
}

void round_floats(ElementType t, std::span<float> values) {
  if (t == ElementType::kFloat16)
    for (float& v : values) v = round_to_float16(v);
  else if (t == ElementType::kBFloat16)
    for (float& v : values) v = round_to_bfloat16(v);
}

}  // namespace braid::models
