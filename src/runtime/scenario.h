// Scenarios of TOP's evaluation (top.txt §VI-B): which models, at what rates, on which device,
// under which policies — from flags or a braid.top/1 file — loaded once and run per policy and
// seed. What `braid top` and the docs' tables run.
//
//   {"format": "braid.top/1", "device": "sim:a100_40gb", "duration_s": 30, "H": 4,
//    "policies": ["static", "sync", "top-heuristic"],
//    "models": [{"model": "inception_v3", "fps": 60},
//               {"model": "resnet50", "fps": 120, "blocks": "stages"},
//               {"model": "squeezenet", "fps": 240}]}
//
//   runtime::ScenarioRunner runner(runtime::parse_scenario(json, "multi.json"));
//   runtime::Report r = runner.run("top-heuristic", /*seed=*/1);
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/device.h"
#include "base/precision.h"
#include "models/input_shapes.h"
#include "runtime/arrivals.h"
#include "runtime/combined.h"
#include "runtime/model_set.h"
#include "runtime/runtime.h"
#include "tune/cost_models.h"

namespace braid::runtime {

struct ScenarioModel {
  std::string model;  // zoo name or .onnx file
  double fps = 0;
  BlockGrouping blocks = BlockGrouping::kIr;
  std::string name;   // its name in reports and requests; empty: the loader's (zoo name, file stem)
  int64_t batch = 0;  // its own batch; 0: the scenario's (a served model's config can set 1)
  // An ONNX model's dynamic input dims (--shape/--dim, a served model's config.pbtxt dims).
  models::InputShapes inputs;
};

struct Scenario {
  std::vector<ScenarioModel> models;
  // sim:NAME (virtual time), cpu or cuda:N (real; cuda:N replays each block range as a CUDA
  // Graph, each instance on its own streams)
  Device device = Device::simulated("a100_40gb");
  std::vector<std::string> policies = {"top-heuristic"};
  ArrivalKind arrivals = ArrivalKind::kPeriodic;
  double duration_s = 10;
  uint64_t seed = 1;
  bool drain = false;
  int max_sub_blocks = 4;  // H
  int64_t batch = 1;
  int64_t image_size = 224;  // top.txt §VI-B: 3x224x224 for all three models
  // Each model's own schedule (static, and the executors' plans), planned by tune::plan_model
  // as every front end plans.
  std::string scheduler = "ios";
  // The cost model of those plans and of the combined stages; empty: the planner's default for
  // the device (tune::default_cost_name). On the cpu and cuda:N the combined stages are then
  // priced by the roofline: a measured cost model would run stages inside the serving loop.
  std::optional<tune::CostName> cost;
  double variance_threshold = 16;
  double sample_period_s = 0.1;
  size_t queue_capacity = 0;
  size_t max_in_flight = 64;
  // The union DP's state cap for combined blocks (CombineOptions::dp_state_limit); 0: every
  // combination zipped, never searched (training explores many combinations: a miss then costs
  // a few stage prices, not a DP).
  int64_t dp_state_limit = 2000;
  // How combined blocks are scheduled inside: "dp" (IOS's DP within dp_state_limit, else zip) or
  // "gpg:DIR" (a GPG that `braid train gpg` wrote; runtime/gpg.h).
  std::string intra = "dp";
  // What the models compute in (base/precision.h): fp32 anywhere; tf32, fp16 or bf16 on cuda:N
  // (the executor's storage and math) and sim:NAME (the simulator's pricing). Plans and the
  // combined stages are priced in it.
  Precision precision = Precision::kFp32;
};

// Limits of a scenario's numbers besides the arrivals' (runtime/arrivals.h: FPS, duration and
// their task count): beyond them a scenario is a typo, or holds memory without bound.
inline constexpr int kMaxScenarioModels = 256;
inline constexpr int kMaxSubBlocksLimit = 64;            // H
inline constexpr int64_t kMaxScenarioBatch = 65536;      // as braid's --batch
inline constexpr int64_t kMaxScenarioImageSize = 16384;  // as braid's --image-size
inline constexpr size_t kMaxQueueCapacity = 1'000'000;   // per model; 0: unbounded
inline constexpr size_t kMaxInFlight = 100'000;          // instances of a model at once
inline constexpr double kMaxSamples = 1e6;               // duration_s / sample_period_s
inline constexpr int64_t kMaxDpStateLimit = 10'000'000;  // the union DP's states

// Throws kInvalidArgument, one sentence starting with `where` and naming the field and its flag,
// for a number beyond its limit. parse_scenario calls it, and so does ScenarioRunner before it
// loads anything, so a scenario from flags is held to the same limits as one from a file.
void validate(const Scenario& s, const std::string& where);

// Throws kInvalidArgument naming the field (and `where`) for a malformed scenario.
Scenario parse_scenario(const nlohmann::json& j, const std::string& where);
nlohmann::json to_json(const Scenario& s);

class ScenarioRunner {
 public:
  // Loads and schedules every model and prepares the backend (seconds: each model's own schedule
  // is searched under the cost model). Throws what loading, scheduling and preparing throw.
  explicit ScenarioRunner(Scenario scenario);
  ~ScenarioRunner();

  // One run of `policy` with the scenario's arrivals drawn from `seed`. The stage dict is shared
  // by every run of this runner.
  Report run(const std::string& policy, uint64_t seed,
             const std::function<void(RuntimeOptions&)>& adjust = {});

  const Scenario& scenario() const { return scenario_; }
  const ModelSet& models() const;
  CombinedScheduler& combiner();
  Backend& backend();
  // A policy as run() makes it (the scenario's H and in-flight cap); kNotFound listing the known.
  std::unique_ptr<Policy> make_policy(const std::string& name) const;
  // What run() gives the runtime: the scenario's H and in-flight cap, its options, and its
  // arrivals drawn from `seed`.
  PolicyOptions policy_options() const;
  RuntimeOptions runtime_options() const;
  std::vector<Arrival> arrivals(uint64_t seed) const;

 private:
  struct Impl;
  Scenario scenario_;
  std::unique_ptr<Impl> impl_;
};

nlohmann::json to_json(const Report& report);
// One markdown row per (report, model) and a total row per report.
std::string markdown_table(const std::vector<Report>& reports);

}  // namespace braid::runtime
