#include "cost_flags.h"

#include "base/error.h"
#include "cost/dag_cost.h"
#include "cost/roofline.h"
#include "sim/sim_cost.h"

namespace braid::cli {
namespace {

bool is_dag_spec(const std::string& spec) {
  return spec.ends_with(".dag.json");
}

}  // namespace

void add_cost_flags(CLI::App& cmd, CostFlags& flags) {
  cmd.add_option("--cost", flags.name,
                 "Cost model: dag (a .dag.json's latencies; its default), cpu (measured here, "
                 "cached; the default for real models), roofline (FLOPs and bytes only), "
                 "sim:NAME (the GPU simulator: devices/NAME.json or a .json path)");
}

bool cost_needs_weights(const CostFlags& flags, const std::string& model_spec) {
  if (!flags.name.empty()) return flags.name == "cpu";  // sim: shapes only
  return !is_dag_spec(model_spec);
}

std::unique_ptr<cost::CostModel> make_cost_model(const CostFlags& flags, const ir::UnitGraph& units,
                                                 std::shared_ptr<const ir::Weights> weights) {
  const bool weighted = units.graph() == nullptr;
  const std::string name = !flags.name.empty() ? flags.name : weighted ? "dag" : "cpu";
  if (name == "dag") return std::make_unique<cost::DagCostModel>(units);
  if (name == "roofline") return std::make_unique<cost::RooflineCostModel>(units);
  if (name == "cpu") {
    BRAID_CHECK(!weighted, ErrorCode::kInvalidArgument, "--cost cpu: '", units.name(),
                "' is a weighted DAG with no operators to measure (use --cost dag)");
    return std::make_unique<cost::CpuProfiler>(units, std::move(weights), flags.cpu);
  }
  if (name.starts_with("sim:"))
    return std::make_unique<sim::SimCostModel>(units, sim::load_device(name.substr(4)));
  BRAID_THROW(ErrorCode::kInvalidArgument, "unknown cost model '", name,
              "' (known: dag, cpu, roofline, sim:NAME)");
}

}  // namespace braid::cli
