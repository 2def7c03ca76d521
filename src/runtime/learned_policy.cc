#include "runtime/learned_policy.h"

#include <cmath>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "exec/ref/ref_executor.h"
#include "models/onnx_import.h"

namespace braid::runtime {

struct LearnedPolicy::Actor {
  std::string name;
  std::shared_ptr<const ir::Graph> graph;
  ir::Weights weights;
  size_t actions = 0;
};

namespace {

using nlohmann::json;

// A manifest field of the given JSON type, or kInvalidArgument naming it and the file.
const json& field(const json& j, const char* key, json::value_t type, const std::string& where) {
  auto it = j.find(key);
  BRAID_CHECK(it != j.end(), ErrorCode::kInvalidArgument, where, ": no \"", key, "\"");
  const bool number = type == json::value_t::number_float;
  BRAID_CHECK(number ? it->is_number() : it->type() == type, ErrorCode::kInvalidArgument, where,
              ": \"", key, "\" has the wrong type (", it->type_name(), ")");
  return *it;
}

size_t positive_size(const json& j, const char* key, const std::string& where) {
  const json& v = field(j, key, json::value_t::number_float, where);
  BRAID_CHECK(v.is_number_integer() && v.get<int64_t>() >= 1 && v.get<int64_t>() <= 1'000'000,
              ErrorCode::kInvalidArgument, where, ": \"", key,
              "\" must be an integer in [1, 1000000], got ", v.dump());
  return v.get<size_t>();
}

double positive_number(const json& j, const char* key, const std::string& where) {
  const double v = field(j, key, json::value_t::number_float, where).get<double>();
  BRAID_CHECK(std::isfinite(v) && v > 0, ErrorCode::kInvalidArgument, where, ": \"", key,
              "\" must be > 0, got ", v);
  return v;
}

}  // namespace

LearnedPolicy::LearnedPolicy(const std::filesystem::path& dir, const PolicyOptions& options,
                             const ModelSet* models)
    : name_(std::string(kLearnedPrefix) + dir.string()), inner_(options, {}) {
  const std::filesystem::path manifest_path = dir / "policy.json";
  const std::string where = manifest_path.string();
  std::ifstream in(manifest_path);
  BRAID_CHECK(in.good(), ErrorCode::kNotFound, "policy ", name_, ": no ", where,
              " (train one with `braid train maddpg ... -o DIR`)");
  json j;
  try {
    j = json::parse(in);
  } catch (const json::exception& e) {
    BRAID_THROW(ErrorCode::kInvalidArgument, where, ": malformed JSON: ", e.what());
  }
  BRAID_CHECK(j.is_object() && j.value("format", "") == "braid.policy/1",
              ErrorCode::kInvalidArgument, where, ": not a braid.policy/1 manifest");
  const std::string kind = field(j, "kind", json::value_t::string, where).get<std::string>();
  BRAID_CHECK(kind == "maddpg", ErrorCode::kInvalidArgument, where, ": kind \"", kind,
              "\" cannot run as a runtime policy (maddpg can)");

  // The models it was trained on, in order, against the runtime's.
  const json& trained = field(j, "models", json::value_t::array, where);
  std::vector<std::pair<std::string, size_t>> shape;
  std::string trained_names;
  for (const json& m : trained) {
    BRAID_CHECK(m.is_object(), ErrorCode::kInvalidArgument, where,
                ": \"models\" holds a non-object");
    shape.emplace_back(field(m, "name", json::value_t::string, where).get<std::string>(),
                       positive_size(m, "blocks", where));
    trained_names += fmt::format("{}{} ({} blocks)", trained_names.empty() ? "" : ", ",
                                 shape.back().first, shape.back().second);
  }
  BRAID_CHECK(!shape.empty(), ErrorCode::kInvalidArgument, where, ": \"models\" is empty");
  const int h = int(positive_size(j, "H", where));
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
  samples_ = positive_size(j, "samples", where);
  const size_t state_size = positive_size(j, "observation_size", where);
  BRAID_CHECK(state_size == samples_ * row_size_, ErrorCode::kInvalidArgument, where,
              ": observation_size ", state_size, " is not samples (", samples_,
              ") x (models + blocks) (", row_size_, ")");
  step_us_ = positive_number(j, "step_s", where) * 1e6;
  row_us_ = step_us_ / double(samples_);
  next_row_us_ = row_us_;
  const ActionMapping mapping{.min_interval_us = positive_number(j, "min_interval_us", where),
                              .max_interval_us = positive_number(j, "max_interval_us", where)};
  PolicyOptions inner_options = options;
  inner_options.max_sub_blocks = h;
  inner_ = ActionPolicy(inner_options, mapping);

  // The actors: the launcher (one value per model), then one per model (one per block).
  const json& agents = field(j, "agents", json::value_t::array, where);
  BRAID_CHECK(agents.size() == shape.size() + 1, ErrorCode::kInvalidArgument, where, ": ",
              agents.size(), " agents for ", shape.size(),
              " models (the launcher, then one per model)");
  for (size_t a = 0; a < agents.size(); ++a) {
    const json& e = agents[a];
    BRAID_CHECK(e.is_object(), ErrorCode::kInvalidArgument, where,
                ": \"agents\" holds a non-object");
    const std::string file = field(e, "file", json::value_t::string, where).get<std::string>();
    BRAID_CHECK(std::filesystem::path(file).filename() == file, ErrorCode::kInvalidArgument, where,
                ": agent file '", file, "' must be a file name inside the policy's directory");
    Actor actor{.name = field(e, "name", json::value_t::string, where).get<std::string>(),
                .actions = positive_size(e, "actions", where)};
    const size_t expected = a == 0 ? shape.size() : shape[a - 1].second;
    BRAID_CHECK(actor.actions == expected, ErrorCode::kInvalidArgument, where, ": agent ",
                actor.name, " has ", actor.actions, " actions, expected ", expected);
    models::ImportedModel model = models::import_onnx_file((dir / file).string());
    const ir::Graph& g = *model.graph;
    const std::string at = (dir / file).string();
    BRAID_CHECK(g.inputs().size() == 1 && g.outputs().size() == 1, ErrorCode::kInvalidArgument, at,
                ": an actor has one input and one output, this has ", g.inputs().size(), " and ",
                g.outputs().size());
    BRAID_CHECK(size_t(g.value(g.inputs()[0]).type.elements()) == state_size,
                ErrorCode::kInvalidArgument, at, ": input of ",
                g.value(g.inputs()[0]).type.elements(), " values, the state has ", state_size);
    BRAID_CHECK(size_t(g.value(g.outputs()[0]).type.elements()) == actor.actions,
                ErrorCode::kInvalidArgument, at, ": output of ",
                g.value(g.outputs()[0]).type.elements(), " values, agent ", actor.name, " has ",
                actor.actions);
    actor.graph = std::move(model.graph);
    actor.weights = std::move(model.weights);
    actors_.push_back(std::move(actor));
  }
}

LearnedPolicy::~LearnedPolicy() = default;

std::vector<std::vector<double>> LearnedPolicy::act(const std::vector<float>& state) const {
  BRAID_CHECK(state.size() == samples_ * row_size_, ErrorCode::kInvalidArgument, "policy ", name_,
              ": a state of ", state.size(), " values, expected ", samples_ * row_size_);
  std::vector<std::vector<double>> out;
  const std::vector<std::vector<float>> inputs = {state};
  for (const Actor& a : actors_) {
    std::vector<std::vector<float>> y = exec::ref::run_reference(*a.graph, a.weights, inputs);
    out.emplace_back(y[0].begin(), y[0].end());
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
