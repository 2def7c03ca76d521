// The CPU executor: LIOS's observation that stream scheduling applies to multi-core CPUs, made
// concrete. A stream is a worker thread with its own in-order step list and its own intra-op
// thread budget (GNU OpenMP, which Debian's oneDNN uses); an event is an atomic epoch that one
// lane stores and others wait on (C++20 atomic wait). Kernels are oneDNN primitives created
// once at prepare time; a run only walks the lanes' step lists.
//
// The workers are one pool per executor (cpu/lane_pool.h), shared by every model it prepares:
// a run takes as many idle workers as its plan has lanes, so requests of one model, and
// models, run side by side on different workers (TOP's instances in flight). Models prepared
// with MemoryPlanOptions::order = kDependences may also run lists of units of several requests
// side by side (Executor::run_side_by_side: TOP's combined blocks).
//
// Why plain threads and not oneTBB arenas: the schedule fixes which unit runs on which stream
// and in what order, so no work stealing is wanted, and oneDNN's OpenMP runtime needs its
// thread budget set per thread (omp_set_num_threads in the lane thread), which std::thread
// gives directly (ecosystem.md §4.1).
//
//   auto cpu = make_cpu_executor({.threads_per_stream = 1});
//   auto model = cpu->prepare({graph, weights, &units, &plan});
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "exec/executor.h"
#include "exec/kernel.h"
#include "exec/memory_plan.h"

namespace braid::exec {

struct CpuExecutorOptions {
  int threads_per_stream = 1;  // OpenMP threads inside each oneDNN primitive
  // true: pin worker i to CPUs [i*T, i*T + T) of the allowed set (wrapping). false: pin each
  // run's lanes to CPUs no other run of this process holds, for that run (cpu/lane_pool.h).
  bool pin_threads = true;
  // How long a lane spins on an event (or for the next job) before it sleeps on a futex. Waking
  // a sleeping thread on another CPU costs tens of microseconds on a VM, more than most units
  // of a small model; spinning on its own CPU costs nothing when lanes do not share CPUs, so
  // lanes spin only when busy workers x threads_per_stream fit in the allowed CPUs. 0: never.
  int spin_us = 100;
  // Producers write straight into their window of a Concat's output where the layouts allow
  // (cpu::can_write_into_concat); the Concat then copies nothing.
  bool concat_in_place = true;
  // The layout of activations between oneDNN kernels (cpu/layout.h); graph inputs and outputs
  // are always plain.
  TensorLayout layout = TensorLayout::kNhwc;
  // The layout of every value of the prepared graph (indexed by ValueId), in place of the one
  // cpu::choose_layouts(graph, layout) gives: how the profiler runs a stage cut out of a model
  // in the layouts its values have in the whole model. Each must be one cpu::can_be_blocked
  // allows (else prepare throws kInvalidArgument). Graph inputs and outputs may then be
  // blocked: set_input and output copy their bytes as they are, in that layout.
  std::vector<TensorLayout> value_layouts;
  MemoryPlanOptions memory;
  // Multi-process runs (exec/mpi/mpi_executor.h): every process prepares the whole plan; a unit
  // that `is_local` rejects is computed by another process and "launched" here by its extra
  // kernels only (which receive its outputs); a local unit runs its kernels, then its extra
  // ones (which send its outputs). Unset: every unit is local and has no extra kernels.
  std::function<bool(UnitId)> is_local;
  std::function<std::vector<std::unique_ptr<Kernel>>(UnitId, const TensorLocator&)> extra_kernels;
};

std::unique_ptr<Executor> make_cpu_executor(const CpuExecutorOptions& options = {});

}  // namespace braid::exec
