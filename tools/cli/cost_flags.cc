#include "cost_flags.h"

#include "base/error.h"
#include "cost/dag_cost.h"
#include "cost/hios_stage_cost.h"
#include "cost/roofline.h"
#include "cost/transfer_cost.h"
#include "measure.h"
#include "profile/gpu_profiler.h"
#include "sim/device_spec.h"
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
                 "cached; the default for real models), roofline (FLOPs and bytes only), hios "
                 "(a weighted DAG under HIOS's simulated stage contention), "
                 "cuda:N (measured on GPU N, cached), sim:NAME (the GPU simulator: "
                 "devices/NAME.json or a .json path)");
  cmd.add_option("--transfers", flags.transfers,
                 "Price transfers between devices with this measured link (braid transfers -o)");
}

void apply_device_set(const std::string& spec, sched::ScheduleOptions& options) {
  if (!spec.starts_with("sim:") || options.num_devices != 1) return;
  options.num_devices = sim::parse_device_set(spec.substr(4)).second;
}

bool cost_needs_weights(const CostFlags& flags, const std::string& model_spec) {
  if (!flags.name.empty())  // sim: shapes only
    return flags.name == "cpu" || flags.name.starts_with("cuda:");
  return !is_dag_spec(model_spec);
}

namespace {
std::unique_ptr<cost::CostModel> make_base_cost_model(const CostFlags& flags,
                                                      const ir::UnitGraph& units,
                                                      std::shared_ptr<const ir::Weights> weights);
}  // namespace

std::unique_ptr<cost::CostModel> make_cost_model(const CostFlags& flags, const ir::UnitGraph& units,
                                                 std::shared_ptr<const ir::Weights> weights) {
  auto base = make_base_cost_model(flags, units, std::move(weights));
  if (flags.transfers.empty()) return base;
  return std::make_unique<cost::WithTransfers>(std::move(base),
                                               cost::read_link_cost(flags.transfers));
}

namespace {
std::unique_ptr<cost::CostModel> make_base_cost_model(const CostFlags& flags,
                                                      const ir::UnitGraph& units,
                                                      std::shared_ptr<const ir::Weights> weights) {
  const bool weighted = units.graph() == nullptr;
  const std::string name = !flags.name.empty() ? flags.name : weighted ? "dag" : "cpu";
  if (name == "dag") return std::make_unique<cost::DagCostModel>(units);
  if (name == "roofline") return std::make_unique<cost::RooflineCostModel>(units);
  if (name == "hios") return std::make_unique<cost::HiosStageCostModel>(units);
  if (name == "cpu") {
    BRAID_CHECK(!weighted, ErrorCode::kInvalidArgument, "--cost cpu: '", units.name(),
                "' is a weighted DAG with no operators to measure (use --cost dag)");
    return std::make_unique<profile::CpuProfiler>(units, std::move(weights), flags.cpu);
  }
  if (name.starts_with("cuda:")) {
    BRAID_CHECK(!weighted, ErrorCode::kInvalidArgument, "--cost ", name, ": '", units.name(),
                "' is a weighted DAG with no operators to measure");
    return std::make_unique<profile::GpuProfiler>(
        units, std::move(weights), profile::GpuProfilerOptions{.device = *cuda_device(name)});
  }
  if (name.starts_with("sim:"))
    return std::make_unique<sim::SimCostModel>(units, sim::load_device(name.substr(4)));
  BRAID_THROW(ErrorCode::kInvalidArgument, "unknown cost model '", name,
              "' (known: dag, hios, cpu, roofline, cuda:N, sim:NAME)");
}
}  // namespace

}  // namespace braid::cli
