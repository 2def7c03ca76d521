#include "runtime/intra_env.h"

#include <algorithm>

#include "base/error.h"

namespace braid::runtime {

IntraEnv::IntraEnv(CombinedScheduler& combiner, IntraEnvOptions options)
    : combiner_(&combiner), options_(options) {
  const ModelSet& models = combiner.models();
  for (uint32_t m = 0; m < models.size(); ++m)
    for (uint32_t b = 0; b < models.model(m).blocks.size(); ++b)
      if (models.model(m).blocks[b].units.size() <= sched::kMaxEndingUnits) pool_.push_back({m, b});
  BRAID_CHECK(options.min_sub_blocks >= 1 && options.min_sub_blocks <= options.max_sub_blocks &&
                  size_t(options.max_sub_blocks) <= pool_.size(),
              ErrorCode::kInvalidArgument, "intra env: sub-blocks per combination must lie in [1, ",
              pool_.size(), "] (the blocks of at most 64 units), got [", options.min_sub_blocks,
              ", ", options.max_sub_blocks, "]");
  BRAID_CHECK(options.limits.group_size >= 1 && options.limits.groups >= 1,
              ErrorCode::kInvalidArgument, "intra env: r and s must be >= 1");
}

void IntraEnv::reset(uint64_t seed) {
  std::mt19937_64 rng(seed);
  const int span = options_.max_sub_blocks - options_.min_sub_blocks + 1;
  const size_t k = size_t(options_.min_sub_blocks) + size_t(rng() % uint64_t(span));
  std::vector<SubBlock> pool = pool_;
  for (size_t i = 0; i < k; ++i) std::swap(pool[i], pool[i + rng() % (pool.size() - i)]);
  pool.resize(k);
  start(std::move(pool));
}

void IntraEnv::reset(std::vector<SubBlock> combination) {
  start(std::move(combination));
}

void IntraEnv::start(std::vector<SubBlock> combination) {
  std::sort(combination.begin(), combination.end());
  // The zip of the sub-blocks' own schedules, through the combiner (checks the combination).
  std::vector<const CombinedSchedule*> singles;
  for (const SubBlock& sb : combination) singles.push_back(&combiner_->single(sb));
  zip_us_ = stages_cost(combiner_->cost(), zip_stages(singles)).count();
  block_ = intra_block(combiner_->models(), combiner_->cost(), combination);
  left_ = block_.all();
  candidates_ = intra_candidates(block_, left_, options_.limits);
  chosen_.clear();
  started_ = true;
}

std::vector<std::vector<std::vector<UnitRef>>> IntraEnv::stages() const {
  return {chosen_.rbegin(), chosen_.rend()};
}

IntraStep IntraEnv::step(std::span<const int> choice) {
  BRAID_CHECK(started_ && !done(), ErrorCode::kInvalidArgument,
              "intra env: step before reset or after the episode is done");
  BRAID_CHECK(choice.size() == candidates_.size(), ErrorCode::kInvalidArgument,
              "intra env: a choice for ", choice.size(), " sub-blocks, the block has ",
              candidates_.size());
  std::vector<IntraCandidate> picked;
  int groups = 0;
  for (size_t k = 0; k < choice.size(); ++k) {
    if (choice[k] == -1) continue;
    BRAID_CHECK(choice[k] >= 0 && size_t(choice[k]) < candidates_[k].size(),
                ErrorCode::kInvalidArgument, "intra env: sub-block ", k, " has ",
                candidates_[k].size(), " endings, not one at ", choice[k]);
    picked.push_back(candidates_[k][size_t(choice[k])]);
    groups += picked.back().groups;
  }
  BRAID_CHECK(!picked.empty(), ErrorCode::kInvalidArgument, "intra env: a stage needs an ending");
  BRAID_CHECK(groups <= options_.limits.groups, ErrorCode::kInvalidArgument, "intra env: ", groups,
              " groups, more than s = ", options_.limits.groups);
  std::vector<std::vector<UnitRef>> stage = intra_stage(block_, picked);
  const double latency = combiner_->cost().stage(stage).count();
  remove(block_, picked, left_);
  chosen_.push_back(std::move(stage));
  candidates_ = intra_candidates(block_, left_, options_.limits);
  return {.reward = -latency / std::max(zip_us_, 1e-9), .latency_us = latency, .done = done()};
}

}  // namespace braid::runtime
