// braid._braid.TopEnv: TOP's training environment (runtime/env.h) for Python. The Python half
// (braid/env.py) gives it PettingZoo's parallel API; this layer only converts.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <memory>

#include "base/error.h"
#include "runtime/env.h"
#include "runtime/scenario.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace braid::python {
namespace {

class PyTopEnv {
 public:
  // `scenario_json`: a braid.top/1 scenario (runtime/scenario.h), as `braid top --scenario`.
  PyTopEnv(const std::string& scenario_json, double step_s, int samples, const std::string& reward,
           double min_interval_us, double max_interval_us) {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(scenario_json);
    } catch (const nlohmann::json::exception& e) {
      BRAID_THROW(ErrorCode::kInvalidArgument, "scenario: malformed JSON: ", e.what());
    }
    runtime::Scenario scenario = runtime::parse_scenario(j, "scenario");
    const runtime::EnvOptions options{
        .step_s = step_s,
        .samples = samples,
        .mapping = {.min_interval_us = min_interval_us, .max_interval_us = max_interval_us},
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

}  // namespace

void bind_env(nb::module_& m) {
  nb::class_<PyTopEnv>(m, "TopEnv")
      .def(nb::init<const std::string&, double, int, const std::string&, double, double>(),
           "scenario_json"_a, "step_s"_a, "samples"_a, "reward"_a, "min_interval_us"_a,
           "max_interval_us"_a)
      .def("models", &PyTopEnv::models)
      .def("observation_size", &PyTopEnv::observation_size)
      .def("action_sizes", &PyTopEnv::action_sizes)
      .def("max_sub_blocks", &PyTopEnv::max_sub_blocks)
      .def("reset", &PyTopEnv::reset, "seed"_a)
      .def("step", &PyTopEnv::step, "actions"_a)
      .def("finish", &PyTopEnv::finish);
}

}  // namespace braid::python
