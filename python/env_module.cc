// braid._braid.TopEnv: TOP's training environment (runtime/env.h) for Python. The Python half
// (braid/env.py) gives it PettingZoo's parallel API; this layer only converts.
#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <memory>

#include <chrono>
#include <map>
#include "base/error.h"

#include "runtime/env.h"
#include "runtime/gpg.h"
#include "runtime/intra_env.h"
#include "runtime/scenario.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace braid::python {
namespace {

runtime::Scenario parse_scenario_text(const std::string& scenario_json) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(scenario_json);
  } catch (const nlohmann::json::exception& e) {
    BRAID_THROW(ErrorCode::kInvalidArgument, "scenario: malformed JSON: ", e.what());
  }
  return runtime::parse_scenario(j, "scenario");
}

class PyTopEnv {
 public:
  // `scenario_json`: a braid.top/1 scenario (runtime/scenario.h), as `braid top --scenario`.
  PyTopEnv(const std::string& scenario_json, double step_s, int samples, const std::string& reward,
           double min_interval_us, double max_interval_us, const std::string& partition) {
    runtime::Scenario scenario = parse_scenario_text(scenario_json);
    const runtime::EnvOptions options{
        .step_s = step_s,
        .samples = samples,
        .mapping = {.min_interval_us = min_interval_us,
                    .max_interval_us = max_interval_us,
                    .partition = runtime::parse_partition_encoding(partition)},
        .reward = runtime::parse_reward_kind(reward)};
    nb::gil_scoped_release release;
    runner_ = std::make_unique<runtime::ScenarioRunner>(std::move(scenario));
    env_ = std::make_unique<runtime::TopEnv>(*runner_, options);
  }

  std::vector<std::string> models() const {
    std::vector<std::string> names;
    for (size_t m = 0; m < runner_->models().size(); ++m)
      names.push_back(runner_->models().model(m).name);
    return names;
  }
  size_t observation_size() const { return env_->observation_size(); }
  std::vector<size_t> action_sizes() const { return env_->action_sizes(); }
  int max_sub_blocks() const { return runner_->policy_options().max_sub_blocks; }

  std::vector<float> reset(uint64_t seed) {
    nb::gil_scoped_release release;
    return env_->reset(seed);
  }

  // (observation, rewards, done, info): info as a dict of plain values.
  std::tuple<std::vector<float>, std::vector<double>, bool, nb::dict> step(
      const std::vector<std::vector<double>>& actions) {
    runtime::EnvStep s;
    {
      nb::gil_scoped_release release;
      s = env_->step(actions);
    }
    nb::dict info;
    info["superblock"] = s.superblock;
    info["utilization"] = s.utilization;
    info["variance"] = s.variance;
    info["latency_ms"] = nb::cast(s.latency_ms);
    info["completed"] = nb::cast(s.completed);
    return {std::move(s.observation), std::move(s.rewards), s.done, info};
  }

  // The episode's report, as `braid top --json` writes one.
  std::string finish() {
    runtime::Report r;
    {
      nb::gil_scoped_release release;
      r = env_->finish();
    }
    return runtime::to_json(r).dump();
  }

 private:
  std::unique_ptr<runtime::ScenarioRunner> runner_;
  std::unique_ptr<runtime::TopEnv> env_;
};

using Stages = std::vector<std::vector<std::vector<runtime::UnitRef>>>;

// Stages as lists of groups of (model, unit) pairs.
std::vector<std::vector<std::vector<std::pair<uint32_t, uint32_t>>>> plain(const Stages& stages) {
  std::vector<std::vector<std::vector<std::pair<uint32_t, uint32_t>>>> out;
  for (const auto& stage : stages) {
    auto& groups = out.emplace_back();
    for (const auto& group : stage) {
      auto& g = groups.emplace_back();
      for (const runtime::UnitRef& u : group) g.emplace_back(u.model, index(u.unit));
    }
  }
  return out;
}

