// An executor as a runtime backend, for real: wall-clock time, real values — the CPU executor,
// or any other (the CUDA one: each instance a request with its own streams, block ranges
// replayed as CUDA Graphs, exec/cuda/cuda_executor.h). Each model is prepared once (its plan,
// its weights); an instance is a request of its model (its own
// activation arena, kept between blocks until the next block reads it, top.txt §VI-A), taken
// from a per-model pool and returned when the instance ends.
//
// A step runs side by side:
//  - independent: each instance's pieces (its model's own plan, run_blocks over the pieces' IR
//    blocks) on a thread of its own — instances of one model too, on the CPU, whose executor
//    runs requests of a model side by side; an executor that cannot gets one thread per model;
//  - combined (the CPU): each combined block on a thread of its own, stage by stage, each
//    group of a stage on its own lane and the groups side by side, the units of every instance
//    in its own request (exec::Executor::run_side_by_side): operators of different tasks run
//    side by side as the combined schedule says. Other executors run a combined step's pieces
//    as an independent step (their units run only in their plan's order).
// On the CPU, every model is prepared on one executor, so all of them share one pool of lanes
// (exec/cpu/lane_pool.h), and with a memory plan that reuses buffers by dependences only, so
// units may run in any order a combined schedule gives.
//
// A step is checked before anything runs (every piece names an instance in flight, of its
// model, and blocks of that model; a combined step's blocks cover its pieces: else
// kInvalidArgument and nothing ran); blocks out of order for an instance, or a kernel's
// failure, stop that thread's work, the other threads finish, and the first failure is
// rethrown once every thread has joined.
//
// StepResult: device_time is the step's wall clock. On the CPU, utilization is the process's CPU
// time over the step / (wall time x the CPUs this process may use), clamped to [0, 1]. All the
// process burns counts as busy: lanes spinning on an event or for their next job
// (CpuExecutorOptions::spin_us) included, and any other thread of the process. Lanes spin only
// when every model's lanes together fit the CPUs (else spin_us is set to 0). On another
// executor it is the busiest thread's device time (run_blocks' RunStats: CUDA events around its
// blocks) over the step's wall clock: a busy fraction, not an occupancy (no counter is read).
//
// begin_instance takes one vector per graph input, or none: the request's input buffers are
// then left as they are (whatever a new request's memory held, leftovers of the last task in a
// reused one), for runs that time the device and never read outputs. Not thread-safe: one
// caller (the runtime's loop) at a time.
//
//   runtime::ExecBackend cpu(set, {.threads_per_stream = 1, .pin_threads = false});
//   cpu.begin_instance(7, 0, inputs);
//   cpu.run({.kind = StepKind::kIndependent, .pieces = {{7, 0, 0, 2}}});
//   cpu.run({.kind = StepKind::kIndependent, .pieces = {{7, 0, 2, 12}}});
//   std::vector<std::vector<float>> y = cpu.end_instance(7);  // empty if it had blocks left
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "exec/cpu/cpu_executor.h"
#include "runtime/model_set.h"
#include "runtime/step.h"

namespace braid::runtime {

class ExecBackend final : public Backend {
 public:
  // `models` must outlive it (their weights are lent, not copied) and hold their schedules:
  // each is prepared here (kInvalidArgument for a model with none; what prepare throws, e.g.
  // kInvalidModel for a model loaded without weights). Lanes are not pinned by default (the
  // models share the machine's cores).
  ExecBackend(const ModelSet& models, exec::CpuExecutorOptions options = {.pin_threads = false});
  // The models prepared on `executor` (e.g. exec::make_cuda_executor({.device = 0, .graph =
  // true})); `name` names the backend in reports ("cuda:0").
  ExecBackend(const ModelSet& models, std::unique_ptr<exec::Executor> executor, std::string name);
  ~ExecBackend() override;

  std::string_view name() const override;
  bool virtual_time() const override { return false; }
  void begin_instance(InstanceId instance, uint32_t model,
                      std::span<const std::vector<float>> inputs) override;
  StepResult run(const Step& step) override;
  std::vector<std::vector<float>> end_instance(InstanceId instance) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace braid::runtime
