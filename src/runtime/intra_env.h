// GPG's training environment (top.txt Algorithm 2 in training): one episode schedules one
// combined block from its end, an ending (or none) per sub-block at each step, each step
// rewarded by its stage's latency under the stage cost. What braid.IntraBlockEnv (Gymnasium's
// API) and `braid train gpg` drive.
//
//   runtime::IntraEnv env(runner.combiner(), {.min_sub_blocks = 2, .max_sub_blocks = 4});
//   env.reset(/*seed=*/1);                      // a random combination of 2..4 sub-blocks
//   while (!env.done()) env.step(choice);       // choice[k]: an index into candidates()[k], -1
//
// The reward is scale-free (issue 30; the paper's e^(-l) rewards more stages and vanishes on µs
// stages): -l / l_zip, l the stage's latency and l_zip the latency of the zip of the sub-blocks'
// own schedules (what the combination costs with no search across sub-blocks), so an episode's
// return is -1 for a schedule as fast as the zip and above -1 for a faster one.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "runtime/combined.h"
#include "runtime/intra.h"

namespace braid::runtime {

struct IntraEnvOptions {
  int min_sub_blocks = 2;
  int max_sub_blocks = 4;
  sched::EndingLimits limits{.group_size = 3, .groups = 8};  // r, s
};

struct IntraStep {
  double reward = 0;
  double latency_us = 0;  // the stage's
  bool done = false;
};

class IntraEnv {
 public:
  // `combiner` (its models and stage cost; the sub-blocks' own schedules come from it) must
  // outlive the env. kInvalidArgument for sizes outside [1, blocks of at most 64 units].
  IntraEnv(CombinedScheduler& combiner, IntraEnvOptions options = {});

  // A random combination from `seed`: a size uniform in [min, max], then distinct sub-blocks
  // uniform among the models' blocks of at most 64 units.
  void reset(uint64_t seed);
  // A given combination (any order; kInvalidArgument as CombinedScheduler::schedule).
  void reset(std::vector<SubBlock> combination);

  const IntraBlock& block() const { return block_; }
  const std::vector<sched::UnitMask>& left() const { return left_; }
  // The current state's pruned endings per sub-block.
  const std::vector<std::vector<IntraCandidate>>& candidates() const { return candidates_; }
  bool done() const { return IntraBlock::done(left_); }
  double zip_us() const { return zip_us_; }
  // The stages chosen so far, first to last.
  std::vector<std::vector<std::vector<UnitRef>>> stages() const;
  const IntraEnvOptions& options() const { return options_; }

  // kInvalidArgument for a choice of the wrong size, an index out of range, a sub-block done but
  // not -1, no ending at all, or more than s groups; or before reset / after done.
  IntraStep step(std::span<const int> choice);

 private:
  void start(std::vector<SubBlock> combination);

  CombinedScheduler* combiner_;
  IntraEnvOptions options_;
  std::vector<SubBlock> pool_;  // the sub-blocks an episode draws from
  IntraBlock block_;
  std::vector<sched::UnitMask> left_;
  std::vector<std::vector<IntraCandidate>> candidates_;
  std::vector<std::vector<std::vector<UnitRef>>> chosen_;  // last stage first
  double zip_us_ = 0;
  bool started_ = false;
};

}  // namespace braid::runtime
