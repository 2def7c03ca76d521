// TOP's MADDPG agents (top.txt §V-B) as the runtime sees them: W + 1 agents — the task launcher
// (a⁰: one dequeue interval per model, Fig. 9) and one agent per model (a^w: one value per block
// of model w, binned into the block partition, Fig. 10) — their actions turned into a Decision,
// the state they observe (Eq. 1) and the reward they get (Eq. 2). The policy that runs such
// actions is ActionPolicy; the environment that steps them is runtime/env.h.
//
//   runtime::ActionPolicy policy({.max_sub_blocks = 4}, {});
//   policy.set_actions(models, launcher, per_model);   // a⁰, a¹..a^W, each value in [0, 1]
//
// What the paper leaves open, decided here (docs/top.md, "Learned policies"):
//  - a⁰ ∈ (0, 1] s/task read linearly puts every useful interval (2-33 ms on the simulated A100)
//    in the bottom 3% of the range: a⁰ = 0..1 maps to min..max interval on a log scale.
//  - Bins (Fig. 10): [0, 1] cut into ΣB_w equal bins; the blocks whose values fall in one bin form
//    one combined block, bins in order, inside a bin by model then block; a value of exactly 1
//    falls in the last bin. A bin of more than H blocks is a superblock: it runs with its
//    sub-blocks' own stages zipped (as sync's), and the reward marks it (Algorithm 1, line 9).
//  - Offsets (ours, `partition = kOffsets`): Fig. 10's bins make blocks with close values one
//    combined block, so an untrained actor (every value near 0.5) asks for one superblock, and
//    MADDPG drifted there (docs/top.md). Here each block has a home bin, the blocks of all models
//    in order of relative depth ((b + 0.5) / B_w, then by model), and its value moves it at most
//    kOffsetReach bins either way: 0.5 keeps every block alone, and blocks at about the same
//    depth of different models are the ones a small move combines.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "runtime/model_set.h"
#include "runtime/policy.h"

namespace braid::runtime {

enum class PartitionEncoding : uint8_t { kBins, kOffsets };
inline constexpr int kOffsetReach = 3;  // kOffsets: bins a block's value can move it either way
// "bins" or "offsets"; kInvalidArgument naming the known ones.
PartitionEncoding parse_partition_encoding(std::string_view name);
std::string_view partition_encoding_name(PartitionEncoding encoding);

struct ActionMapping {
  double min_interval_us = 500;                            // a⁰ = 0
  double max_interval_us = 1e6;                            // a⁰ = 1: the paper's 1 task/s
  PartitionEncoding partition = PartitionEncoding::kBins;  // Fig. 10
};

// a⁰ (one value per model, each clamped to [0, 1]) -> dequeue intervals, log-scale.
std::vector<double> intervals_from_action(std::span<const double> a0, const ActionMapping& mapping);
// The inverse, for tests and for seeding an agent with a known policy's intervals.
double action_from_interval(double interval_us, const ActionMapping& mapping);

// a¹..a^W (per model, one value per block, each clamped to [0, 1]) -> the block partition.
// kInvalidArgument when a model's vector is not one value per block.
std::vector<std::vector<SubBlock>> partition_from_actions(
    const ModelSet& models, std::span<const std::vector<double>> per_model,
    PartitionEncoding encoding = PartitionEncoding::kBins);

// A policy whose decisions are actions given from outside (an agent being trained, or a trained
// policy's outputs): intervals and partition as above; it admits every due model up to
// max_in_flight instances; its steps are the combined computation graph on the current progress
// (every combined block with a ready sub-block, in Ratio_in order, side by side), as
// top-heuristic's. Until the first set_actions: every interval the shortest, no block combined.
class ActionPolicy final : public Policy {
 public:
  ActionPolicy(const PolicyOptions& options, const ActionMapping& mapping);
  std::string_view name() const override { return "actions"; }
  void set_actions(const ModelSet& models, std::span<const double> launcher,
                   std::span<const std::vector<double>> per_model);
  // The largest combined block of the partition now (> H: a superblock).
  size_t largest_combined_block() const;

  Decision decide(const RuntimeState& state) override;
  std::vector<bool> admit(const RuntimeState& state, const std::vector<bool>& due) override;
  std::optional<Step> next_step(const RuntimeState& state) override;

 private:
  PolicyOptions options_;
  ActionMapping mapping_;
  Decision decision_;                             // what set_actions gave
  std::vector<std::vector<SubBlock>> partition_;  // in force (set by decide)
};

// The observation of one sample (one row of Eq. 1's state): per model the deviation of its
// remaining tasks from the mean over models, over (1 + the mean) so that it is scale-free; then
// per model and block the fraction of the model's in-flight instances waiting at that block
// (all 0 when none is in flight: the paper's progress, "1" where an instance is). Size
// W + ΣB_w.
std::vector<float> observe(const RuntimeState& state);
size_t observation_size(const ModelSet& models);

}  // namespace braid::runtime
