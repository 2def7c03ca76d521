#include "runtime/scenario.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "base/json_value.h"
#include "base/parse.h"
#include "exec/cuda/cuda_executor.h"
#include "runtime/exec_backend.h"
#include "runtime/gpg.h"
#include "runtime/sim_backend.h"
#include "sched/registry.h"
#include "sim/device_spec.h"
#include "tune/cost_models.h"
#include "tune/measure.h"
#include "tune/planner.h"

namespace braid::runtime {
namespace {

BlockGrouping parse_grouping(const std::string& s, const std::string& where) {
  if (s == "ir") return BlockGrouping::kIr;
  if (s == "stages") return BlockGrouping::kStages;
  BRAID_THROW(ErrorCode::kInvalidArgument, where, ": blocks must be \"ir\" or \"stages\", got \"",
              s, "\"");
}

template <class T>
T field(const nlohmann::json& j, const char* name, T fallback, const std::string& where) {
  if (!j.contains(name)) return fallback;
  return json_value<T>(j.at(name), where, name);
}

// A text field parsed into its typed value; the parser's error names the scenario and field.
template <class F>
auto parsed_field(const nlohmann::json& j, const char* name, const std::string& where, F parse) {
  const std::string text = field<std::string>(j, name, "", where);
  try {
    return parse(text);
  } catch (const Error& e) {
    BRAID_THROW(e.code(), where, ": field \"", name, "\": ", e.what());
  }
}

}  // namespace

Scenario parse_scenario(const nlohmann::json& j, const std::string& where) {
  BRAID_CHECK(j.is_object(), ErrorCode::kInvalidArgument, where, ": a scenario is a JSON object");
  BRAID_CHECK(field<std::string>(j, "format", "braid.top/1", where) == "braid.top/1",
              ErrorCode::kInvalidArgument, where, ": format must be \"braid.top/1\"");
  static const char* kKnown[] = {"format",
                                 "device",
                                 "policies",
                                 "arrivals",
                                 "duration_s",
                                 "seed",
                                 "drain",
                                 "H",
                                 "batch",
                                 "image_size",
                                 "scheduler",
                                 "cost",
                                 "variance_threshold",
                                 "sample_period_s",
                                 "queue_capacity",
                                 "max_in_flight",
                                 "dp_state_limit",
                                 "intra",
                                 "precision",
                                 "models"};
  for (const auto& [key, value] : j.items()) {
    bool known = false;
    for (const char* k : kKnown) known = known || key == k;
    BRAID_CHECK(known, ErrorCode::kInvalidArgument, where, ": unknown field \"", key, "\"");
  }
  Scenario s;
  if (j.contains("device")) s.device = parsed_field(j, "device", where, parse_device);
  s.policies = field(j, "policies", s.policies, where);
  const std::string arrivals = field<std::string>(j, "arrivals", "periodic", where);
  BRAID_CHECK(arrivals == "periodic" || arrivals == "poisson", ErrorCode::kInvalidArgument, where,
              ": arrivals must be \"periodic\" or \"poisson\"");
  s.arrivals = arrivals == "poisson" ? ArrivalKind::kPoisson : ArrivalKind::kPeriodic;
  s.duration_s = field(j, "duration_s", s.duration_s, where);
  s.seed = field(j, "seed", s.seed, where);
  s.drain = field(j, "drain", s.drain, where);
  s.max_sub_blocks = field(j, "H", s.max_sub_blocks, where);
  s.batch = field(j, "batch", s.batch, where);
  s.image_size = field(j, "image_size", s.image_size, where);
  s.scheduler = field(j, "scheduler", s.scheduler, where);
  if (j.contains("cost")) s.cost = parsed_field(j, "cost", where, tune::parse_cost_option);
  s.variance_threshold = field(j, "variance_threshold", s.variance_threshold, where);
  s.sample_period_s = field(j, "sample_period_s", s.sample_period_s, where);
  s.queue_capacity = field(j, "queue_capacity", s.queue_capacity, where);
  s.max_in_flight = field(j, "max_in_flight", s.max_in_flight, where);
  s.dp_state_limit = field(j, "dp_state_limit", s.dp_state_limit, where);
  s.intra = field(j, "intra", s.intra, where);
  if (j.contains("precision")) s.precision = parsed_field(j, "precision", where, parse_precision);
  BRAID_CHECK(j.contains("models") && j.at("models").is_array() && !j.at("models").empty(),
              ErrorCode::kInvalidArgument, where, ": \"models\" must be a non-empty array");
  for (size_t i = 0; i < j.at("models").size(); ++i) {
    const nlohmann::json& m = j.at("models")[i];
    const std::string at = fmt::format("{}: models[{}]", where, i);
    BRAID_CHECK(m.is_object() && m.contains("model"), ErrorCode::kInvalidArgument, at,
                ": needs \"model\"");
    s.models.push_back({.model = field<std::string>(m, "model", "", at),
                        .fps = field(m, "fps", 0.0, at),
                        .blocks = parse_grouping(field<std::string>(m, "blocks", "ir", at), at)});
  }
  validate(s, where);
  return s;
}

void validate(const Scenario& s, const std::string& where) {
  BRAID_CHECK(s.duration_s > 0, ErrorCode::kInvalidArgument, where,
              ": duration_s (--duration) must be > 0");
  BRAID_CHECK(s.models.size() <= size_t(kMaxScenarioModels), ErrorCode::kInvalidArgument, where,
              ": ", s.models.size(), " models are more than the limit of ", kMaxScenarioModels);
  check_in_range(s.duration_s, 0, kMaxDurationS, "duration_s (--duration)", where);
  double tasks = 0;
  for (size_t i = 0; i < s.models.size(); ++i) {
    const ScenarioModel& m = s.models[i];
    const std::string at = fmt::format("{}: models[{}] ('{}')", where, i, m.model);
    check_in_range(m.fps, 0, kMaxFps, "fps (--model NAME:FPS)", at);
    check_int_in_range(m.batch, 0, kMaxScenarioBatch, "batch (0: the scenario's)", at);
    tasks += m.fps * s.duration_s;
  }
  // A run holds every task it generates: their count is refused before any is generated.
  BRAID_CHECK(tasks <= kMaxTasks, ErrorCode::kInvalidArgument, where,
              ": the models' FPS times the duration come to ", format_number(tasks),
              " tasks, more than the limit of ", format_number(kMaxTasks),
              " per run: lower fps (--model NAME:FPS) or duration_s (--duration)");
  check_int_in_range(s.max_sub_blocks, 1, kMaxSubBlocksLimit, "H (-H, --max-sub-blocks)", where);
  check_int_in_range(s.batch, 1, kMaxScenarioBatch, "batch (--batch)", where);
  check_int_in_range(s.image_size, 0, kMaxScenarioImageSize,
                     "image_size (--image-size; 0: the model's default)", where);
  check_in_range(s.variance_threshold, 0, 1e12, "variance_threshold (-T)", where);
  BRAID_CHECK(s.queue_capacity <= kMaxQueueCapacity, ErrorCode::kInvalidArgument, where, ": ",
              s.queue_capacity, " is out of range: queue_capacity (--queue-capacity) must be from ",
              "0 (unbounded) to ", kMaxQueueCapacity);
  BRAID_CHECK(s.max_in_flight >= 1 && s.max_in_flight <= kMaxInFlight, ErrorCode::kInvalidArgument,
              where, ": ", s.max_in_flight,
              " is out of range: max_in_flight (--max-in-flight) must be from 1 to ", kMaxInFlight);
  check_int_in_range(s.dp_state_limit, 0, kMaxDpStateLimit,
                     "dp_state_limit (0: combinations zipped, never searched)", where);
  BRAID_CHECK(s.precision == Precision::kFp32 || s.device.is_gpu(), ErrorCode::kInvalidArgument,
              where, ": precision (--precision) ", to_string(s.precision),
              " needs a GPU device (cuda:N or sim:NAME); ", to_string(s.device), " computes fp32");
  BRAID_CHECK(s.sample_period_s > 0 && std::isfinite(s.sample_period_s),
              ErrorCode::kInvalidArgument, where, ": sample_period_s must be > 0");
  // The report keeps a sample per period of the run.
  BRAID_CHECK(s.duration_s / s.sample_period_s <= kMaxSamples, ErrorCode::kInvalidArgument, where,
              ": duration_s / sample_period_s come to ",
              format_number(s.duration_s / s.sample_period_s), " samples, more than the limit of ",
              format_number(kMaxSamples), " (raise sample_period_s)");
}

nlohmann::json to_json(const Scenario& s) {
  nlohmann::json models = nlohmann::json::array();
  for (const ScenarioModel& m : s.models)
    models.push_back({{"model", m.model}, {"fps", m.fps}, {"blocks", to_string(m.blocks)}});
  return {{"format", "braid.top/1"},
          {"device", to_string(s.device)},
          {"policies", s.policies},
          {"arrivals", to_string(s.arrivals)},
          {"duration_s", s.duration_s},
          {"seed", s.seed},
          {"drain", s.drain},
          {"H", s.max_sub_blocks},
          {"batch", s.batch},
          {"image_size", s.image_size},
          {"scheduler", s.scheduler},
          {"cost", s.cost ? tune::to_string(*s.cost) : ""},
          {"variance_threshold", s.variance_threshold},
          {"sample_period_s", s.sample_period_s},
          {"queue_capacity", s.queue_capacity},
          {"max_in_flight", s.max_in_flight},
          {"dp_state_limit", s.dp_state_limit},
          {"intra", s.intra},
          {"precision", to_string(s.precision)},
          {"models", models}};
}

struct ScenarioRunner::Impl {
  ModelSet models;
  std::vector<std::unique_ptr<cost::CostModel>> costs;  // per model (cpu device)
  std::unique_ptr<Backend> backend;
  std::unique_ptr<StageCost> stage_cost;  // cpu device; the sim backend has its own
  std::unique_ptr<CombinedScheduler> combiner;
};

ScenarioRunner::ScenarioRunner(Scenario scenario)
    : scenario_(std::move(scenario)), impl_(std::make_unique<Impl>()) {
  const Scenario& s = scenario_;
  validate(s, "scenario");              // before anything is loaded or allocated
  tune::require_cuda_device(s.device);  // "no CUDA device ..." before loading anything
  tune::check_algorithm_name(s.scheduler);
  BRAID_CHECK(!s.device.is_sim() || sim::parse_device_set(s.device.sim).second == 1,
              ErrorCode::kInvalidArgument, "device '", to_string(s.device),
              "': the runtime runs on one device, not a set");
  const tune::PlanOptions plan{
      .device = s.device,
      .algorithm = s.scheduler,
      .cost = {.model = s.cost},
      .measure = {.device = s.device, .graph_replay = s.device.is_gpu(), .precision = s.precision},
      .batch = s.batch};
  for (const ScenarioModel& sm : s.models) {
    models::LoadOptions load{
        .zoo = {.batch = sm.batch > 0 ? sm.batch : s.batch, .image_size = s.image_size}};
    load.name = sm.name;
    load.inputs = sm.inputs;
    RuntimeModel& m = impl_->models.add(sm.model, {.load = load, .blocks = sm.blocks});
    auto weights = std::make_shared<const ir::Weights>(m.loaded.weights);
    auto model_cost = tune::make_plan_cost(m.units(), weights, plan);
    impl_->models.set_schedule(impl_->models.size() - 1,
                               tune::plan_model(m.units(), weights, *model_cost, plan).schedule);
    // The combined stages: never measured in the serving loop (see Scenario::cost), on the CPU
    // or a GPU.
    if (!s.device.is_sim() && !s.cost)
      model_cost = tune::make_cost_model(
          {.model = tune::CostName{.kind = tune::CostName::Kind::kRoofline}}, m.units(), weights);
    impl_->costs.push_back(std::move(model_cost));
  }
  CombineOptions combine{.max_sub_blocks = s.max_sub_blocks,
                         .dp_state_limit = s.dp_state_limit,
                         .intra = make_intra_scheduler(s.intra)};
  if (s.device.is_sim()) {
    auto sim = std::make_unique<SimBackend>(
        impl_->models, sim::with_precision(sim::load_device(s.device.sim), s.precision));
    impl_->combiner =
        std::make_unique<CombinedScheduler>(impl_->models, sim->stage_cost(), combine);
    impl_->backend = std::move(sim);
  } else {
    std::vector<const cost::CostModel*> per_model;
    for (const auto& c : impl_->costs) per_model.push_back(c.get());
    impl_->stage_cost = std::make_unique<ModelStageCost>(per_model);
    impl_->combiner =
        std::make_unique<CombinedScheduler>(impl_->models, *impl_->stage_cost, combine);
    if (s.device.is_cuda())
      impl_->backend = std::make_unique<ExecBackend>(
          impl_->models,
          exec::make_cuda_executor(
              {.device = s.device.index, .graph = true, .precision = s.precision}),
          to_string(s.device));
    else
      impl_->backend = std::make_unique<ExecBackend>(impl_->models);
  }
}

ScenarioRunner::~ScenarioRunner() = default;

const ModelSet& ScenarioRunner::models() const {
  return impl_->models;
}
CombinedScheduler& ScenarioRunner::combiner() {
  return *impl_->combiner;
}
Backend& ScenarioRunner::backend() {
  return *impl_->backend;
}
PolicyOptions ScenarioRunner::policy_options() const {
  return {.max_in_flight = scenario_.max_in_flight, .max_sub_blocks = scenario_.max_sub_blocks};
}

std::unique_ptr<Policy> ScenarioRunner::make_policy(const std::string& name) const {
  return runtime::make_policy(name, policy_options(), &impl_->models);
}

RuntimeOptions ScenarioRunner::runtime_options() const {
  const Scenario& s = scenario_;
  return {.duration_us = s.duration_s * 1e6,
          .drain = s.drain,
          .variance_threshold = s.variance_threshold,
          .sample_period_us = s.sample_period_s * 1e6,
          .queue_capacity = s.queue_capacity};
}

std::vector<Arrival> ScenarioRunner::arrivals(uint64_t seed) const {
  ArrivalPattern pattern{
      .kind = scenario_.arrivals, .duration_s = scenario_.duration_s, .seed = seed};
  for (const ScenarioModel& m : scenario_.models) pattern.fps.push_back(m.fps);
  return make_arrivals(pattern);
}

Report ScenarioRunner::run(const std::string& policy_name, uint64_t seed,
                           const std::function<void(RuntimeOptions&)>& adjust) {
  auto policy = make_policy(policy_name);
  RuntimeOptions options = runtime_options();
  if (adjust) adjust(options);
  Runtime runtime(impl_->models, *impl_->backend, *policy, impl_->combiner.get(), options);
  return runtime.run(arrivals(seed));
}

nlohmann::json to_json(const Report& r) {
  nlohmann::json models = nlohmann::json::array();
  for (const ModelReport& m : r.models)
    models.push_back(
        {{"name", m.name},
         {"blocks", m.blocks},
         {"units", m.units},
         {"submitted", m.submitted},
         {"completed", m.completed},
         {"rejected", m.rejected},
         {"queued", m.queued},
         {"in_flight", m.in_flight},
         {"throughput_fps", m.throughput_fps},
         {"latency_ms",
          {{"mean", m.mean_ms}, {"p50", m.p50_ms}, {"p95", m.p95_ms}, {"p99", m.p99_ms}}}});
  nlohmann::json samples = nlohmann::json::array();
  for (const Sample& s : r.samples)
    samples.push_back({{"t_s", s.at_us / 1e6},
                       {"queued", s.queued},
                       {"remaining", s.remaining},
                       {"variance", s.variance},
                       {"busy", s.busy},
                       {"utilization", s.utilization},
                       {"completed", s.completed}});
  return {{"policy", r.policy},
          {"backend", r.backend},
          {"duration_s", r.duration_us / 1e6},
          {"throughput_fps", r.throughput_fps},
          {"utilization", r.utilization},
          {"busy", r.busy},
          {"steps", r.steps},
          {"step_sizes", r.step_sizes},
          {"stage_dict",
           {{"lookups", r.combine.lookups},
            {"hits", r.combine.hits},
            {"searched", r.combine.searched},
            {"dp", r.combine.dp},
            {"zip", r.combine.zip},
            {"superblocks", r.combine.superblocks},
            {"gpg", r.combine.gpg},
            {"search_s", r.combine.search_seconds}}},
          {"decisions", r.decisions},
          {"final_variance", r.final_variance},
          {"event_log_sha256", r.event_log_sha256},
          {"wall_s", r.wall_seconds},
          {"models", models},
          {"samples", samples}};
}

std::string markdown_table(const std::vector<Report>& reports) {
  std::string out =
      "| policy | model | FPS | completed | remaining | p50 ms | p95 ms | p99 ms | utilization | "
      "busy | final σ² |\n|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const Report& r : reports) {
    for (const ModelReport& m : r.models)
      out += fmt::format("| {} | {} | {:.1f} | {} | {} | {:.2f} | {:.2f} | {:.2f} | | | |\n",
                         r.policy, m.name, m.throughput_fps, m.completed, m.queued + m.in_flight,
                         m.p50_ms, m.p95_ms, m.p99_ms);
    out +=
        fmt::format("| {} | **all** | {:.1f} | | | | | | {:.1f}% | {:.1f}% | {:.1f} |\n", r.policy,
                    r.throughput_fps, 100 * r.utilization, 100 * r.busy, r.final_variance);
  }
  return out;
}

}  // namespace braid::runtime
