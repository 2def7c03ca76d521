// --cost and its options, shared by the commands that schedule (schedule, run, bench).
//   dag       the latencies written in a .dag.json (the default for weighted DAGs)
//   cpu       measured on this CPU, cached on disk (the default for real models)
//   roofline  FLOPs and bytes only: no measurement
//   cuda:N    measured on GPU N with the CUDA executor, cached on disk
//   sim:NAME  the GPU simulator on devices/NAME.json (or a .json path)
#pragma once

#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "cost/cost_model.h"
#include "models/loader.h"
#include "profile/cpu_profiler.h"
#include "sched/registry.h"

namespace braid::cli {

struct CostFlags {
  std::string name;       // empty: dag for a weighted DAG, cpu otherwise
  std::string transfers;  // braid.transfers/1 file: its link prices every transfer
  profile::CpuProfilerOptions cpu;
};
// --cost only: --threads-per-stream belongs to the command (the executor's and the profiler's).
void add_cost_flags(CLI::App& cmd, CostFlags& flags);

// Whether `flags` needs the model's weights (a measured cost model runs the model).
bool cost_needs_weights(const CostFlags& flags, const std::string& model_spec);

// Throws braid::Error(kInvalidArgument) for an unknown name or a cost model the model cannot
// have (cpu for a weighted DAG, dag for a model without latencies). `units` must outlive it;
// `weights` are needed by cpu only.
std::unique_ptr<cost::CostModel> make_cost_model(const CostFlags& flags, const ir::UnitGraph& units,
                                                 std::shared_ptr<const ir::Weights> weights);

// "sim:a40x2" (a device set): schedules get 2 devices unless --devices said otherwise.
void apply_device_set(const std::string& spec, sched::ScheduleOptions& options);

}  // namespace braid::cli
