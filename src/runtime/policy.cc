#include "runtime/policy.h"

#include <algorithm>
#include <array>
#include <limits>
#include <string>

#include "base/error.h"
#include "runtime/learned_policy.h"

namespace braid::runtime {

// Factories, one per policy file.
std::unique_ptr<Policy> make_static_policy(const PolicyOptions& options, bool serial);
std::unique_ptr<Policy> make_sync_policy(const PolicyOptions& options);
std::unique_ptr<Policy> make_top_heuristic_policy(const PolicyOptions& options);

namespace {

std::unique_ptr<Policy> make_static(const PolicyOptions& o) {
  return make_static_policy(o, /*serial=*/false);
}
std::unique_ptr<Policy> make_static_serial(const PolicyOptions& o) {
  return make_static_policy(o, /*serial=*/true);
}

struct Entry {
  std::string_view name;
  std::unique_ptr<Policy> (*make)(const PolicyOptions&);
};

// Every built-in policy, in the order listings show them (learned:DIR is not a fixed name).
constexpr Entry kPolicies[] = {
    {"static", make_static},
    {"static-serial", make_static_serial},
    {"sync", make_sync_policy},
    {"top-heuristic", make_top_heuristic_policy},
};

constexpr auto kNames = [] {
  std::array<std::string_view, std::size(kPolicies)> names{};
  for (size_t i = 0; i < names.size(); ++i) names[i] = kPolicies[i].name;
  return names;
}();

}  // namespace

double RuntimeState::queue_variance() const {
  if (model.empty()) return 0;
  double mean = 0;
  auto backlog = [](const ModelState& m) { return double(m.queued + m.in_flight); };
  for (const ModelState& m : model) mean += backlog(m);
  mean /= double(model.size());
  double var = 0;
  for (const ModelState& m : model) var += (backlog(m) - mean) * (backlog(m) - mean);
  return var / double(model.size());
}

std::span<const std::string_view> policy_names() {
  return kNames;
}

std::unique_ptr<Policy> make_policy(std::string_view name, const PolicyOptions& options,
                                    const ModelSet* models) {
  BRAID_CHECK(options.max_sub_blocks >= 1, ErrorCode::kInvalidArgument,
              "H (max sub-blocks per combined block) must be >= 1, got ", options.max_sub_blocks);
  BRAID_CHECK(options.max_in_flight >= 1, ErrorCode::kInvalidArgument,
              "max in-flight instances must be >= 1");
  for (const Entry& e : kPolicies)
    if (e.name == name) return e.make(options);
  if (name.starts_with(kLearnedPrefix)) {
    const std::string_view dir = name.substr(kLearnedPrefix.size());
    BRAID_CHECK(!dir.empty(), ErrorCode::kInvalidArgument,
                "policy 'learned:' needs a directory: learned:DIR");
    return std::make_unique<LearnedPolicy>(std::filesystem::path(dir), options, models);
  }
  std::string known;
  for (std::string_view n : kNames) known += (known.empty() ? "" : ", ") + std::string(n);
  known += ", learned:DIR";
  BRAID_THROW(ErrorCode::kInvalidArgument, "unknown policy '", name, "' (known: ", known, ")");
}

std::vector<CombinedChoice> rank_combined_blocks(const RuntimeState& state,
                                                 std::span<const std::vector<SubBlock>> partition) {
  std::vector<std::pair<CombinedChoice, uint64_t>> ready;  // with its oldest ready task
  for (size_t c = 0; c < partition.size(); ++c) {
    CombinedChoice choice{.combined_block = c};
    uint64_t oldest = std::numeric_limits<uint64_t>::max();
    for (const SubBlock& sb : partition[c]) {
      // Instances are in admission order: the first waiting here is the oldest.
      for (const InstanceState& inst : state.instances) {
        if (inst.model != sb.model || inst.next_block != sb.block) continue;
        choice.pieces.push_back({inst.id, sb.model, sb.block, sb.block + 1});
        choice.ready.push_back(sb);
        oldest = std::min(oldest, inst.task);
        break;
      }
    }
    if (choice.pieces.empty()) continue;  // Ratio_in = 0 never runs
    choice.ratio_in = double(choice.pieces.size()) / double(partition[c].size());
    ready.emplace_back(std::move(choice), oldest);
  }
  std::stable_sort(ready.begin(), ready.end(), [](const auto& a, const auto& b) {
    return a.first.ratio_in != b.first.ratio_in ? a.first.ratio_in > b.first.ratio_in
                                                : a.second < b.second;
  });
  std::vector<CombinedChoice> out;
  for (auto& [choice, oldest] : ready) out.push_back(std::move(choice));
  return out;
}

std::optional<CombinedChoice> choose_combined_block(
    const RuntimeState& state, std::span<const std::vector<SubBlock>> partition) {
  std::vector<CombinedChoice> ranked = rank_combined_blocks(state, partition);
  if (ranked.empty()) return std::nullopt;
  return std::move(ranked.front());
}

std::optional<Step> combined_graph_step(const RuntimeState& state,
                                        std::span<const std::vector<SubBlock>> partition) {
  std::vector<CombinedChoice> ranked = rank_combined_blocks(state, partition);
  if (ranked.empty()) return std::nullopt;
  BRAID_CHECK(state.combiner != nullptr, ErrorCode::kInternal,
              "a combined step needs a stage dict");
  Step step{.kind = StepKind::kCombined};
  for (CombinedChoice& c : ranked) {
    step.pieces.insert(step.pieces.end(), c.pieces.begin(), c.pieces.end());
    step.schedules.push_back(&state.combiner->schedule(c.ready));
  }
  return step;
}

std::vector<std::vector<SubBlock>> singleton_partition(const ModelSet& models) {
  std::vector<std::vector<SubBlock>> out;
  for (size_t m = 0; m < models.size(); ++m)
    for (size_t b = 0; b < models.model(m).blocks.size(); ++b)
      out.push_back({SubBlock{uint32_t(m), uint32_t(b)}});
  return out;
}

}  // namespace braid::runtime
