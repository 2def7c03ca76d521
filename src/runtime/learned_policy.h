// A trained policy run by braid's own runtime, without PyTorch (`--policy learned:DIR`): the W + 1
// MADDPG actors that `braid train maddpg` exported (python/braid/maddpg.py) as ONNX beside a
// braid.policy/1 manifest, evaluated with braid's reference executor (a few small Gemms per
// decision: no threads or plans needed, and bit-reproducible). Their actions become intervals
// and a block partition as in training (runtime/agents.h: ActionPolicy).
//
//   DIR/policy.json   {"format": "braid.policy/1", "kind": "maddpg", "models": [{"name",
//   "blocks"}],
//                      "H", "samples", "step_s", "min_interval_us", "max_interval_us",
//                      "partition" (optional: "bins", Fig. 10, or "offsets"),
//                      "observation_size", "agents": [{"name", "file", "actions"}], ...}
//   DIR/actor_*.onnx  input "state" [1, observation_size] -> output "action" [1, actions]
//
// It decides as it was trained: every step_s of the runtime's clock (decision_period_us), on the
// state's last `samples` rows, one every step_s / samples (observe, at the runtime's samples: a
// scenario's sample period of step_s / samples reproduces training's rows exactly).
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "runtime/agents.h"
#include "runtime/model_set.h"
#include "runtime/policy.h"

namespace braid::runtime {

inline constexpr std::string_view kLearnedPrefix = "learned:";

class LearnedPolicy final : public Policy {
 public:
  // Loads DIR. With `models`, checks they are the ones it was trained on (names and block counts,
  // in order) and `options.max_sub_blocks` its H. Throws kNotFound (no DIR/policy.json),
  // kInvalidArgument (a manifest or actor that does not fit, naming the field or file).
  LearnedPolicy(const std::filesystem::path& dir, const PolicyOptions& options,
                const ModelSet* models);
  ~LearnedPolicy() override;

  std::string_view name() const override { return name_; }
  Decision decide(const RuntimeState& state) override;
  std::vector<bool> admit(const RuntimeState& state, const std::vector<bool>& due) override;
  std::optional<Step> next_step(const RuntimeState& state) override;
  void observe(const RuntimeState& state) override;
  double decision_period_us() const override { return step_us_; }

  // The actions of every agent for a state (samples rows, row by row): for tests.
  std::vector<std::vector<double>> act(const std::vector<float>& state) const;

 private:
  struct Actor;
  std::string name_;
  std::vector<Actor> actors_;  // the launcher, then one per model
  size_t row_size_ = 0, samples_ = 0;
  double step_us_ = 0, row_us_ = 0, next_row_us_ = 0;
  std::vector<std::vector<float>> rows_;  // the last `samples_` rows, oldest first
  ActionPolicy inner_;
};

}  // namespace braid::runtime
