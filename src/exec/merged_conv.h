// Operator merge's weights (ios.txt §4.2), shared by the CPU and CUDA executors: convolutions
// that read one input become one convolution whose weights are theirs, each zero-padded
// (centred) to the largest kernel and concatenated along output channels, biases likewise.
// Backend-neutral: plain float arrays in, plain float arrays out; each backend then lays them
// out for its library (oneDNN's reorder, cuDNN's KRSC for NHWC).
//
//   std::vector<MergePart> parts = {{w1, b1, {8, 16, 1, 1}}, {w3, b3, {6, 16, 3, 3}}};
//   MergedConvParams merged = merge_conv_params(parts);   // shape {14, 16, 3, 3}
//
// The callers decide first whether the convs merge (sched/merge.h: same input, stride and
// dilation; misaligned_merge for the centring); merge_conv_params asserts what it relies on.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

namespace braid::exec {

// One conv: weights [OC, IC, KH, KW] (BatchNormalization already folded in) and OC biases.
struct MergePart {
  std::span<const float> weights;
  std::span<const float> bias;
  std::array<int64_t, 4> shape{};  // OC, IC, KH, KW
};

struct MergedConvParams {
  std::vector<float> weights;  // [sum OC, IC, max KH, max KW], row-major
  std::vector<float> bias;     // [sum OC]
  std::array<int64_t, 4> shape{};
};

// The parts' weights centred in the largest kernel and concatenated in the parts' order: part
// i's output channels are [sum of the OC before it, + its OC).
MergedConvParams merge_conv_params(std::span<const MergePart> parts);

}  // namespace braid::exec