class PyIntraEnv {
 public:
  PyIntraEnv(const std::string& scenario_json, int min_sub_blocks, int max_sub_blocks, int r,
             int s) {
    runtime::Scenario scenario = parse_scenario_text(scenario_json);
    nb::gil_scoped_release release;
    runner_ = std::make_unique<runtime::ScenarioRunner>(std::move(scenario));
    env_ = std::make_unique<runtime::IntraEnv>(
        runner_->combiner(), runtime::IntraEnvOptions{.min_sub_blocks = min_sub_blocks,
                                                      .max_sub_blocks = max_sub_blocks,
                                                      .limits = {.group_size = r, .groups = s}});
  }

  std::vector<std::string> models() const {
    std::vector<std::string> names;
    for (size_t m = 0; m < runner_->models().size(); ++m)
      names.push_back(runner_->models().model(m).name);
    return names;
  }
  std::vector<size_t> blocks() const {
    std::vector<size_t> out;
    for (size_t m = 0; m < runner_->models().size(); ++m)
      out.push_back(runner_->models().model(m).blocks.size());
    return out;
  }
  void reset(uint64_t seed) {
    nb::gil_scoped_release release;
    env_->reset(seed);
  }
  void reset_to(const std::vector<std::pair<uint32_t, uint32_t>>& combination) {
    std::vector<runtime::SubBlock> c;
    for (const auto& [m, b] : combination) c.push_back({m, b});
    nb::gil_scoped_release release;
    env_->reset(std::move(c));
  }
  std::vector<std::pair<uint32_t, uint32_t>> combination() const {
    std::vector<std::pair<uint32_t, uint32_t>> out;
    for (const runtime::SubBlock& sb : env_->block().sub_blocks)
      out.emplace_back(sb.model, sb.block);
    return out;
  }
  const std::vector<float>& features() const { return env_->block().features; }
  const std::vector<std::vector<uint32_t>>& parents() const { return env_->block().parents; }
  const std::vector<uint32_t>& offsets() const { return env_->block().offset; }
  std::vector<uint32_t> leaves() const {
    return runtime::intra_leaves(env_->block(), env_->left());
  }
  bool done() const { return env_->done(); }
  // Per node, 1 while it is left to schedule.
  std::vector<uint8_t> left_nodes() const {
    const runtime::IntraBlock& b = env_->block();
    std::vector<uint8_t> out(b.size(), 0);
    for (size_t k = 0; k < b.sub_blocks.size(); ++k)
      for (sched::UnitMask m = env_->left()[k]; m != 0; m &= m - 1)
        out[b.offset[k] + std::countr_zero(m)] = 1;
    return out;
  }
  double zip_us() const { return env_->zip_us(); }
  // Per sub-block, its endings: (nodes, groups, candidate_extras); runtime/intra.h.
  using Candidate = std::tuple<std::vector<uint32_t>, int, std::vector<float>>;
  std::vector<std::vector<Candidate>> candidates() const {
    std::vector<std::vector<Candidate>> out;
    const runtime::IntraBlock& b = env_->block();
    for (uint32_t k = 0; k < env_->candidates().size(); ++k) {
      auto& list = out.emplace_back();
      for (const runtime::IntraCandidate& c : env_->candidates()[k]) {
        std::vector<uint32_t> nodes;
        for (sched::UnitMask m = c.ending; m != 0; m &= m - 1)
          nodes.push_back(b.offset[k] + std::countr_zero(m));
        const auto extras = runtime::candidate_extras(b, k, c.ending, env_->left()[k]);
        list.emplace_back(std::move(nodes), c.groups,
                          std::vector<float>(extras.begin(), extras.end()));
      }
    }
    return out;
  }

  // (reward, the stage's latency in µs, done)
  std::tuple<double, double, bool> step(const std::vector<int>& choice) {
    runtime::IntraStep r;
    {
      nb::gil_scoped_release release;
      r = env_->step(choice);
    }
    return {r.reward, r.latency_us, r.done};
  }
  auto stages() const { return plain(env_->stages()); }

