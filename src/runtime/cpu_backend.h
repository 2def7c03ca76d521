// The CPU executor as a runtime backend, for real: wall-clock time, real values. Each model is
// prepared once (its plan, its weights); an instance is a request of its model (its own
// activation arena, kept between blocks until the next block reads it, top.txt §VI-A), taken
// from a per-model pool and returned when the instance ends.
//
// A step runs its pieces side by side, one thread per piece, each piece with its model's own
// plan (run_blocks over the piece's IR blocks). Pieces of one model run one after another: the
// CPU executor runs one request at a time per prepared model. A combined step runs the same
// way on the CPU today: the combined schedule's stages are priced and cached (the stage dict)
// but not executed across models by this backend.
//
//   runtime::CpuBackend cpu(set, {.threads_per_stream = 1, .pin_threads = false});
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "exec/cpu/cpu_executor.h"
#include "runtime/model_set.h"
#include "runtime/step.h"

namespace braid::runtime {

class CpuBackend final : public Backend {
 public:
  // `models` must outlive it and hold their schedules: each is prepared here. Lanes are not
  // pinned by default (the models share the machine's cores).
  CpuBackend(const ModelSet& models, exec::CpuExecutorOptions options = {.pin_threads = false});
  ~CpuBackend() override;

  std::string_view name() const override { return "cpu"; }
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
