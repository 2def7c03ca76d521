// Policies (top.txt §V): what the task launcher and the inter-block scheduler do. A policy
// decides, for every model, the launcher's dequeue interval (the action a⁰ of §V-B, Fig. 9) and
// the block combination (a partition of every model's blocks into combined blocks, Fig. 10);
// the runtime asks it again only when the variance of the queue lengths exceeds T (Algorithm 1,
// lines 25-40). Between decisions it admits tasks and picks the next step to run.
//
//   auto policy = runtime::make_policy("top-heuristic", {...});
//   Decision d = policy->decide(state);
//   std::optional<Step> s = policy->next_step(state);
//
// Shipped (policy registry, in this order):
//   static         each model's own schedule (IOS), every task launched on arrival: the
//                  in-flight instances advance a block each per step, side by side (Fig. 2)
//   static-serial  the same, one instance at a time per model, each run whole
//   sync           POS-like (top.txt §II [11]): the models' graphs merged and scheduled once,
//                  run only when every queue has a task, one task of each per round
//   top-heuristic  ours, non-learned: intervals from queue lengths and measured latencies, the
//                  partition by the cost model under the H cap, Ratio_in order (§VI-A)
//   learned:DIR    MADDPG's actors trained by `braid train maddpg` (runtime/learned_policy.h)
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/combined.h"
#include "runtime/model_set.h"
#include "runtime/step.h"

namespace braid::runtime {

// An in-flight instance: a task dequeued and being inferred.
struct InstanceState {
  InstanceId id = 0;
  uint32_t model = 0;
  uint64_t task = 0;        // the task's id (ids grow with arrival)
  uint32_t next_block = 0;  // the block it waits to run (its "inference progress", §IV)
  double arrival_us = 0, dequeued_us = 0;
};

struct ModelState {
  size_t queued = 0;     // tasks waiting in the model's queue
  size_t in_flight = 0;  // its instances
  uint64_t arrived = 0, completed = 0;
  double arrival_rate_hz = 0;  // arrivals so far over the time elapsed
  // Mean measured device time of one block of this model when it ran alone in a step (µs);
  // 0 until one has.
  double block_us = 0;
};

// What a policy sees. Instances are in admission order (oldest first).
struct RuntimeState {
  double now_us = 0;
  const ModelSet* models = nullptr;
  std::vector<ModelState> model;
  std::vector<InstanceState> instances;
  CombinedScheduler* combiner = nullptr;  // the stage dict shared by policies that combine
  // σ_t: population variance over the models of their remaining tasks (queued + in flight): a
  // policy that dequeues on arrival keeps its backlog in flight, not in the queue.
  double queue_variance() const;
};

struct Decision {
  std::vector<double> interval_us;  // per model: at most one dequeue per interval (0: on arrival)
  // Combined blocks: every block of every model exactly once (blocks alone are one-element
  // entries). Empty for policies that do not combine blocks.
  std::vector<std::vector<SubBlock>> partition;
};

class Policy {
 public:
  virtual ~Policy() = default;
  virtual std::string_view name() const = 0;
  virtual Decision decide(const RuntimeState& state) = 0;
  // Of the models whose launcher interval is due (due[m]) and whose queue is not empty, which
  // dequeue one task now.
  virtual std::vector<bool> admit(const RuntimeState& state, const std::vector<bool>& due) = 0;
  // The next step, or nullopt when nothing can run now. Pieces name in-flight instances.
  virtual std::optional<Step> next_step(const RuntimeState& state) = 0;
  // The state at every sample of the runtime (RuntimeOptions::sample_period_us), before the
  // runtime decides whether to ask decide().
  virtual void observe(const RuntimeState& /*state*/) {}
  // > 0: the runtime asks decide() at the first sample at or after every multiple of it, and not
  // when σ_t exceeds T (a policy trained on a cadence, as top.txt's agents are); 0: only then.
  virtual double decision_period_us() const { return 0; }
};

struct PolicyOptions {
  size_t max_in_flight = 64;  // per model (static)
  int max_sub_blocks = 4;     // H
};

// Policy names in registry order (without learned:DIR, which names a trained policy's
// directory: runtime/learned_policy.h).
std::span<const std::string_view> policy_names();
// Throws kInvalidArgument for an unknown name, listing policy_names() and learned:DIR. A
// learned:DIR policy is checked against `models` when given (the runtime's), and loads what
// LearnedPolicy's constructor throws.
std::unique_ptr<Policy> make_policy(std::string_view name, const PolicyOptions& options = {},
                                    const ModelSet* models = nullptr);

// The Ratio_in rule (top.txt §VI-A), shared by the policies that combine blocks. A sub-block
// (m, b) of a combined block is ready when an instance of m waits at block b; the oldest such
// instance enters it (one instance per model per sub-block). Ratio_in = ready / sub-blocks.
// The combined block with the highest Ratio_in runs, only its ready sub-blocks; ties go to the
// one holding the oldest ready instance. Ratio_in = 0 never runs: nullopt when none is ready.
struct CombinedChoice {
  size_t combined_block = 0;  // index into the partition
  double ratio_in = 0;
  std::vector<Piece> pieces;  // the ready sub-blocks, one block each, in partition order
  std::vector<SubBlock> ready;
};
std::optional<CombinedChoice> choose_combined_block(
    const RuntimeState& state, std::span<const std::vector<SubBlock>> partition);
// Every combined block with Ratio_in > 0, in that order (the first is choose_combined_block's):
// what a step of the combined computation graph runs, in issue order.
std::vector<CombinedChoice> rank_combined_blocks(const RuntimeState& state,
                                                 std::span<const std::vector<SubBlock>> partition);

// The combined computation graph applied to the current progress (Algorithm 1, line 29): every
// combined block with a ready sub-block runs its ready sub-blocks, side by side, issued in
// Ratio_in order; nullopt when none is ready. The schedules come from state.combiner.
std::optional<Step> combined_graph_step(const RuntimeState& state,
                                        std::span<const std::vector<SubBlock>> partition);

// Every block of every model alone (the trivial partition).
std::vector<std::vector<SubBlock>> singleton_partition(const ModelSet& models);

}  // namespace braid::runtime
