// A combined block as a learned intra-block scheduler sees it (top.txt §V-C, Fig. 11-12): its
// units with GPG's node features, each unit's parents, and, per sub-block, the pruned endings of
// what is left to schedule. A stage of the combination is one ending (or none) of each sub-block:
// the sub-blocks share no edge (combined.h), so every ending of the union is such a choice.
//
//   runtime::IntraBlock b = runtime::intra_block(models, cost, {{0, 3}, {1, 0}});
//   std::vector<sched::UnitMask> left = b.all();
//   while (!b.done(left)) {
//     auto candidates = runtime::intra_candidates(b, left, {.group_size = 3, .groups = 8});
//     ... pick at most one candidate per sub-block, at most s groups in all ...
//     stages.push_back(runtime::intra_stage(b, picked));   // the last stage first
//     runtime::remove(b, picked, left);
//   }
//
// Endings are chosen from the end (IOS's recursion): the first stage chosen runs last.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ir/features.h"
#include "runtime/combined.h"
#include "sched/endings.h"

namespace braid::runtime {

// A unit's features: ir::unit_features, then log2(1 + its latency in µs under the stage cost) / 16.
inline constexpr size_t kIntraFeatures = ir::kUnitFeatures + 1;
// Their names, in order: what a trained policy records.
std::vector<std::string> intra_feature_names();

struct IntraBlock {
  std::vector<SubBlock> sub_blocks;  // sorted
  std::vector<UnitRef> units;        // node i; sub-block k's are nodes [offset[k], offset[k+1])
  std::vector<uint32_t> offset;      // sub_blocks.size() + 1 entries
  std::vector<std::vector<uint32_t>> parents;  // per node, its parents (nodes of its sub-block)
  std::vector<sched::EndingGraph> edges;       // per sub-block, bit i = node offset[k] + i
  std::vector<float> features;                 // nodes × kIntraFeatures, row by row
  std::vector<double> latency_us;              // per node, alone

  size_t size() const { return units.size(); }
  // Every sub-block's units: the state before the first choice.
  std::vector<sched::UnitMask> all() const;
  static bool done(std::span<const sched::UnitMask> left);
};

// kInvalidArgument for an unsorted combination, one with a repeated sub-block, or a sub-block of
// more than 64 units.
IntraBlock intra_block(const ModelSet& models, const StageCost& cost,
                       std::span<const SubBlock> combination);

struct IntraCandidate {
  uint32_t sub_block = 0;  // index into IntraBlock::sub_blocks
  sched::UnitMask ending;  // local to the sub-block
  int groups = 0;
};

// Per sub-block, the pruned endings of its units still in `left` (empty once it is done), in
// sched::for_each_ending's order.
std::vector<std::vector<IntraCandidate>> intra_candidates(const IntraBlock& block,
                                                          std::span<const sched::UnitMask> left,
                                                          const sched::EndingLimits& limits);

// The stage of some candidates (at most one per sub-block): their groups, in sub-block order.
std::vector<std::vector<UnitRef>> intra_stage(const IntraBlock& block,
                                              std::span<const IntraCandidate> picked);
// Takes the picked endings out of `left`. kInvalidArgument for a candidate not within it.
void remove(const IntraBlock& block, std::span<const IntraCandidate> picked,
            std::vector<sched::UnitMask>& left);

// What a scorer sees of an ending of sub-block k besides its units' embeddings: its units and
// groups (/ 4), and as log2(1 + µs) / 16 the latency of its slowest group, of all its units, and
// of every unit the sub-block has left (the ending's included). `ending` 0 is none: only the last.
inline constexpr size_t kCandidateExtras = 5;
std::array<float, kCandidateExtras> candidate_extras(const IntraBlock& block, uint32_t sub_block,
                                                     sched::UnitMask ending, sched::UnitMask left);

// The nodes that have no successor among what is left (Eq. 6's leaves), ascending.
std::vector<uint32_t> intra_leaves(const IntraBlock& block, std::span<const sched::UnitMask> left);

}  // namespace braid::runtime
