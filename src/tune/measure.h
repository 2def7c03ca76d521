// Running schedules on an executor and timing them: what `braid run`, `braid bench` and `auto`
// (auto_schedule.h) share. Inputs are given (MeasureOptions::inputs) or uniform [-1, 1] from a
// seed, so two schedules of one model see the same inputs and their outputs_sha256 must agree.
//  - Device cpu: the CPU executor, wall-clock time of `iters` runs after `warmup`.
//  - Device cuda:N: the CUDA executor (cuda_executor.h), timed like the CPU; `graph_replay`
//    captures a CUDA Graph once and replays it (the CLI's default; --eager turns it off).
//    "no CUDA device" where there is none.
//  - under mpirun -np M: the MPI executor, one rank per device of the schedule; every rank
//    returns a result, rank 0's has the outputs.
//  - Device sim:NAME (a devices/ name or a .json path): the GPU simulator; one simulated run
//    gives the latency (it is deterministic), the CPU executor the values (weighted DAGs,
//    which have no values, are simulated only).
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/device.h"
#include "base/precision.h"
#include "exec/chrome_trace.h"
#include "exec/cpu/cpu_executor.h"
#include "ir/weights.h"
#include "sched/schedule.h"

namespace braid::tune {

struct MeasureOptions {
  Device device;              // cpu
  bool graph_replay = false;  // cuda, sim: the plan captured once and replayed as a CUDA Graph
  Precision precision = Precision::kFp32;  // cuda: what convolutions and GEMMs compute in
  // cuda: convolutions' cuDNN algorithms timed at prepare (CudaExecutorOptions)
  bool measure_conv_algos = false;
  std::string sim_trace;  // sim: write the kernel-level Chrome trace here
  exec::CpuExecutorOptions executor;
  int iters = 20;  // timed runs of each schedule (rounds, when several are timed together)
  int warmup = 3;  // untimed runs of each schedule first
  uint64_t input_seed = 1;
  // Per graph input, its data (tensor_files.h read_inputs); empty or an empty entry: random
  // uniform [-1, 1] from input_seed.
  std::vector<std::vector<float>> inputs;
  bool keep_outputs = false;           // fill Measured::outputs
  exec::ChromeTrace* trace = nullptr;  // receives the timed runs when set (of one schedule)
};

struct Measured {
  double median_ms = 0, p10_ms = 0, p90_ms = 0;
  Bytes peak_bytes = 0;
  size_t lanes = 0;
  std::string outputs_sha256;  // empty when there are no values (a weighted DAG on sim)
  std::vector<std::vector<float>> outputs;  // per graph output, with MeasureOptions::keep_outputs
  bool simulated = false;
  size_t kernels = 0;         // sim: kernels launched
  double mean_occupancy = 0;  // sim: time-weighted achieved occupancy of device 0
};

// Whether this process is one of several ranks started by mpirun (initializes MPI then): the
// schedule's devices then run one per rank (exec/mpi/mpi_executor.h) and rank 0 reports.
bool launched_by_mpi();
// This process's MPI rank (0 without MPI).
int process_rank();
// Throws braid::Error(kNotFound) when `device` names a GPU that is not here: "no CUDA device
// (...why...)" without any, "no CUDA device N (M visible)" otherwise. Other devices pass.
void require_cuda_device(const Device& device);

// Validates, lowers, prepares and runs `schedule`; throws braid::Error on an invalid schedule,
// an unknown device or a model the executor cannot run.
Measured measure_schedule(const ir::UnitGraph& units, std::shared_ptr<const ir::Weights> weights,
                          const sched::Schedule& schedule, const MeasureOptions& options);

// Several schedules of one model timed together, INTERLEAVED: each is prepared and warmed up,
// then each of `options.iters` rounds runs every schedule once in turn, so drift (clocks, other
// processes, thermals) hits all of them alike. One Measured per schedule, in order. On sim, one
// simulated run each (deterministic). Throws like measure_schedule.
std::vector<Measured> measure_interleaved(const ir::UnitGraph& units,
                                          std::shared_ptr<const ir::Weights> weights,
                                          std::span<const sched::Schedule> schedules,
                                          const MeasureOptions& options);

// What a measured latency on `device` depends on, in one line, for caches of decisions: the CPU
// model, CPUs, oneDNN and braid versions (cost::fingerprint); the GPU's name, compute
// capability, SMs and driver; the simulated device's name and a digest of its file. Throws
// braid::Error(kNotFound) for an unknown or absent device.
std::string describe_device(const Device& device);

// Lane names for a Chrome trace of `schedule`'s lowered plan ("device 0 stream 1").
std::vector<std::string> trace_lane_names(const ir::UnitGraph& units,
                                          const sched::Schedule& schedule);

}  // namespace braid::tune
