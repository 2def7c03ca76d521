// --cost and its options, shared by the commands that schedule (schedule, run, bench); the cost
// models themselves are tune/cost_models.h.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "sched/registry.h"
#include "tune/cost_models.h"

namespace braid::cli {

using CostFlags = tune::CostSpec;
using tune::cost_needs_weights;
using tune::make_cost_model;

// --cost only: --threads-per-stream belongs to the command (the executor's and the profiler's).
void add_cost_flags(CLI::App& cmd, CostFlags& flags);

}  // namespace braid::cli
