// The numbers `braid inspect` and `braid models --stats` report for a model.
#pragma once

#include <nlohmann/json.hpp>

#include "models/loader.h"

namespace braid::cli {

// name, source, units, ops, edges (input references), distinct_edges, blocks, block_sizes,
// width, flops, params, inputs, outputs; latency totals for weighted DAGs.
nlohmann::json summarize(const models::LoadedModel& model);

}  // namespace braid::cli
