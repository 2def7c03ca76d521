#include "runtime/intra.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "base/error.h"

namespace braid::runtime {

std::vector<std::string> intra_feature_names() {
  std::vector<std::string> names = ir::unit_feature_names();
  names.push_back("log2_latency_us");
  return names;
}

std::vector<sched::UnitMask> IntraBlock::all() const {
  std::vector<sched::UnitMask> left;
  for (const sched::EndingGraph& g : edges)
    left.push_back(g.size() == 64 ? ~sched::UnitMask{0} : (sched::UnitMask{1} << g.size()) - 1);
  return left;
}

bool IntraBlock::done(std::span<const sched::UnitMask> left) {
  return std::all_of(left.begin(), left.end(), [](sched::UnitMask m) { return m == 0; });
}

IntraBlock intra_block(const ModelSet& models, const StageCost& cost,
                       std::span<const SubBlock> combination) {
  BRAID_CHECK(!combination.empty(), ErrorCode::kInvalidArgument,
              "intra-block: an empty combination");
  IntraBlock b;
  b.offset.push_back(0);
  for (size_t k = 0; k < combination.size(); ++k) {
    const SubBlock sb = combination[k];
    BRAID_CHECK(k == 0 || combination[k - 1] < sb, ErrorCode::kInvalidArgument,
                "intra-block: the combination must be sorted, without repeats");
    BRAID_CHECK(sb.model < models.size() && sb.block < models.model(sb.model).blocks.size(),
                ErrorCode::kInvalidArgument, "intra-block: no block ", sb.block, " of model ",
                sb.model);
    const RuntimeModel& model = models.model(sb.model);
    const std::vector<UnitId>& units = model.blocks[sb.block].units;
    BRAID_CHECK(units.size() <= sched::kMaxEndingUnits, ErrorCode::kInvalidArgument,
                "intra-block: block ", sb.block, " of ", model.name, " has ", units.size(),
                " units, more than ", sched::kMaxEndingUnits);
    b.sub_blocks.push_back(sb);
    b.edges.push_back(sched::ending_graph(model.units(), units));
    const uint32_t base = b.offset.back();
    for (size_t i = 0; i < units.size(); ++i) {
      b.units.push_back({sb.model, units[i]});
      auto& parents = b.parents.emplace_back();
      for (sched::UnitMask m = b.edges.back().pred[i]; m != 0; m &= m - 1)
        parents.push_back(base + static_cast<uint32_t>(std::countr_zero(m)));
      const std::vector<float> f = ir::unit_features(model.units(), units[i]);
      b.features.insert(b.features.end(), f.begin(), f.end());
      const double us = cost.unit(b.units.back()).count();
      b.latency_us.push_back(us);
      b.features.push_back(static_cast<float>(std::log2(1.0 + std::max(0.0, us)) / 16));
    }
    b.offset.push_back(base + static_cast<uint32_t>(units.size()));
  }
  return b;
}

std::vector<std::vector<IntraCandidate>> intra_candidates(const IntraBlock& block,
                                                          std::span<const sched::UnitMask> left,
                                                          const sched::EndingLimits& limits) {
  BRAID_CHECK(left.size() == block.sub_blocks.size(), ErrorCode::kInvalidArgument,
              "intra-block: a state of ", left.size(), " sub-blocks, the block has ",
              block.sub_blocks.size());
  std::vector<std::vector<IntraCandidate>> out(left.size());
  for (size_t k = 0; k < left.size(); ++k)
    sched::for_each_ending(block.edges[k], left[k], limits, [&](sched::UnitMask e, int groups) {
      out[k].push_back({static_cast<uint32_t>(k), e, groups});
    });
  return out;
}

std::vector<std::vector<UnitRef>> intra_stage(const IntraBlock& block,
                                              std::span<const IntraCandidate> picked) {
  std::vector<std::vector<UnitRef>> groups;
  for (const IntraCandidate& c : picked) {
    BRAID_CHECK(c.sub_block < block.sub_blocks.size(), ErrorCode::kInvalidArgument,
                "intra-block: no sub-block ", c.sub_block);
    for (sched::UnitMask g : sched::ending_groups(block.edges[c.sub_block], c.ending)) {
      auto& group = groups.emplace_back();
      for (sched::UnitMask m = g; m != 0; m &= m - 1)
        group.push_back(block.units[block.offset[c.sub_block] + std::countr_zero(m)]);
    }
  }
  return groups;
}

void remove(const IntraBlock& block, std::span<const IntraCandidate> picked,
            std::vector<sched::UnitMask>& left) {
  BRAID_CHECK(left.size() == block.sub_blocks.size(), ErrorCode::kInvalidArgument,
              "intra-block: a state of ", left.size(), " sub-blocks, the block has ",
              block.sub_blocks.size());
  for (const IntraCandidate& c : picked) {
    BRAID_CHECK(c.sub_block < left.size() && c.ending != 0 && (c.ending & ~left[c.sub_block]) == 0,
                ErrorCode::kInvalidArgument, "intra-block: an ending outside what is left");
    left[c.sub_block] &= ~c.ending;
  }
}

std::array<float, kCandidateExtras> candidate_extras(const IntraBlock& block, uint32_t sub_block,
                                                     sched::UnitMask ending, sched::UnitMask left) {
  BRAID_CHECK(sub_block < block.sub_blocks.size() && (ending & ~left) == 0,
              ErrorCode::kInvalidArgument, "intra-block: an ending outside what is left");
  const uint32_t base = block.offset[sub_block];
  auto sum = [&](sched::UnitMask set) {
    double us = 0;
    for (sched::UnitMask m = set; m != 0; m &= m - 1)
      us += block.latency_us[base + std::countr_zero(m)];
    return us;
  };
  auto scaled = [](double us) { return static_cast<float>(std::log2(1.0 + us) / 16); };
  std::array<float, kCandidateExtras> out{};
  if (ending != 0) {
    const std::vector<sched::UnitMask> groups =
        sched::ending_groups(block.edges[sub_block], ending);
    double slowest = 0;
    for (sched::UnitMask g : groups) slowest = std::max(slowest, sum(g));
    out[0] = static_cast<float>(std::popcount(ending)) / 4;
    out[1] = static_cast<float>(groups.size()) / 4;
    out[2] = scaled(slowest);
    out[3] = scaled(sum(ending));
  }
  out[4] = scaled(sum(left));
  return out;
}

std::vector<uint32_t> intra_leaves(const IntraBlock& block, std::span<const sched::UnitMask> left) {
  std::vector<uint32_t> leaves;
  for (size_t k = 0; k < left.size(); ++k)
    for (sched::UnitMask m = sched::sinks_of(block.edges[k], left[k]); m != 0; m &= m - 1)
      leaves.push_back(block.offset[k] + static_cast<uint32_t>(std::countr_zero(m)));
  return leaves;
}

}  // namespace braid::runtime
