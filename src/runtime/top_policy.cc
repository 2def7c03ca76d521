// `top-heuristic`: TOP's runtime (top.txt §V-§VI) with the learned agents replaced by rules.
//  - Launcher (a⁰): model m dequeues at rate r_m = λ_m + q_m / 1 s (its arrival rate so far, plus
//    its backlog spread over a second), at most one instance waiting at block 0 (one instance
//    per sub-block, §VI-A). When the measured block latencies say the device cannot serve every
//    r_m (Σ r_m · B_m · block_us_m > 1 s per s), every rate is scaled down by the same factor.
//  - Partition (a¹..a^W): from singletons, greedily merge the two combined blocks with the
//    largest predicted saving — the stage cost of each alone minus their zipped stages, per
//    combination run, times how often the pair is ready together (the lower of the models'
//    arrival rates; 1 before any arrival) — while the merge has at most H sub-blocks and saves
//    time. Zipping prices a candidate in a few stage-cost queries; the chosen combinations are
//    then scheduled (searched) by the stage dict when they first run.
//  - Steps: the combined computation graph on the current progress (Algorithm 1, line 29):
//    every combined block with a ready sub-block runs its ready sub-blocks, the combined blocks
//    side by side, issued in Ratio_in order (rank_combined_blocks, §VI-A).
#include <algorithm>
#include <limits>
#include <map>
#include <memory>

#include "base/error.h"
#include "runtime/policy.h"

namespace braid::runtime {
namespace {

constexpr double kBacklogHorizonUs = 1e6;

class TopHeuristicPolicy final : public Policy {
 public:
  explicit TopHeuristicPolicy(const PolicyOptions& options) : options_(options) {}

  std::string_view name() const override { return "top-heuristic"; }

  Decision decide(const RuntimeState& state) override {
    BRAID_CHECK(state.combiner != nullptr, ErrorCode::kInternal,
                "top-heuristic needs a stage dict");
    Decision d;
    d.interval_us = intervals(state);
    d.partition = partition(state);
    partition_ = d.partition;
    return d;
  }

  std::vector<bool> admit(const RuntimeState& state, const std::vector<bool>& due) override {
    std::vector<bool> out(due.size(), false);
    for (size_t m = 0; m < due.size(); ++m) {
      if (!due[m]) continue;
      bool block0_busy = false;
      for (const InstanceState& inst : state.instances)
        block0_busy = block0_busy || (inst.model == m && inst.next_block == 0);
      out[m] = !block0_busy;
    }
    return out;
  }

  // Every combined block with a ready sub-block, in Ratio_in order, side by side.
  std::optional<Step> next_step(const RuntimeState& state) override {
    return combined_graph_step(state, partition_);
  }

 private:
  static std::vector<double> intervals(const RuntimeState& state) {
    const size_t n = state.model.size();
    std::vector<double> rate(n, 0.0);  // per µs
    double load = 0;                   // device µs per µs at those rates
    for (size_t m = 0; m < n; ++m) {
      const ModelState& s = state.model[m];
      rate[m] = s.arrival_rate_hz / 1e6 + double(s.queued) / kBacklogHorizonUs;
      load += rate[m] * double(state.models->model(m).blocks.size()) * s.block_us;
    }
    const double scale = load > 1 ? 1 / load : 1;
    std::vector<double> out(n, 0.0);
    for (size_t m = 0; m < n; ++m) out[m] = rate[m] > 0 ? 1 / (rate[m] * scale) : 0;
    return out;
  }

  // The zipped stages of a combination, priced: what a merge is predicted to cost per run.
  // Cached by combination: zip costs do not depend on the state, so a re-decision prices only
  // the pairs it has not met.
  double zip_cost(CombinedScheduler& dict, const std::vector<SubBlock>& subs) {
    if (auto it = zip_cache_.find(subs); it != zip_cache_.end()) return it->second;
    std::vector<const CombinedSchedule*> alone;
    for (const SubBlock& sb : subs) alone.push_back(&dict.single(sb));
    const double total = double(stages_cost(dict.cost(), zip_stages(alone)).count());
    zip_cache_.emplace(subs, total);
    return total;
  }

  std::vector<std::vector<SubBlock>> partition(const RuntimeState& state) {
    CombinedScheduler& dict = *state.combiner;
    std::vector<std::vector<SubBlock>> blocks = singleton_partition(*state.models);
    std::vector<double> cost;  // each combined block's predicted cost per run
    for (const auto& c : blocks) cost.push_back(zip_cost(dict, c));
    auto rate_of = [&](const std::vector<SubBlock>& c) {
      double r = std::numeric_limits<double>::infinity();
      for (const SubBlock& sb : c) r = std::min(r, state.model[sb.model].arrival_rate_hz);
      return r > 0 ? r : 1.0;
    };
    for (;;) {
      double best_gain = 0;
      size_t best_a = 0, best_b = 0;
      std::vector<SubBlock> best_union;
      double best_cost = 0;
      for (size_t a = 0; a < blocks.size(); ++a)
        for (size_t b = a + 1; b < blocks.size(); ++b) {
          if (blocks[a].size() + blocks[b].size() > size_t(options_.max_sub_blocks)) continue;
          std::vector<SubBlock> u = blocks[a];
          u.insert(u.end(), blocks[b].begin(), blocks[b].end());
          std::sort(u.begin(), u.end());
          const double merged = zip_cost(dict, u);
          const double gain = (cost[a] + cost[b] - merged) * rate_of(u);
          if (gain > best_gain) {
            best_gain = gain;
            best_a = a;
            best_b = b;
            best_union = std::move(u);
            best_cost = merged;
          }
        }
      if (best_gain <= 0) break;
      blocks[best_a] = std::move(best_union);
      cost[best_a] = best_cost;
      blocks.erase(blocks.begin() + std::ptrdiff_t(best_b));
      cost.erase(cost.begin() + std::ptrdiff_t(best_b));
    }
    return blocks;
  }

  PolicyOptions options_;
  std::vector<std::vector<SubBlock>> partition_;
  std::map<std::vector<SubBlock>, double> zip_cache_;
};

}  // namespace

std::unique_ptr<Policy> make_top_heuristic_policy(const PolicyOptions& options) {
  return std::make_unique<TopHeuristicPolicy>(options);
}

}  // namespace braid::runtime
