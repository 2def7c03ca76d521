#include "runtime/gpg.h"

#include <algorithm>
#include <numeric>

#include "base/error.h"

namespace braid::runtime {
namespace {

using nlohmann::json;
using Stages = std::vector<std::vector<std::vector<UnitRef>>>;

}  // namespace

GpgScheduler::GpgScheduler(const std::filesystem::path& dir)
    : name_(std::string(kGpgPrefix) + dir.string()) {
  const std::string where = (dir / "policy.json").string();
  const json j = read_policy_manifest(dir, "gpg", "train one with `braid train gpg ... -o DIR`");
  const json& features = manifest_field(j, "features", json::value_t::array, where);
  const std::vector<std::string> ours = intra_feature_names();
  BRAID_CHECK(features == json(ours), ErrorCode::kInvalidArgument, where, ": trained on ",
              features.size(), " node features unlike this braid's ", ours.size(),
              " (retrain with this braid)");
  limits_ = {.group_size = static_cast<int>(manifest_size(j, "r", where)),
             .groups = static_cast<int>(manifest_size(j, "s", where))};
  message_ = manifest_size(j, "message_size", where);
  embedding_ = manifest_size(j, "embedding_size", where);
  const size_t batch = manifest_size(j, "batch", where);
  const json& networks = manifest_field(j, "networks", json::value_t::object, where);
  auto load = [&](const char* key, size_t in, size_t out) {
    return std::make_unique<PolicyNetwork>(manifest_file(networks, key, dir, where), in, out,
                                           batch);
  };
  g1_ = load("g1", kIntraFeatures, message_);
  h1_ = load("h1", message_, kIntraFeatures);
  g2_ = load("g2", kIntraFeatures, message_);
  h2_ = load("h2", message_, embedding_);
  policy_ = load("policy", embedding_ + kIntraFeatures + kCandidateExtras, 1);
}

GpgScheduler::~GpgScheduler() = default;

Stages GpgScheduler::schedule(const ModelSet& models, const StageCost& cost,
                              std::span<const SubBlock> combination) const {
  return schedule(intra_block(models, cost, combination));
}

Stages GpgScheduler::schedule(const IntraBlock& block) const {
  const size_t n = block.size(), f = kIntraFeatures;
  // Eq. 5, level by level: a node's level is one more than its deepest parent's.
  std::vector<size_t> level(n, 0);
  size_t levels = 0;
  for (size_t v = 0; v < n; ++v) {  // parents come first: nodes are in topological order
    for (uint32_t p : block.parents[v]) level[v] = std::max(level[v], level[p] + 1);
    levels = std::max(levels, level[v] + 1);
  }
  std::vector<float> e(block.features), g1(n * message_, 0.0f);
  for (size_t d = 0; d < levels; ++d) {
    std::vector<uint32_t> nodes;
    std::vector<float> sums;
    for (size_t v = 0; v < n; ++v) {
      if (level[v] != d) continue;
      nodes.push_back(static_cast<uint32_t>(v));
      std::vector<float> sum(message_, 0.0f);
      for (uint32_t p : block.parents[v])
        for (size_t i = 0; i < message_; ++i) sum[i] += g1[p * message_ + i];
      sums.insert(sums.end(), sum.begin(), sum.end());
    }
    const std::vector<float> h = h1_->apply(sums);
    std::vector<float> rows;
    for (size_t k = 0; k < nodes.size(); ++k) {
      for (size_t i = 0; i < f; ++i) e[nodes[k] * f + i] += h[k * f + i];
      rows.insert(rows.end(), e.begin() + nodes[k] * f, e.begin() + (nodes[k] + 1) * f);
    }
    const std::vector<float> m = g1_->apply(rows);
    for (size_t k = 0; k < nodes.size(); ++k)
      std::copy_n(m.begin() + k * message_, message_, g1.begin() + nodes[k] * message_);
  }
  const std::vector<float> g2 = g2_->apply(e);  // Eq. 6's messages: e is fixed from here on

  Stages stages;
  std::vector<sched::UnitMask> left = block.all();
  while (!IntraBlock::done(left)) {
    std::vector<float> sum(message_, 0.0f);
    for (uint32_t v : intra_leaves(block, left))
      for (size_t i = 0; i < message_; ++i) sum[i] += g2[v * message_ + i];
    const std::vector<float> z = h2_->apply(sum);
    const std::vector<std::vector<IntraCandidate>> candidates =
        intra_candidates(block, left, limits_);
    // Every ending of every sub-block, sub-block by sub-block.
    const size_t width = embedding_ + f + kCandidateExtras;
    std::vector<float> rows;
    auto add_row = [&](uint32_t k, sched::UnitMask ending) {
      const size_t at = rows.size();
      rows.insert(rows.end(), z.begin(), z.end());
      rows.resize(at + width, 0.0f);
      for (sched::UnitMask m = ending; m != 0; m &= m - 1) {
        const size_t v = block.offset[k] + static_cast<size_t>(std::countr_zero(m));
        for (size_t i = 0; i < f; ++i) rows[at + embedding_ + i] += e[v * f + i];
      }
      const auto extras = candidate_extras(block, k, ending, left[k]);
      std::copy(extras.begin(), extras.end(), rows.begin() + at + embedding_ + f);
    };
    for (uint32_t k = 0; k < candidates.size(); ++k)
      for (const IntraCandidate& c : candidates[k]) add_row(k, c.ending);
    const std::vector<float> q = policy_->apply(rows);
    // Each sub-block's best ending.
    struct Best {
      const IntraCandidate* candidate;
      float score;
    };
    std::vector<Best> best;
    size_t r = 0;
    for (const auto& of_block : candidates) {
      if (of_block.empty()) continue;
      const IntraCandidate* top = nullptr;
      float score = 0;
      for (const IntraCandidate& c : of_block) {
        if (top == nullptr || q[r] > score) top = &c, score = q[r];
        ++r;
      }
      best.push_back({top, score});
    }
    BRAID_ASSERT(!best.empty(), "a state with units left has an ending");
    std::stable_sort(best.begin(), best.end(),
                     [](const Best& a, const Best& b) { return a.score > b.score; });
    std::vector<IntraCandidate> picked{*best.front().candidate};
    int groups = best.front().candidate->groups;
    for (size_t k = 1; k < best.size(); ++k)
      if (groups + best[k].candidate->groups <= limits_.groups) {
        picked.push_back(*best[k].candidate);
        groups += best[k].candidate->groups;
      }
    std::sort(picked.begin(), picked.end(), [](const IntraCandidate& a, const IntraCandidate& b) {
      return a.sub_block < b.sub_block;
    });
    stages.push_back(intra_stage(block, picked));
    remove(block, picked, left);
  }
  std::reverse(stages.begin(), stages.end());
  return stages;
}

std::shared_ptr<const IntraScheduler> make_intra_scheduler(std::string_view name) {
  if (name == "dp") return nullptr;
  if (name.starts_with(kGpgPrefix)) {
    const std::string_view dir = name.substr(kGpgPrefix.size());
    BRAID_CHECK(!dir.empty(), ErrorCode::kInvalidArgument,
                "intra-block scheduler 'gpg:' needs a directory: gpg:DIR");
    return std::make_shared<GpgScheduler>(std::filesystem::path(dir));
  }
  BRAID_THROW(ErrorCode::kInvalidArgument, "unknown intra-block scheduler '", name,
              "'; known: dp, gpg:DIR");
}

}  // namespace braid::runtime
