// Resize as data: for each axis, which input indices each output index reads and with what
// weights. Every backend (reference, CPU, CUDA) computes a Resize from these tables, so the
// ONNX semantics (coordinate transforms, nearest rounding, cubic and antialias filters,
// exclude_outside, tf_crop_and_resize's extrapolation) live in one place.
//
//   std::vector<ResizeTaps> taps = resize_taps(attrs, x_shape);
//   // y[o0, o1, ...] = sum over t0, t1, ... of prod_k taps[k].weight[t_k] * x[index...]
//   // (extrapolation_value where any axis is `outside`)
//
// Interpolation is separable, as in ONNX's reference: the output is the tensor product of the
// per-axis filters.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/op.h"
#include "ir/tensor_type.h"

namespace braid::ir {

struct ResizeTaps {
  // Output index o reads taps [begin[o], begin[o + 1]): input `index` (in [0, in)) times
  // `weight`. Taps of weight 0 are left out.
  std::vector<int64_t> begin;
  std::vector<int64_t> index;
  std::vector<double> weight;
  // tf_crop_and_resize: output index o maps outside the input (its value is
  // extrapolation_value); empty otherwise.
  std::vector<uint8_t> outside;
  bool identity = false;  // output o reads input o with weight 1, for every o

  int64_t size() const { return static_cast<int64_t>(begin.size()) - 1; }
  int64_t max_taps() const;
};

// Taps of one axis of size `in`.
ResizeTaps resize_taps(const ResizeAttrs& attrs, int64_t in, size_t axis);
// Taps of every axis of `input`.
std::vector<ResizeTaps> resize_taps(const ResizeAttrs& attrs, const Shape& input);

}  // namespace braid::ir
