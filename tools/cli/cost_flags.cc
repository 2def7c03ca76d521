#include "cost_flags.h"

#include "commands.h"

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

}  // namespace braid::cli
