// TOP's offline training loop as an environment (top.txt Algorithm 1, lines 3-24): at each step
// the W + 1 agents act (runtime/agents.h), the runtime runs the scenario under that decision for
// `step_s` of its clock, and the agents get the state sampled n times over the step (Eq. 1) and
// their rewards (Eq. 2, or the scale-free reward below). On `sim:` devices in virtual time:
// deterministic for a seed. What braid.TopParallelEnv (PettingZoo's parallel API) wraps.
//
//   runtime::ScenarioRunner runner(scenario);
//   runtime::TopEnv env(runner, {.step_s = 0.5, .samples = 5});
//   std::vector<float> s = env.reset(/*seed=*/1);
//   runtime::EnvStep r = env.step(actions);  // actions[0]: a⁰ (W values), then a¹..a^W
//
// Rewards (decided here; docs/top.md, "Learned policies"): the paper's Eq. 2 is
// e^(aξ* − b·l* − cσ*) with Z-scores over an unstated population; every term is in (0, 1] per
// stage and vanishes on µs latencies, so splitting work into more steps raises the return. The
// default is scale-free and per step: a·ξ − b·ln(l_w / l_ref_w) − c·σ/(1 + σ), where ξ is the
// device's utilization over the step, l_w the mean latency of model w's tasks that finished in
// the step and the age of those still waiting at its end, l_ref_w the model's latency alone
// (its own schedule's prediction), σ the variance of the remaining tasks at the step's end; the
// launcher's latency term is the mean over models. `paper` gives Eq. 2 with Z-scores over the
// episode's steps so far. A step whose partition holds a superblock (> H sub-blocks) rewards 0
// under `paper` (Algorithm 1, line 9: the floor of Eq. 2's range) and what it earned less
// kSuperblockPenalty under `scale-free`, which has no floor: there a 0 beat every backlogged
// step, and MADDPG learned to make superblocks (docs/top.md).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "runtime/agents.h"
#include "runtime/runtime.h"
#include "runtime/scenario.h"

namespace braid::runtime {

enum class RewardKind : uint8_t { kScaleFree, kPaper };
inline constexpr double kSuperblockPenalty = 1.0;  // scale-free: a latency e times the reference
// "scale-free" or "paper"; kInvalidArgument naming the known ones.
RewardKind parse_reward_kind(std::string_view name);

struct EnvOptions {
  double step_s = 0.5;  // how long one decision holds, on the runtime's clock
  int samples = 5;      // n: state rows per step, at the end of each step_s / n
  ActionMapping mapping;
  RewardKind reward = RewardKind::kScaleFree;
  double a = 0.4, b = 0.4, c = 0.2;  // Eq. 2's weights (§VI-B)
};

struct EnvStep {
  std::vector<float> observation;   // samples × observation_size(models), row by row
  std::vector<double> rewards;      // per agent: the launcher, then one per model
  bool done = false;                // the scenario's duration is over
  bool superblock = false;          // the partition had a combined block of more than H
  double utilization = 0;           // ξ over the step
  double variance = 0;              // σ at its end
  std::vector<double> latency_ms;   // per model: l_w (0: no task finished or waited)
  std::vector<uint64_t> completed;  // per model, in the step
};

class TopEnv {
 public:
  // `runner` (its models, backend and stage dict) must outlive it. kInvalidArgument for a
  // non-positive step or sample count.
  explicit TopEnv(ScenarioRunner& runner, EnvOptions options = {});
  ~TopEnv();

  size_t num_agents() const;        // W + 1
  size_t observation_size() const;  // samples × (W + ΣB_w)
  // Per agent, its action's size: W for the launcher, then B_w per model.
  std::vector<size_t> action_sizes() const;

  // A new episode with the scenario's arrivals drawn from `seed`; the first state (the runtime
  // at time 0, every row alike).
  std::vector<float> reset(uint64_t seed);
  // kInvalidArgument for actions of the wrong shape, or before reset / after done.
  EnvStep step(std::span<const std::vector<double>> actions);
  // The episode's report (ends it).
  Report finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace braid::runtime