  // IOS's DP over the current combination's union: (latency µs, seconds, states, stages).
  std::tuple<double, double, int64_t, nb::object> dp() const {
    runtime::UnionDp dp;
    double seconds = 0, latency = 0;
    {
      nb::gil_scoped_release release;
      runtime::CombineOptions o = runner_->combiner().options();
      o.max_group_size = env_->options().limits.group_size;
      o.max_groups = env_->options().limits.groups;
      const auto start = std::chrono::steady_clock::now();
      dp = runtime::union_dp(runner_->models(), runner_->combiner().cost(), o,
                             env_->block().sub_blocks);
      seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      latency = runtime::stages_cost(runner_->combiner().cost(), dp.stages).count();
    }
    return {latency, seconds, dp.states, nb::cast(plain(dp.stages))};
  }

  // The trained GPG in DIR (loaded once) on the current combination, checked:
  // (latency µs, seconds, stages).
  std::tuple<double, double, nb::object> gpg(const std::string& dir) {
    auto& gpg = gpg_[dir];
    Stages stages;
    double seconds = 0, latency = 0;
    {
      nb::gil_scoped_release release;
      if (gpg == nullptr) gpg = std::make_unique<runtime::GpgScheduler>(dir);
      const auto start = std::chrono::steady_clock::now();  // its inputs' assembly included
      stages =
          gpg->schedule(runner_->models(), runner_->combiner().cost(), env_->block().sub_blocks);
      seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      runtime::CombinedSchedule s{.sub_blocks = env_->block().sub_blocks, .stages = stages};
      runtime::check_combined_schedule(runner_->models(), s);
      latency = runtime::stages_cost(runner_->combiner().cost(), stages).count();
    }
    return {latency, seconds, nb::cast(plain(stages))};
  }

 private:
  std::unique_ptr<runtime::ScenarioRunner> runner_;
  std::unique_ptr<runtime::IntraEnv> env_;
  std::map<std::string, std::unique_ptr<runtime::GpgScheduler>> gpg_;
};

}  // namespace

void bind_env(nb::module_& m) {
  m.def("intra_feature_names", &runtime::intra_feature_names);
  nb::class_<PyIntraEnv>(m, "IntraEnv")
      .def(nb::init<const std::string&, int, int, int, int>(), "scenario_json"_a,
           "min_sub_blocks"_a, "max_sub_blocks"_a, "r"_a, "s"_a)
      .def("models", &PyIntraEnv::models)
      .def("blocks", &PyIntraEnv::blocks)
      .def("reset", &PyIntraEnv::reset, "seed"_a)
      .def("reset_to", &PyIntraEnv::reset_to, "combination"_a)
      .def("combination", &PyIntraEnv::combination)
      .def("features", &PyIntraEnv::features)
      .def("parents", &PyIntraEnv::parents)
      .def("offsets", &PyIntraEnv::offsets)
      .def("leaves", &PyIntraEnv::leaves)
      .def("candidates", &PyIntraEnv::candidates)
      .def("done", &PyIntraEnv::done)
      .def("left_nodes", &PyIntraEnv::left_nodes)
      .def("zip_us", &PyIntraEnv::zip_us)
      .def("step", &PyIntraEnv::step, "choice"_a)
      .def("stages", &PyIntraEnv::stages)
      .def("dp", &PyIntraEnv::dp)
      .def("gpg", &PyIntraEnv::gpg, "dir"_a);
  nb::class_<PyTopEnv>(m, "TopEnv")
      .def(nb::init<const std::string&, double, int, const std::string&, double, double,
                    const std::string&>(),
           "scenario_json"_a, "step_s"_a, "samples"_a, "reward"_a, "min_interval_us"_a,
           "max_interval_us"_a, "partition"_a = "bins")
      .def("models", &PyTopEnv::models)
      .def("observation_size", &PyTopEnv::observation_size)
      .def("action_sizes", &PyTopEnv::action_sizes)
      .def("max_sub_blocks", &PyTopEnv::max_sub_blocks)
      .def("reset", &PyTopEnv::reset, "seed"_a)
      .def("step", &PyTopEnv::step, "actions"_a)
      .def("finish", &PyTopEnv::finish);
}

}  // namespace braid::python
