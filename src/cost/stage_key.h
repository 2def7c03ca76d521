// The identity of a stage for the profile cache: everything that decides its latency on one
// machine, and nothing that does not (names, unit ids, the model it comes from). Two identical
// Inception-C blocks, or the same stage found by two schedulers, get the same key.
//
//   std::string k = cost::stage_key(units, groups);
//   // "Conv{k3x3 s1x1 d1x1 p1,1,1,1 g1 Relu}(x:f32[1,64,17,17],p:f32[...])->f32[...] | ..."
//
// A group's key lists its units in order, each unit its ops in order: kind, attributes,
// inputs (a parameter or external input by its type, an output of an earlier op of the group
// by position) and output types. The stage key sorts its group keys: the groups of a stage run
// concurrently, so their order does not matter, while the order inside a group does.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "base/ids.h"
#include "ir/unit_graph.h"

namespace braid::cost {

// Requires a UnitGraph with operators (asserts otherwise).
std::string group_key(const ir::UnitGraph& units, std::span<const UnitId> group);
std::string stage_key(const ir::UnitGraph& units, std::span<const std::vector<UnitId>> groups);

}  // namespace braid::cost
