// Stage extraction: the operators of a few units cut out as a graph of their own, so that a
// stage can be measured in isolation with its inputs given, as IOS profiles each candidate
// stage (ios.txt §4; peers.md §1.3).
//
//   std::vector<UnitId> stage = {a, b, c};
//   cost::ExtractedStage s = cost::extract(graph, units, stage, &weights);
//   s.units.num_units();               // 3: fuse(s.graph) gives the same units
//   s.units.unit(s.unit_of[0]).ops;    // the ops of `a`, renumbered
//   s.inputs[i];                       // the original value behind graph input i of s.graph
//
// Values produced outside the stage become graph inputs (in order of first use); values the
// stage produces and something outside reads, or that are graph outputs, become graph outputs
// (in value order). Names of ops and values are kept, so the two graphs can be compared.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "base/ids.h"
#include "ir/graph.h"
#include "ir/unit_graph.h"
#include "ir/weights.h"

namespace braid::cost {

struct ExtractedStage {
  std::shared_ptr<const ir::Graph> graph;
  // The parameters' data, copied by value name from the original weights; empty when none
  // were given.
  std::shared_ptr<const ir::Weights> weights;
  ir::UnitGraph units;           // fuse(graph): one unit per stage unit, same ops
  std::vector<UnitId> unit_of;   // unit_of[i]: the unit of `graph` for stage unit i
  std::vector<ValueId> inputs;   // inputs[i]: the original value behind graph input i
  std::vector<ValueId> outputs;  // outputs[i]: the original value behind graph output i
};

// Throws braid::Error(kInvalidArgument) for an empty stage, a unit out of range or listed
// twice, or a UnitGraph without operators (a weighted DAG).
ExtractedStage extract(const ir::Graph& graph, const ir::UnitGraph& units,
                       std::span<const UnitId> stage, const ir::Weights* weights = nullptr);

}  // namespace braid::cost
