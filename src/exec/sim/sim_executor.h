// The simulated-GPU executor, `--device sim:NAME`: runs any valid schedule on the GPU simulator
// (sim/engine.h) and reports simulated time. The values are computed for real by the CPU
// executor (so outputs are the same as on any other backend and `outputs_sha256` compares);
// the timing comes only from the simulation, never from the CPU.
//
//   auto sim = make_sim_executor({.devices = {sim::load_device("v100")}});
//   auto model = sim->prepare({graph, weights, &units, &plan, order});
//   auto request = model->new_request();
//   model->run(*request, &trace);                 // on_unit with simulated times
//   const sim::Result* r = last_simulation(*request);   // r->makespan_us
#pragma once

#include <memory>
#include <vector>

#include "exec/cpu/cpu_executor.h"
#include "exec/executor.h"
#include "sim/engine.h"

namespace braid::exec {

struct SimExecutorOptions {
  std::vector<sim::DeviceSpec> devices;  // device d of the plan runs on devices[d]
  bool graph_replay = false;             // the plan captured once and replayed (CUDA Graph)
  bool compute_values = true;            // also run the CPU executor for the outputs
  bool record_timeline = false;          // keep kernels and occupancy in the Result
  CpuExecutorOptions cpu;                // for the values
};

std::unique_ptr<Executor> make_sim_executor(SimExecutorOptions options);

// The simulation of the request's last run_blocks call; null for requests of other executors.
const sim::Result* last_simulation(const Request& request);
// The program behind it (kernel names and streams, for traces); null likewise.
const sim::Program* last_program(const Request& request);

// Writes the last simulation as a Chrome trace: one track per stream with each kernel as a
// slice (its unit and grid in args), and per-device counters of achieved occupancy and active
// SMs (IOS Figure 8's active-warp metric).
void write_sim_trace(const Request& request, const ir::UnitGraph& units, const std::string& title,
                     const std::string& path);

}  // namespace braid::exec
