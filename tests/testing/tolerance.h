// How close a backend's outputs must come to FP32 ones, per precision (issue 29): the one table
// that the CUDA precision test (src/exec/cuda/cuda_executor_test.cc) and the conformance suite
// (tests/conformance) check against, stated in tests/conformance/README.md.
//
//   const testing::Tolerance& t = testing::tolerance(Precision::kFp16);
//   testing::Agreement a = testing::compare(got, want, t);
//   EXPECT_TRUE(a.ok) << a.failure;   // a.max_error, a.scale, a.cosine for a log line
//
// FP32 compares element by element with ONNX's backend test runner's tolerances. A reduced
// precision cannot: a value near zero keeps no relative accuracy once its neighbours round to 8
// or 11 mantissa bits, so TF32, FP16 and BF16 bound the largest error as a fraction of the
// output's scale (its largest magnitude) and the cosine similarity of the whole output. In both,
// NaN and Inf must match exactly (position and sign), and a finite expected value must stay
// finite.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <sstream>
#include <string>

#include "base/precision.h"

namespace braid::testing {

struct Tolerance {
  Precision precision;
  // Element-wise (FP32): |got - want| <= atol + rtol * |want|.
  double atol = 0;
  double rtol = 0;
  // Against the scale (reduced precisions): max |got - want| <= max_error * max |want|, and
  // cosine(got, want) >= min_cosine. Used when max_error > 0.
  double max_error = 0;
  double min_cosine = 0;
};

// FP16 keeps 11 mantissa bits, BF16 8, TF32 products 11 with FP32 storage and accumulation.
inline constexpr Tolerance kTolerances[] = {
    {.precision = Precision::kFp32, .atol = 1e-5, .rtol = 1e-4},  // onnx/backend/test/runner
    {.precision = Precision::kTf32, .max_error = 1e-2, .min_cosine = 0.9999},
    {.precision = Precision::kFp16, .max_error = 1e-2, .min_cosine = 0.999},
    {.precision = Precision::kBf16, .max_error = 5e-2, .min_cosine = 0.99},
};

constexpr const Tolerance& tolerance(Precision p) {
  for (const Tolerance& t : kTolerances)
    if (t.precision == p) return t;
  return kTolerances[0];  // unreachable: every Precision has a row
}

// FP16's largest finite value: FP32 outputs past it overflow in FP16 in any framework, so an
// FP16 run is not checked there (out_of_range says why).
inline constexpr double kFp16Max = 65504;

// Empty when `want` (FP32 values) fits precision `p`'s range; otherwise why not.
inline std::string out_of_range(std::span<const float> want, Precision p) {
  if (p != Precision::kFp16) return {};
  double largest = 0;
  for (float v : want)
    if (std::isfinite(v)) largest = std::max(largest, double(std::abs(v)));
  if (largest <= kFp16Max) return {};
  std::ostringstream s;
  s << "fp16: FP32 outputs reach " << largest << ", past FP16's " << kFp16Max;
  return s.str();
}

struct Agreement {
  bool ok = true;
  int64_t mismatches = 0;  // elements past the bound (the scale's, for reduced precisions)
  int64_t worst = -1;      // flat index of the element furthest past it; -1 when none is
  double scale = 0;        // max |want| over finite elements
  double max_error = 0;    // max |got - want| over elements finite in both
  double cosine = 1;       // of the finite elements; 1 when both are all zero
  std::string failure;     // empty when ok: which bound broke, with the worst element
};

// Row-major coordinates of flat index `i` in `dims`, "[0,2,1]", for messages.
inline std::string coords(int64_t i, std::span<const int64_t> dims) {
  std::string c(dims.empty() ? "[" : "");
  int64_t stride = 1;
  for (int64_t d : dims) stride *= d > 0 ? d : 1;
  for (size_t k = 0; k < dims.size(); ++k) {
    stride /= dims[k] > 0 ? dims[k] : 1;
    c += (k ? "," : "[") + std::to_string(dims[k] > 0 ? i / stride % dims[k] : 0);
  }
  return c + "]";
}

// `dims`, when given, names the worst element by its coordinates too.
inline Agreement compare(std::span<const float> got, std::span<const float> want,
                         const Tolerance& t, std::span<const int64_t> dims = {}) {
  Agreement a;
  if (got.size() != want.size()) {
    a.ok = false;
    a.failure =
        "has " + std::to_string(got.size()) + " elements, expected " + std::to_string(want.size());
    return a;
  }
  const bool against_scale = t.max_error > 0;
  for (float w : want)
    if (std::isfinite(w)) a.scale = std::max(a.scale, double(std::abs(w)));
  const double bound = t.max_error * std::max(a.scale, 1e-30);
  double worst_excess = 0, dot = 0, gg = 0, ww = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = got[i], w = want[i];
    double excess;
    if (!std::isfinite(g) || !std::isfinite(w)) {
      excess = (std::isnan(g) && std::isnan(w)) || g == w ? 0 : INFINITY;
    } else {
      const double error = std::abs(g - w);
      a.max_error = std::max(a.max_error, error);
      dot += g * w;
      gg += g * g;
      ww += w * w;
      excess = error - (against_scale ? bound : t.atol + t.rtol * std::abs(w));
    }
    if (excess <= 0) continue;
    ++a.mismatches;
    if (a.worst < 0 || excess > worst_excess) {
      a.worst = static_cast<int64_t>(i);
      worst_excess = excess;
    }
  }
  if (gg > 0 || ww > 0) a.cosine = dot / std::max(std::sqrt(gg * ww), 1e-300);
  const bool cosine_ok = !against_scale || a.cosine >= t.min_cosine;
  a.ok = a.mismatches == 0 && cosine_ok;
  if (a.ok) return a;
  std::ostringstream s;
  s.precision(9);
  if (a.mismatches > 0) {
    s << a.mismatches << " of " << got.size() << " elements differ";
    if (against_scale) s << " by more than " << t.max_error << " of the scale " << a.scale;
    s << "; worst at " << a.worst;
    if (!dims.empty()) s << " " << coords(a.worst, dims);
    s << ": got " << got[a.worst] << ", expected " << want[a.worst] << " (|diff| "
      << std::abs(double(got[a.worst]) - double(want[a.worst])) << ")";
  }
  if (!cosine_ok)
    s << (a.mismatches > 0 ? "; " : "") << "cosine similarity " << a.cosine << " < "
      << t.min_cosine;
  a.failure = s.str();
  return a;
}

}  // namespace braid::testing
