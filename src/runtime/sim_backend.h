// The simulated GPU as a runtime backend, in virtual time: every step is simulated (sim/engine.h)
// on an idle device, replayed as a CUDA Graph (one graph launch per step), so a step's time and
// achieved occupancy are deterministic and cached by the step's shape (which sub-blocks or
// block ranges, and how). A scenario of 30 s therefore simulates each distinct step once.
// No values are computed (top.txt's metrics are times); the CPU backend computes them.
//
//   runtime::SimBackend gpu(set, sim::load_device("a100_40gb"));
//   runtime::CombinedScheduler dict(set, gpu.stage_cost());
//
// The simulator's stage cost is also what schedules combined blocks on this backend: a stage
// mixing models is simulated like any other (each unit's kernels from its own model).
#pragma once

#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "runtime/combined.h"
#include "runtime/step.h"
#include "sim/device_spec.h"
#include "sim/program.h"

namespace braid::runtime {

class SimStageCost final : public StageCost {
 public:
  // `kernels[m]`: model m's unit kernels on the device (the backend's). A stage is launched
  // eagerly, or as one captured graph under `graph_replay` (as the backend runs its steps).
  SimStageCost(std::vector<const sim::UnitKernels*> kernels, const sim::DeviceSpec& spec,
               bool graph_replay = false);
  std::string_view name() const override { return "sim"; }
  Micros unit(UnitRef u) const override;
  Micros stage(std::span<const std::vector<UnitRef>> groups) const override;

 private:
  Micros simulate(std::span<const std::vector<UnitRef>> groups) const;

  std::vector<const sim::UnitKernels*> kernels_;
  const sim::DeviceSpec* spec_;
  bool graph_replay_;
  mutable std::mutex mutex_;
  mutable std::unordered_map<std::string, Micros> cache_;
};

struct SimBackendOptions {
  bool graph_replay = true;  // a step is one captured graph (false: eager launches)
};

class SimBackend final : public Backend {
 public:
  // `models` must outlive it and hold its schedules (model.plan) before run() is called.
  SimBackend(const ModelSet& models, sim::DeviceSpec spec, SimBackendOptions options = {});
  ~SimBackend() override;

  std::string_view name() const override { return name_; }
  bool virtual_time() const override { return true; }
  void begin_instance(InstanceId, uint32_t, std::span<const std::vector<float>>) override {}
  // Not thread-safe: the runtime runs one step at a time.
  StepResult run(const Step& step) override;
  std::vector<std::vector<float>> end_instance(InstanceId) override { return {}; }

  const StageCost& stage_cost() const { return *stage_cost_; }
  const sim::DeviceSpec& spec() const { return spec_; }
  int64_t simulations() const { return simulations_; }  // distinct steps simulated

  // The program a step issues (exposed for tests and traces).
  sim::Program program(const Step& step) const;

 private:
  // kInvalidArgument for pieces outside their models, or a combined step whose pieces are not
  // its schedule's sub-blocks.
  void check(const Step& step) const;

  const ModelSet* models_;
  sim::DeviceSpec spec_;
  SimBackendOptions options_;
  std::string name_;
  std::vector<std::unique_ptr<sim::UnitKernels>> kernels_;
  std::unique_ptr<SimStageCost> stage_cost_;
  std::unordered_map<std::string, StepResult> steps_;
  int64_t simulations_ = 0;
};

}  // namespace braid::runtime
