// A stage made runnable on any executor, the way IOS profiles each candidate stage (ios.txt §4):
// its units cut out as a graph of their own (subgraph.h), a one-stage Schedule (group i on
// stream i) validated and lowered, and uniform [-1, 1] inputs (zeros or uninitialized memory
// give denormals and timings 10x off). The CPU and GPU profilers share it.
//
//   auto runner = profile::make_stage_runner(units, weights, groups, /*seed=*/1);
//   auto model = executor->prepare(runner->bundle());
//   auto request = model->new_request();
//   runner->set_inputs(*model, *request);
//   model->run(*request);
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "cost/subgraph.h"
#include "exec/executor.h"
#include "sched/lower.h"

namespace braid::profile {

struct StageRunner {
  cost::ExtractedStage stage;
  sched::ExecutionPlan plan;
  std::vector<std::vector<float>> inputs;  // one per graph input of stage.graph

  exec::ModelBundle bundle() const { return {stage.graph, stage.weights, &stage.units, &plan}; }
  void set_inputs(const exec::PreparedModel& model, exec::Request& request) const;
};

// The p-quantile of `samples` by linear interpolation between order statistics (numpy's
// default): how both profilers summarize their timed runs.
Micros percentile(std::vector<double> samples, double p);

// Throws braid::Error: kInvalidArgument for an empty stage or group, kInvalidSchedule when the
// groups depend on each other (the validator names the edge). Not movable once made: bundle()
// points into it.
// `threads`, when not empty, is an allotment: group i on threads[i] threads, the stage's cores
// their sum (sched/schedule.h). `merge`: the stage is an operator merge (ios.txt §4.2) of the
// groups' units (one unit each), which executors with a merged kernel run as one (the CPU's:
// cpu_kernels.h, make_merged_conv_kernel); kInvalidSchedule when the units cannot merge.
std::unique_ptr<const StageRunner> make_stage_runner(const ir::UnitGraph& units,
                                                     const ir::Weights* weights,
                                                     std::span<const std::vector<UnitId>> groups,
                                                     uint64_t input_seed,
                                                     std::span<const int> threads = {},
                                                     bool merge = false);

}  // namespace braid::profile
