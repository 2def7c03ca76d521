#include "ir/resize.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"

namespace braid::ir {
namespace {

// The input coordinate output index `o` maps to (ONNX's coordinate_transformation_mode).
// `width` is scale * in, the real-valued output size ONNX's formulas use.
double source_coordinate(ResizeCoordinates mode, double o, double scale, int64_t in, int64_t out,
                         double roi_start, double roi_end) {
  const double width = scale * static_cast<double>(in);
  switch (mode) {
    case ResizeCoordinates::kHalfPixel:
      return (o + 0.5) / scale - 0.5;
    case ResizeCoordinates::kHalfPixelSymmetric: {
      const double adjustment = static_cast<double>(out) / width;
      const double center = static_cast<double>(in) / 2;
      return center * (1 - adjustment) + (o + 0.5) / scale - 0.5;
    }
    case ResizeCoordinates::kPytorchHalfPixel:
      return out > 1 ? (o + 0.5) / scale - 0.5 : 0.0;
    case ResizeCoordinates::kAlignCorners:  // scale * in - 1, as ONNX's reference and its node
      // tests (ONNX Runtime divides by the whole output size less 1: they differ where
      // scale * in is not whole)
      return width == 1 ? 0.0 : o * static_cast<double>(in - 1) / (width - 1);
    case ResizeCoordinates::kAsymmetric:
      return o / scale;
    case ResizeCoordinates::kTfHalfPixelForNn:
      return (o + 0.5) / scale;
    case ResizeCoordinates::kTfCropAndResize: {
      // In float, as ONNX Runtime and ONNX's reference compute the roi terms: in double a
      // coordinate meant to be 0 can land at -1e-7 and extrapolate.
      const auto span = static_cast<float>(in - 1);
      const auto start = static_cast<float>(roi_start), end = static_cast<float>(roi_end);
      const float x =
          out == 1 ? (end - start) * span / 2
                   : static_cast<float>(o) * (end - start) * span / static_cast<float>(out - 1);
      return static_cast<double>(x + start * span);
    }
  }
  BRAID_ASSERT(false, "bad coordinate mode");
}

double cubic(double x, double a) {  // Keys' cubic convolution kernel
  x = std::abs(x);
  if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}

// The filter around a coordinate whose integer part is `base` and fraction `ratio` in (0, 1]
// (an integer coordinate x is base x - 1, ratio 1: ONNX prefers the left neighbour). Returns
// the weights of taps base + first .. base + first + n - 1.
std::vector<double> filter(const ResizeAttrs& a, double ratio, double scale, int64_t* first) {
  switch (a.mode) {
    case ResizeMode::kNearest: {
      bool right = false;  // taps base (left) and base + 1 (right)
      if (ratio == 1) {
        right = true;
      } else {
        switch (a.nearest) {
          case NearestRounding::kRoundPreferFloor:
            right = ratio > 0.5;
            break;
          case NearestRounding::kRoundPreferCeil:
            right = ratio >= 0.5;
            break;
          case NearestRounding::kFloor:
            right = false;
            break;
          case NearestRounding::kCeil:
            right = true;
            break;
          case NearestRounding::kSimple:
            right = scale < 1;  // ceil when downscaling, floor otherwise (Resize-10, Upsample)
            break;
        }
      }
      *first = 0;
      return {right ? 0.0 : 1.0, right ? 1.0 : 0.0};
    }
    case ResizeMode::kLinear: {
      if (!a.antialias || scale >= 1) {
        *first = 0;
        return {1 - ratio, ratio};
      }
      const auto start = static_cast<int64_t>(std::floor(-1 / scale) + 1);
      std::vector<double> w;
      double sum = 0;
      for (int64_t i = start; i < 2 - start; ++i) {
        w.push_back(std::clamp(1 - std::abs((static_cast<double>(i) - ratio) * scale), 0.0, 1.0));
        sum += w.back();
      }
      for (double& v : w) v /= sum;
      *first = start;
      return w;
    }
    case ResizeMode::kCubic: {
      const double A = a.cubic_coeff_a;
      if (!a.antialias || scale >= 1) {
        *first = -1;
        return {cubic(ratio + 1, A), cubic(ratio, A), cubic(1 - ratio, A), cubic(2 - ratio, A)};
      }
      const auto start = static_cast<int64_t>(std::floor(-2 / scale) + 1);
      std::vector<double> w;
      double sum = 0;
      for (int64_t i = start; i < 2 - start; ++i) {
        w.push_back(cubic(scale * (static_cast<double>(i) - ratio), A));
        sum += w.back();
      }
      for (double& v : w) v /= sum;
      *first = start;
      return w;
    }
  }
  BRAID_ASSERT(false, "bad resize mode");
}

}  // namespace

int64_t ResizeTaps::max_taps() const {
  int64_t most = 0;
  for (size_t o = 0; o + 1 < begin.size(); ++o) most = std::max(most, begin[o + 1] - begin[o]);
  return most;
}

ResizeTaps resize_taps(const ResizeAttrs& a, int64_t in, size_t axis) {
  BRAID_ASSERT(axis < a.sizes.size() && axis < a.scales.size(), "resize axis out of range");
  const int64_t out = a.sizes[axis];
  const double scale = a.scales[axis];
  const bool crop = a.coordinates == ResizeCoordinates::kTfCropAndResize;
  const size_t rank = a.sizes.size();
  const double roi_start = crop && a.roi.size() == 2 * rank ? a.roi[axis] : 0.0;
  const double roi_end = crop && a.roi.size() == 2 * rank ? a.roi[rank + axis] : 1.0;
  ResizeTaps t;
  t.begin.reserve(out + 1);
  t.begin.push_back(0);
  // ONNX's reference skips an axis that keeps its size at scale 1 (and the full roi).
  if (out == in && std::abs(scale - 1) < 1e-9 &&
      (!crop || (std::abs(roi_start) < 1e-9 && std::abs(roi_end - 1) < 1e-9))) {
    t.identity = true;
    for (int64_t o = 0; o < out; ++o) {
      t.index.push_back(o);
      t.weight.push_back(1);
      t.begin.push_back(o + 1);
    }
    return t;
  }
  if (crop) t.outside.assign(out, 0);
  for (int64_t o = 0; o < out; ++o) {
    const double x = source_coordinate(a.coordinates, static_cast<double>(o), scale, in, out,
                                       roi_start, roi_end);
    if (crop && (x < 0 || x > static_cast<double>(in - 1))) {
      t.outside[o] = 1;
      t.begin.push_back(static_cast<int64_t>(t.index.size()));
      continue;
    }
    auto base = static_cast<int64_t>(std::floor(x));
    double ratio = x - static_cast<double>(base);
    if (ratio == 0) {
      base -= 1;
      ratio = 1;
    }
    int64_t first = 0;
    std::vector<double> w = filter(a, ratio, scale, &first);
    if (a.exclude_outside) {
      double sum = 0;
      for (size_t k = 0; k < w.size(); ++k) {
        const int64_t i = base + first + static_cast<int64_t>(k);
        if (i < 0 || i >= in) w[k] = 0;
        sum += w[k];
      }
      if (sum != 0)
        for (double& v : w) v /= sum;
    }
    const size_t at = t.index.size();
    for (size_t k = 0; k < w.size(); ++k) {
      if (w[k] == 0) continue;
      const int64_t i = std::clamp<int64_t>(base + first + static_cast<int64_t>(k), 0, in - 1);
      // Taps clamped onto the same edge index add up (the reference pads with edge values).
      auto same = std::find(t.index.begin() + static_cast<std::ptrdiff_t>(at), t.index.end(), i);
      if (same != t.index.end()) {
        t.weight[same - t.index.begin()] += w[k];
        continue;
      }
      t.index.push_back(i);
      t.weight.push_back(w[k]);
    }
    t.begin.push_back(static_cast<int64_t>(t.index.size()));
  }
  return t;
}

std::vector<ResizeTaps> resize_taps(const ResizeAttrs& attrs, const Shape& input) {
  std::vector<ResizeTaps> out;
  for (size_t k = 0; k < input.size(); ++k) out.push_back(resize_taps(attrs, input[k], k));
  return out;
}

}  // namespace braid::ir
