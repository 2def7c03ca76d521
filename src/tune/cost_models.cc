#include "tune/cost_models.h"

#include <array>

#include "base/device.h"
#include "base/error.h"
#include "cost/dag_cost.h"
#include "cost/hios_stage_cost.h"
#include "cost/roofline.h"
#include "cost/transfer_cost.h"
#include "profile/gpu_profiler.h"
#include "sim/device_spec.h"
#include "sim/sim_cost.h"
#include "tune/measure.h"

namespace braid::tune {
namespace {

using Kind = CostName::Kind;

// Every cost model, in the order `--cost`'s help and errors list them: an exact name, or a
// prefix whose rest parse_cost_name reads (cuda:N, sim:NAME, hios:start=...).
struct CostEntry {
  std::string_view name;    // as listed
  std::string_view prefix;  // "": the name only
  Kind kind;
  bool runs_model;  // measures the model, so needs its weights
};
constexpr CostEntry kCostModels[] = {
    {"dag", "", Kind::kDag, false},         {"roofline", "", Kind::kRoofline, false},
    {"hios", "hios:", Kind::kHios, false},  {"cpu", "", Kind::kCpu, true},
    {"cuda:N", "cuda:", Kind::kCuda, true}, {"sim:NAME", "sim:", Kind::kSim, false},
};

constexpr std::array<std::string_view, std::size(kCostModels)> kNames = [] {
  std::array<std::string_view, std::size(kCostModels)> names{};
  for (size_t i = 0; i < names.size(); ++i) names[i] = kCostModels[i].name;
  return names;
}();

const CostEntry& entry(Kind kind) {
  for (const CostEntry& e : kCostModels)
    if (e.kind == kind) return e;
  BRAID_ASSERT(false, "a cost model kind without a table row");
}

bool is_dag_spec(const std::string& spec) {
  return spec.ends_with(".dag.json");
}

std::string known_names() {
  std::string s;
  for (std::string_view n : kNames) s += (s.empty() ? "" : ", ") + std::string(n);
  return s;
}

CostName default_name(const ir::UnitGraph& units) {
  return {.kind = units.graph() == nullptr ? Kind::kDag : Kind::kCpu};
}

std::unique_ptr<cost::CostModel> make_base(const CostSpec& spec, const ir::UnitGraph& units,
                                           std::shared_ptr<const ir::Weights> weights) {
  const bool weighted = units.graph() == nullptr;
  const CostName name = spec.model.value_or(default_name(units));
  switch (name.kind) {
    case Kind::kDag:
      return std::make_unique<cost::DagCostModel>(units);
    case Kind::kRoofline:
      return std::make_unique<cost::RooflineCostModel>(units);
    case Kind::kHios:
      return std::make_unique<cost::HiosStageCostModel>(
          units, 0.5, name.hios_start.value_or(cost::StartRule::kProducerFinish));
    case Kind::kCpu:
      BRAID_CHECK(!weighted, ErrorCode::kInvalidArgument, "--cost cpu: '", units.name(),
                  "' is a weighted DAG with no operators to measure (use --cost dag)");
      return std::make_unique<profile::CpuProfiler>(units, std::move(weights), spec.cpu);
    case Kind::kCuda:
      BRAID_CHECK(!weighted, ErrorCode::kInvalidArgument, "--cost ", to_string(name), ": '",
                  units.name(), "' is a weighted DAG with no operators to measure");
      return std::make_unique<profile::GpuProfiler>(
          units, std::move(weights),
          profile::GpuProfilerOptions{.device = name.device.index, .precision = spec.precision});
    case Kind::kSim:
      return std::make_unique<sim::SimCostModel>(
          units, sim::with_precision(sim::load_device(name.device.sim), spec.precision),
          sim::SimCostOptions{.graph_replay = !spec.eager});
  }
  BRAID_ASSERT(false, "bad cost model kind");
}

}  // namespace

CostName parse_cost_name(std::string_view text) {
  for (const CostEntry& e : kCostModels) {
    if (text == e.name && e.prefix.empty()) return {.kind = e.kind};
    if (e.prefix.empty() || !(text == e.name || text.starts_with(e.prefix))) continue;
    switch (e.kind) {
      case Kind::kHios: {
        if (text == e.name) return {.kind = e.kind};
        const std::string_view option = text.substr(e.prefix.size());
        BRAID_CHECK(option.starts_with("start="), ErrorCode::kInvalidArgument, "--cost ", text,
                    ": unknown option '", option, "' (known: start=paper, start=code)");
        return {.kind = e.kind, .hios_start = cost::parse_hios_start(option.substr(6))};
      }
      default:  // cuda:N, sim:NAME: the device's own parser says what is wrong
        return {.kind = e.kind, .device = parse_device(text)};
    }
  }
  BRAID_THROW(ErrorCode::kInvalidArgument, "unknown cost model '", text,
              "' (known: ", known_names(), ")");
}

std::optional<CostName> parse_cost_option(std::string_view text) {
  if (text.empty()) return std::nullopt;
  return parse_cost_name(text);
}

std::string to_string(const CostName& name) {
  switch (name.kind) {
    case Kind::kCuda:
    case Kind::kSim:
      return braid::to_string(name.device);
    case Kind::kHios:
      if (name.hios_start)
        return "hios:start=" + std::string(cost::hios_start_name(*name.hios_start));
      return "hios";
    default:
      return std::string(entry(name.kind).name);
  }
}

std::span<const std::string_view> cost_model_names() {
  return kNames;
}

bool cost_needs_weights(const CostSpec& spec, const std::string& model_spec) {
  if (spec.model) return entry(spec.model->kind).runs_model;  // sim: shapes only
  return !is_dag_spec(model_spec);
}

std::unique_ptr<cost::CostModel> make_cost_model(const CostSpec& spec, const ir::UnitGraph& units,
                                                 std::shared_ptr<const ir::Weights> weights) {
  auto base = make_base(spec, units, std::move(weights));
  if (spec.transfers.empty()) return base;
  return std::make_unique<cost::WithTransfers>(std::move(base),
                                               cost::read_link_cost(spec.transfers));
}

}  // namespace braid::tune
