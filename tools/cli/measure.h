// Running a schedule on the CPU executor and timing it: what `braid run` and `braid bench`
// share. Inputs are uniform [-1, 1] from a seed, so two schedules of one model see the same
// inputs and their outputs_sha256 must agree.
#pragma once

#include <memory>
#include <string>

#include "exec/chrome_trace.h"
#include "exec/cpu/cpu_executor.h"
#include "ir/weights.h"
#include "sched/schedule.h"

namespace braid::cli {

struct MeasureOptions {
  exec::CpuExecutorOptions executor;
  int iters = 20;
  int warmup = 3;
  uint64_t input_seed = 1;
  exec::ChromeTrace* trace = nullptr;  // receives the timed runs when set
};

struct Measured {
  double median_ms = 0, p10_ms = 0, p90_ms = 0;
  Bytes peak_bytes = 0;
  size_t lanes = 0;
  std::string outputs_sha256;
};

// Validates, lowers, prepares and runs `schedule`; throws braid::Error on an invalid schedule
// or a model the CPU executor cannot run.
Measured measure_on_cpu(const ir::UnitGraph& units, std::shared_ptr<const ir::Weights> weights,
                        const sched::Schedule& schedule, const MeasureOptions& options);

// Lane names for a Chrome trace of `schedule`'s lowered plan ("device 0 stream 1").
std::vector<std::string> trace_lane_names(const ir::UnitGraph& units,
                                          const sched::Schedule& schedule);

}  // namespace braid::cli
