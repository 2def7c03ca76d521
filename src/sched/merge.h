// Operator merge (ios.txt §3, §4.2; peers.md §1.4): when Conv units may run as one wider Conv.
// One set of rules serves the validator (validate.h rule 3) and the IOS dynamic program
// (ios.h), which enumerates only the merges the validator accepts.
//
//   std::string why;
//   std::optional<MergeableConv> a = mergeable_conv(units, u, &why);   // null: `why` says
//   std::optional<MergeableConv> b = mergeable_conv(units, v, &why);
//   if (a && b && merge_difference(*units.graph(), *a, *b).empty()) ...  // same input, stride..
//   std::vector<const ir::ConvAttrs*> convs = {a->attrs, b->attrs};
//   if (!misaligned_merge(convs)) ...                                  // kernels center
//
// A set of units merges when every unit is mergeable, every pair has no merge_difference and
// misaligned_merge finds no conv whose kernel cannot be centered in the merged kernel.
#pragma once

#include <optional>
#include <span>
#include <string>

#include "base/ids.h"
#include "ir/graph.h"
#include "ir/unit_graph.h"

namespace braid::sched {

// A unit that is a Conv, with the activation applied to it (fused or as a following op).
struct MergeableConv {
  const ir::Node* conv = nullptr;
  const ir::ConvAttrs* attrs = nullptr;
  std::optional<ir::OpKind> activation;
};

// Null (with `why`) when the unit is not a Conv with an optional activation, or is a grouped
// convolution. Requires a UnitGraph with operators.
std::optional<MergeableConv> mergeable_conv(const ir::UnitGraph& units, UnitId u, std::string* why);

// Why two mergeable convs cannot share one kernel: different inputs, strides, dilations,
// output sizes or activations. Empty when they can.
std::string merge_difference(const ir::Graph& graph, const MergeableConv& a,
                             const MergeableConv& b);

// The merged kernel is the largest one, each kernel zero-padded and centered in it, so each
// conv's pads must sit (K - k) / 2 inside the merged pads. The index of the first conv that
// does not, or nullopt when all of them center.
std::optional<size_t> misaligned_merge(std::span<const ir::ConvAttrs* const> convs);

}  // namespace braid::sched
