// What a learned scheduler sees of a unit (top.txt §V-C, GPG's raw node state s_v): the
// operator types, the input and output shapes, the convolution or pooling window (stride,
// kernel, padding, groups), the fused activation and the pooling type, and the unit's work.
//
//   std::vector<float> s = ir::unit_features(units, u);   // kUnitFeatures values
//
// Fixed layout, named by unit_feature_names(): a trained policy records those names and is
// refused by a braid whose layout differs. Every value lies near [0, 1.5]: dims and groups as
// log2(1 + x) / 8, FLOPs and bytes as log2(1 + x) / 32, strides, kernels and pads / 4. A
// weighted-DAG unit (no operators) has only zeros.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "ir/unit_graph.h"

namespace braid::ir {

// kNumOpKinds operator types (multi-hot: a fused Conv-Relu sets both), 4 input and 4 output
// dims (the last four, right-aligned), stride 2, kernel 2, pads 4, log2 groups, activation 5
// (none, relu, sigmoid, tanh, gelu), pooling 3 (max, average, global average), FLOPs, bytes.
inline constexpr size_t kUnitFeatures = kNumOpKinds + 4 + 4 + 2 + 2 + 4 + 1 + 5 + 3 + 2;

std::vector<float> unit_features(const UnitGraph& graph, UnitId unit);
// The names of unit_features' values, in order ("op:Conv", "in:3", "stride:0", ...).
const std::vector<std::string>& unit_feature_names();

}  // namespace braid::ir
