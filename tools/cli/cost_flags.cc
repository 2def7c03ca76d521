#include "cost_flags.h"

#include "commands.h"
#include "sim/device_spec.h"

namespace braid::cli {

void add_cost_flags(CLI::App& cmd, CostFlags& flags) {
  cmd.add_option("--cost", flags.name,
                 "Cost model: dag (a .dag.json's latencies; its default), cpu (measured here, "
                 "cached; the default for real models), roofline (FLOPs and bytes only), hios "
                 "(a weighted DAG under HIOS's simulated stage contention), "
                 "cuda:N (measured on GPU N, cached), sim:NAME (the GPU simulator: "
                 "devices/NAME.json or a .json path)");
  cmd.add_option("--profile-budget", flags.cpu.stage_budget_s,
                 "--cost cpu: seconds the profiler may spend measuring stages of several units "
                 "(IOS's DP asks for thousands on a large model); later ones are priced from "
                 "their units' measured latencies (0: no limit)")
      ->check(number_in("the profiling budget in seconds", 0, 1e6))
      ->capture_default_str();
  cmd.add_option("--transfers", flags.transfers,
                 "Price transfers between devices with this measured link (braid transfers -o)");
}

void apply_device_set(const std::string& spec, sched::ScheduleOptions& options) {
  if (!spec.starts_with("sim:") || options.num_devices != 1) return;
  options.num_devices = sim::parse_device_set(spec.substr(4)).second;
}

}  // namespace braid::cli
