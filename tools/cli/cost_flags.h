// --cost and its options, shared by the commands that schedule (schedule, run, bench); the cost
// models themselves are tune/cost_models.h.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "base/precision.h"
#include "sched/registry.h"
#include "tune/cost_models.h"

namespace braid::cli {

using CostFlags = tune::CostSpec;
using tune::cost_needs_weights;
using tune::make_cost_model;

// --cost only: --threads-per-stream belongs to the command (the executor's and the profiler's).
void add_cost_flags(CLI::App& cmd, CostFlags& flags);

// --precision fp32|tf32|fp16|bf16 and --tf32 (its older spelling of tf32), for run and bench.
struct PrecisionFlags {
  std::string name = "fp32";
  bool tf32 = false;
};
void add_precision_flags(CLI::App& cmd, PrecisionFlags& flags);
// The precision the flags ask for; kInvalidArgument for an unknown name or --tf32 beside another.
Precision precision_of(const PrecisionFlags& flags);

}  // namespace braid::cli
