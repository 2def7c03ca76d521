// models/element_type.h: the types a model exchanges its tensors in, and their conversion to and
// from braid's float values (issue 29).
#include "models/element_type.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "base/float16.h"

namespace braid::models {
namespace {

TEST(ElementType, NamesSizesAndComputeTypes) {
  for (ElementType t : {ElementType::kFloat32, ElementType::kFloat16, ElementType::kBFloat16,
                        ElementType::kInt64, ElementType::kBool})
    EXPECT_EQ(parse_element_type(to_string(t)), t);
  EXPECT_EQ(parse_element_type("float64"), std::nullopt);
  EXPECT_EQ(size_of(ElementType::kFloat16), 2);
  EXPECT_EQ(size_of(ElementType::kBFloat16), 2);
  EXPECT_EQ(size_of(ElementType::kFloat32), 4);
  EXPECT_EQ(size_of(ElementType::kInt64), 8);
  EXPECT_EQ(size_of(ElementType::kBool), 1);
  EXPECT_EQ(compute_dtype(ElementType::kFloat16), ir::DType::kFloat32);
  EXPECT_EQ(compute_dtype(ElementType::kBFloat16), ir::DType::kFloat32);
  EXPECT_EQ(compute_dtype(ElementType::kInt64), ir::DType::kInt64);
}

TEST(ElementType, SixteenBitTypesRoundWhenStoredAndWidenExactly) {
  // 0.1 is no float16 or bfloat16 value: it rounds to the nearest of each; 1 + 2^-11 is a float16
  // tie, to the even 1.0; 70000 overflows float16 to infinity but not bfloat16.
  const std::vector<float> values = {0.1f, 1.0f + 0x1p-11f, -2.5f, 70000.0f};
  for (ElementType t : {ElementType::kFloat16, ElementType::kBFloat16}) {
    std::vector<std::byte> bytes(values.size() * 2);
    store_floats(t, values, bytes.data());
    std::vector<float> back(values.size());
    load_floats(t, bytes.data(), back);
    for (size_t i = 0; i < values.size(); ++i) {
      uint16_t h;
      std::memcpy(&h, bytes.data() + 2 * i, 2);
      const uint16_t want =
          t == ElementType::kFloat16 ? float_to_float16(values[i]) : float_to_bfloat16(values[i]);
      EXPECT_EQ(h, want) << to_string(t) << " " << values[i];
    }
    EXPECT_EQ(back[2], -2.5f);            // exact in both
    EXPECT_NE(back[0], 0.1f);             // rounded
    std::vector<float> rounded = values;  // in place, as storing and loading does
    round_floats(t, rounded);
    for (size_t i = 0; i < values.size(); ++i) EXPECT_EQ(rounded[i], back[i]) << i;
  }
  std::vector<std::byte> h(values.size() * 2);
  store_floats(ElementType::kFloat16, values, h.data());
  std::vector<float> back(values.size());
  load_floats(ElementType::kFloat16, h.data(), back);
  EXPECT_EQ(back[1], 1.0f);
  EXPECT_TRUE(std::isinf(back[3]));
  EXPECT_FLOAT_EQ(back[0], 0.0999755859375f);  // float16's nearest to 0.1
}

TEST(ElementType, IntegerTypesConvertAsTheExecutorsDo) {
  const std::vector<float> values = {3.0f, -7.0f, 0.0f};
  std::vector<std::byte> bytes(values.size() * 8);
  store_floats(ElementType::kInt64, values, bytes.data());
  int64_t second;
  std::memcpy(&second, bytes.data() + 8, 8);
  EXPECT_EQ(second, -7);
  std::vector<float> back(values.size());
  load_floats(ElementType::kInt64, bytes.data(), back);
  EXPECT_EQ(back, values);
  store_floats(ElementType::kBool, values, bytes.data());
  EXPECT_EQ(bytes[0], std::byte{1});
  EXPECT_EQ(bytes[2], std::byte{0});
}

}  // namespace
}  // namespace braid::models
