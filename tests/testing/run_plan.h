// Running one schedule of a model on an executor and reading its outputs, for the tests that
// compare executors (the CUDA executor's against the CPU's and the reference):
//
//   auto outs = testing::run_plan(*make_cpu_executor({}), m, weights, schedule, inputs);
#pragma once

#include <memory>
#include <vector>

#include "exec/executor.h"
#include "ir/unit_graph.h"
#include "ir/weights.h"
#include "models/loader.h"
#include "sched/lower.h"
#include "sched/schedule.h"

namespace braid::testing {

// `s` lowered, prepared on `executor`, `inputs` set, run twice (a CUDA plan is captured into a
// graph on its first run and replayed on the second), each run block by block when asked; the
// graph's outputs as floats.
inline std::vector<std::vector<float>> run_plan(exec::Executor& executor,
                                                std::shared_ptr<const ir::Graph> graph,
                                                std::shared_ptr<const ir::Weights> weights,
                                                const ir::UnitGraph& units,
                                                const sched::Schedule& s,
                                                const std::vector<std::vector<float>>& inputs,
                                                bool block_by_block = false) {
  const sched::ExecutionPlan plan = sched::lower(units, s);
  auto model = executor.prepare({graph, weights, &units, &plan});
  auto request = model->new_request();
  for (size_t i = 0; i < inputs.size(); ++i) model->set_input(*request, i, inputs[i]);
  for (int repeat = 0; repeat < 2; ++repeat) {
    if (block_by_block)
      for (size_t b = 0; b < model->num_blocks(); ++b) model->run_blocks(*request, b, b + 1);
    else
      model->run(*request);
  }
  std::vector<std::vector<float>> outs;
  for (size_t i = 0; i < graph->outputs().size(); ++i) {
    auto o = model->output(*request, i);
    outs.emplace_back(o.begin(), o.end());
  }
  return outs;
}

// The same for a loaded model, with its weights shared as `weights`.
inline std::vector<std::vector<float>> run_plan(exec::Executor& executor,
                                                const models::LoadedModel& m,
                                                std::shared_ptr<const ir::Weights> weights,
                                                const sched::Schedule& s,
                                                const std::vector<std::vector<float>>& inputs,
                                                bool block_by_block = false) {
  return run_plan(executor, m.graph, std::move(weights), m.units, s, inputs, block_by_block);
}

}  // namespace braid::testing
