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

constexpr std::array<std::string_view, 6> kNames = {"dag", "roofline", "hios",
                                                    "cpu", "cuda:N",   "sim:NAME"};

bool is_dag_spec(const std::string& spec) {
  return spec.ends_with(".dag.json");
}

std::string known_names() {
  std::string s;
  for (std::string_view n : kNames) s += (s.empty() ? "" : ", ") + std::string(n);
  return s;
}

std::unique_ptr<cost::CostModel> make_base(const CostSpec& spec, const ir::UnitGraph& units,
                                           std::shared_ptr<const ir::Weights> weights) {
  const bool weighted = units.graph() == nullptr;
  const std::string name = !spec.name.empty() ? spec.name : weighted ? "dag" : "cpu";
  if (name == "dag") return std::make_unique<cost::DagCostModel>(units);
  if (name == "roofline") return std::make_unique<cost::RooflineCostModel>(units);
  if (name == "hios") return std::make_unique<cost::HiosStageCostModel>(units);
  if (name.starts_with("hios:")) {  // hios:start=paper|code
    const std::string_view option = std::string_view(name).substr(5);
    BRAID_CHECK(option.starts_with("start="), ErrorCode::kInvalidArgument, "--cost ", name,
                ": unknown option '", option, "' (known: start=paper, start=code)");
    return std::make_unique<cost::HiosStageCostModel>(units, 0.5,
                                                      cost::parse_hios_start(option.substr(6)));
  }
  if (name == "cpu") {
    BRAID_CHECK(!weighted, ErrorCode::kInvalidArgument, "--cost cpu: '", units.name(),
                "' is a weighted DAG with no operators to measure (use --cost dag)");
    return std::make_unique<profile::CpuProfiler>(units, std::move(weights), spec.cpu);
  }
  if (name.starts_with("cuda:")) {
    const int device = parse_device(name).index;  // throws on a malformed cuda:N
    BRAID_CHECK(!weighted, ErrorCode::kInvalidArgument, "--cost ", name, ": '", units.name(),
                "' is a weighted DAG with no operators to measure");
    return std::make_unique<profile::GpuProfiler>(
        units, std::move(weights),
        profile::GpuProfilerOptions{.device = device, .precision = spec.precision});
  }
  if (name.starts_with("sim:"))
    return std::make_unique<sim::SimCostModel>(
        units, sim::with_precision(sim::load_device(parse_device(name).sim), spec.precision),
        sim::SimCostOptions{.graph_replay = !spec.eager});
  BRAID_THROW(ErrorCode::kInvalidArgument, "unknown cost model '", name,
              "' (known: ", known_names(), ")");
}

}  // namespace

std::span<const std::string_view> cost_model_names() {
  return kNames;
}

bool cost_needs_weights(const CostSpec& spec, const std::string& model_spec) {
  if (!spec.name.empty())  // sim: shapes only
    return spec.name == "cpu" || spec.name.starts_with("cuda:");
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
