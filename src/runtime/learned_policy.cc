#include "runtime/learned_policy.h"

#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "runtime/policy_files.h"

namespace braid::runtime {

struct LearnedPolicy::Actor {
  std::string name;
  size_t actions = 0;
  std::unique_ptr<PolicyNetwork> network;
};

using nlohmann::json;

LearnedPolicy::LearnedPolicy(const std::filesystem::path& dir, const PolicyOptions& options,
                             const ModelSet* models)
    : name_(std::string(kLearnedPrefix) + dir.string()), inner_(options, {}) {
  const std::string where = (dir / "policy.json").string();
  const json j =
      read_policy_manifest(dir, "maddpg", "train one with `braid train maddpg ... -o DIR`");

  // The models it was trained on, in order, against the runtime's.
  const json& trained = manifest_field(j, "models", json::value_t::array, where);
  std::vector<std::pair<std::string, size_t>> shape;
  std::string trained_names;
  for (const json& m : trained) {
    BRAID_CHECK(m.is_object(), ErrorCode::kInvalidArgument, where,
                ": \"models\" holds a non-object");
    shape.emplace_back(manifest_field(m, "name", json::value_t::string, where).get<std::string>(),
                       manifest_size(m, "blocks", where));
    trained_names += fmt::format("{}{} ({} blocks)", trained_names.empty() ? "" : ", ",
                                 shape.back().first, shape.back().second);
  }
  BRAID_CHECK(!shape.empty(), ErrorCode::kInvalidArgument, where, ": \"models\" is empty");
  const int h = int(manifest_size(j, "H", where));
  if (models != nullptr) {
    std::string given;
    for (size_t m = 0; m < models->size(); ++m)
      given += fmt::format("{}{} ({} blocks)", given.empty() ? "" : ", ", models->model(m).name,
                           models->model(m).blocks.size());
    bool same = models->size() == shape.size();
    for (size_t m = 0; same && m < shape.size(); ++m)
      same = models->model(m).name == shape[m].first &&
             models->model(m).blocks.size() == shape[m].second;
    BRAID_CHECK(same, ErrorCode::kInvalidArgument, "policy ", name_, " was trained on ",
                trained_names, "; this runtime serves ", given);
    BRAID_CHECK(options.max_sub_blocks == h, ErrorCode::kInvalidArgument, "policy ", name_,
                " was trained with H = ", h, "; this runtime has H = ", options.max_sub_blocks);
  }

  size_t blocks = 0;
  for (const auto& [name, b] : shape) blocks += b;
  row_size_ = shape.size() + blocks;  // observation_size(models): W + ΣB_w
  samples_ = manifest_size(j, "samples", where);
  const size_t state_size = manifest_size(j, "observation_size", where);
  BRAID_CHECK(state_size == samples_ * row_size_, ErrorCode::kInvalidArgument, where,
              ": observation_size ", state_size, " is not samples (", samples_,
              ") x (models + blocks) (", row_size_, ")");
  step_us_ = manifest_positive(j, "step_s", where) * 1e6;
  row_us_ = step_us_ / double(samples_);
  next_row_us_ = row_us_;
  ActionMapping mapping{.min_interval_us = manifest_positive(j, "min_interval_us", where),
                        .max_interval_us = manifest_positive(j, "max_interval_us", where)};
  // Optional: policies written before it have Fig. 10's bins.
  if (j.contains("partition")) {
    const auto name =
        manifest_field(j, "partition", json::value_t::string, where).get<std::string>();
    try {
      mapping.partition = parse_partition_encoding(name);
    } catch (const Error& e) {
      BRAID_THROW(ErrorCode::kInvalidArgument, where, ": \"partition\": ", e.what());
    }
  }
  PolicyOptions inner_options = options;
  inner_options.max_sub_blocks = h;
  inner_ = ActionPolicy(inner_options, mapping);

  // The actors: the launcher (one value per model), then one per model (one per block).
  const json& agents = manifest_field(j, "agents", json::value_t::array, where);
  BRAID_CHECK(agents.size() == shape.size() + 1, ErrorCode::kInvalidArgument, where, ": ",
              agents.size(), " agents for ", shape.size(),
              " models (the launcher, then one per model)");
  for (size_t a = 0; a < agents.size(); ++a) {
    const json& e = agents[a];
    BRAID_CHECK(e.is_object(), ErrorCode::kInvalidArgument, where,
                ": \"agents\" holds a non-object");
    Actor actor{.name = manifest_field(e, "name", json::value_t::string, where).get<std::string>(),
                .actions = manifest_size(e, "actions", where)};
    const size_t expected = a == 0 ? shape.size() : shape[a - 1].second;
    BRAID_CHECK(actor.actions == expected, ErrorCode::kInvalidArgument, where, ": agent ",
                actor.name, " has ", actor.actions, " actions, expected ", expected);
    actor.network = std::make_unique<PolicyNetwork>(manifest_file(e, "file", dir, where),
                                                    state_size, actor.actions);
    actors_.push_back(std::move(actor));
  }
}

LearnedPolicy::~LearnedPolicy() = default;

std::vector<std::vector<double>> LearnedPolicy::act(const std::vector<float>& state) const {
  BRAID_CHECK(state.size() == samples_ * row_size_, ErrorCode::kInvalidArgument, "policy ", name_,
              ": a state of ", state.size(), " values, expected ", samples_ * row_size_);
  std::vector<std::vector<double>> out;
  for (const Actor& a : actors_) {
    const std::vector<float> y = a.network->apply(state);
    out.emplace_back(y.begin(), y.end());
  }
  return out;
}

void LearnedPolicy::observe(const RuntimeState& state) {
  // One row per row period passed (a coarser sample period repeats the row it has).
  while (state.now_us + 1e-6 >= next_row_us_) {
    rows_.push_back(runtime::observe(state));
    next_row_us_ += row_us_;
  }
  while (rows_.size() > samples_) rows_.erase(rows_.begin());
}

Decision LearnedPolicy::decide(const RuntimeState& state) {
  BRAID_CHECK(state.models != nullptr && observation_size(*state.models) == row_size_,
              ErrorCode::kInvalidArgument, "policy ", name_, " observes rows of ", row_size_,
              " values; this runtime's models give ",
              state.models ? observation_size(*state.models) : 0);
  // Before `samples` rows exist (the run's start), the oldest stands for the rows before it, as
  // an episode's first state repeats its one row.
  std::vector<std::vector<float>> first;  // the run's start: its one row stands for all
  if (rows_.empty()) first.push_back(runtime::observe(state));
  const std::vector<std::vector<float>>& rows = rows_.empty() ? first : rows_;
  std::vector<float> x;
  const size_t missing = samples_ - std::min(samples_, rows.size());
  for (size_t k = 0; k < samples_; ++k) {
    const std::vector<float>& row = rows[k < missing ? 0 : k - missing];
    x.insert(x.end(), row.begin(), row.end());
  }
  std::vector<std::vector<double>> a = act(x);
  inner_.set_actions(*state.models, a[0], std::span(a).subspan(1));
  return inner_.decide(state);
}

std::vector<bool> LearnedPolicy::admit(const RuntimeState& state, const std::vector<bool>& due) {
  return inner_.admit(state, due);
}

std::optional<Step> LearnedPolicy::next_step(const RuntimeState& state) {
  return inner_.next_step(state);
}

}  // namespace braid::runtime
