// The tolerance table (tests/testing/tolerance.h) on the CPU: the reduced-precision rows only
// ever compare CUDA outputs, which this machine cannot produce, so their logic is checked here.
#include "tolerance.h"

#include <gtest/gtest.h>

#include <vector>

namespace braid::testing {
namespace {

TEST(Tolerance, EveryPrecisionHasItsRow) {
  for (Precision p : {Precision::kFp32, Precision::kTf32, Precision::kFp16, Precision::kBf16})
    EXPECT_EQ(tolerance(p).precision, p) << to_string(p);
  EXPECT_GT(tolerance(Precision::kFp32).rtol, 0);
  EXPECT_EQ(tolerance(Precision::kFp32).max_error, 0);  // element-wise, not against the scale
}

TEST(Tolerance, Fp32IsElementWiseWithOnnxsTolerances) {
  const Tolerance& t = tolerance(Precision::kFp32);
  const std::vector<float> want = {0, 1000, -2, 3, 4, 5};
  std::vector<float> got = want;
  got[1] += 0.09f;  // within 1e-5 + 1e-4 * 1000
  EXPECT_TRUE(compare(got, want, t).ok);
  got[0] = 2e-5f;  // past 1e-5 at zero: no scale to hide behind
  got[4] = 4.01f;
  const std::vector<int64_t> dims = {2, 3};
  const Agreement a = compare(got, want, t, dims);
  EXPECT_FALSE(a.ok);
  EXPECT_EQ(a.mismatches, 2);
  EXPECT_EQ(a.worst, 4);
  EXPECT_NE(a.failure.find("worst at 4 [1,1]"), std::string::npos) << a.failure;
}

TEST(Tolerance, NonFiniteValuesMustMatchExactly) {
  for (Precision p : {Precision::kFp32, Precision::kFp16}) {
    SCOPED_TRACE(to_string(p));
    const std::vector<float> want = {NAN, INFINITY, -INFINITY, 1};
    EXPECT_TRUE(compare(want, want, tolerance(p)).ok);
    EXPECT_FALSE(compare(std::vector<float>{NAN, -INFINITY, -INFINITY, 1}, want, tolerance(p)).ok);
    EXPECT_FALSE(
        compare(std::vector<float>{NAN, INFINITY, -INFINITY, INFINITY}, want, tolerance(p)).ok);
  }
}

// Reduced precisions bound the error by the output's scale: a small element may be off by far
// more than itself while the largest sets the bound.
TEST(Tolerance, ReducedPrecisionsBoundTheErrorByTheScale) {
  const std::vector<float> want = {100, 0.001f, -50, 20};
  const std::vector<float> close = {100.9f, 0.5f, -50.9f, 20};  // 0.9% of 100
  const std::vector<float> far = {100, 0.001f, -51.2f, 20};     // 1.2% of 100
  EXPECT_FALSE(compare(close, want, tolerance(Precision::kFp32)).ok);
  for (Precision p : {Precision::kTf32, Precision::kFp16, Precision::kBf16}) {
    SCOPED_TRACE(to_string(p));
    const Agreement a = compare(close, want, tolerance(p));
    EXPECT_TRUE(a.ok) << a.failure;
    EXPECT_DOUBLE_EQ(a.scale, 100);
    EXPECT_NEAR(a.max_error, 0.9, 1e-4);
  }
  const Agreement a = compare(far, want, tolerance(Precision::kFp16));
  EXPECT_FALSE(a.ok);
  EXPECT_EQ(a.worst, 2);
  EXPECT_NE(a.failure.find("of the scale 100"), std::string::npos) << a.failure;
  EXPECT_TRUE(compare(far, want, tolerance(Precision::kBf16)).ok);  // 5% of the scale
}

// Every element within 1% of the scale, yet the many small ones are all wrong: the cosine
// similarity catches what the largest error does not.
TEST(Tolerance, CosineCatchesWhatTheLargestErrorMisses) {
  std::vector<float> want(10001, 1.0f), got(10001);
  want[0] = 100;
  got[0] = 100;
  for (size_t i = 1; i < want.size(); ++i) got[i] = i % 2 ? 1.9f : 0.1f;  // off by 0.9
  const Agreement a = compare(got, want, tolerance(Precision::kFp16));
  EXPECT_FALSE(a.ok);
  EXPECT_EQ(a.mismatches, 0);
  EXPECT_LT(a.cosine, 0.9);
  EXPECT_NE(a.failure.find("cosine similarity"), std::string::npos) << a.failure;
}

TEST(Tolerance, ZerosAndSizes) {
  const std::vector<float> zeros(4, 0.0f);
  const Agreement a = compare(zeros, zeros, tolerance(Precision::kBf16));
  EXPECT_TRUE(a.ok) << a.failure;
  EXPECT_EQ(a.cosine, 1);
  EXPECT_FALSE(compare(std::vector<float>{0, 0, 1e-3f, 0}, zeros, tolerance(Precision::kBf16)).ok);
  EXPECT_FALSE(compare(std::vector<float>(3, 0.0f), zeros, tolerance(Precision::kFp32)).ok);
}

TEST(Tolerance, Fp16RangeIsChecked) {
  const std::vector<float> big = {1, -70000, INFINITY};
  EXPECT_NE(out_of_range(big, Precision::kFp16).find("past FP16's 65504"), std::string::npos);
  EXPECT_EQ(out_of_range(big, Precision::kBf16), "");
  EXPECT_EQ(out_of_range(std::vector<float>{65504, INFINITY}, Precision::kFp16), "");
}

}  // namespace
}  // namespace braid::testing
