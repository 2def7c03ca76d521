// The reference executor: runs a whole graph with ref::run_op, node by node in graph order.
// Slow and simple on purpose; every other executor's output is compared against it.
//
//   ir::Weights w = ir::Weights::generate(graph, 42);
//   std::vector<std::vector<float>> in = {random_input(graph.value(graph.inputs()[0]).type)};
//   std::vector<std::vector<float>> out = ref::run_reference(graph, w, in);
#pragma once

#include <span>
#include <vector>

#include "ir/graph.h"
#include "ir/weights.h"

namespace braid::exec::ref {

// `inputs` in Graph::inputs() order; returns the graph outputs in Graph::outputs() order.
// Throws braid::Error(kInvalidArgument) on a wrong input count or size, and
// (kInvalidModel) when a parameter has no data.
std::vector<std::vector<float>> run_reference(const ir::Graph& graph, const ir::Weights& weights,
                                              std::span<const std::vector<float>> inputs);

}  // namespace braid::exec::ref
