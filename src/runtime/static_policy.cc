// `static` and `static-serial`: every model keeps its own schedule (IOS's, the baseline of
// top.txt Fig. 2); nothing is combined or co-scheduled.
//  - static: a task is dequeued as soon as it arrives (up to max_in_flight instances per model),
//    so instances overlap: each step advances every in-flight instance by one block, each with
//    its own plan on its own streams, and they contend for the device. A task that arrives
//    during a step joins at the next block boundary (the runtime runs one step at a time).
//  - static-serial: one instance per model at a time, run whole in one step.
#include <memory>

#include "runtime/policy.h"

namespace braid::runtime {
namespace {

class StaticPolicy final : public Policy {
 public:
  StaticPolicy(const PolicyOptions& options, bool serial) : options_(options), serial_(serial) {}

  std::string_view name() const override { return serial_ ? "static-serial" : "static"; }

  Decision decide(const RuntimeState& state) override {
    return {.interval_us = std::vector<double>(state.model.size(), 0.0), .partition = {}};
  }

  std::vector<bool> admit(const RuntimeState& state, const std::vector<bool>& due) override {
    std::vector<bool> out(due.size(), false);
    const size_t cap = serial_ ? 1 : options_.max_in_flight;
    for (size_t m = 0; m < due.size(); ++m) out[m] = due[m] && state.model[m].in_flight < cap;
    return out;
  }

  std::optional<Step> next_step(const RuntimeState& state) override {
    if (state.instances.empty()) return std::nullopt;
    Step step{.kind = StepKind::kIndependent};
    for (const InstanceState& inst : state.instances) {
      const auto blocks = uint32_t(state.models->model(inst.model).blocks.size());
      step.pieces.push_back(
          {inst.id, inst.model, inst.next_block, serial_ ? blocks : inst.next_block + 1});
    }
    return step;
  }

 private:
  PolicyOptions options_;
  bool serial_;
};

}  // namespace

std::unique_ptr<Policy> make_static_policy(const PolicyOptions& options, bool serial) {
  return std::make_unique<StaticPolicy>(options, serial);
}

}  // namespace braid::runtime
