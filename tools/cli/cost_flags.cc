#include "cost_flags.h"

#include "base/error.h"
#include "commands.h"

namespace braid::cli {

void add_cost_flags(CLI::App& cmd, CostFlags& flags) {
  cmd.add_option_function<std::string>(
      "--cost",
      [&flags](const std::string& text) {
        // "" is the default, as before; a bad name exits 2 with the known ones.
        flags.model = tune::parse_cost_option(text);
      },
      "Cost model: dag (a .dag.json's latencies; its default), cpu (measured here, "
      "cached; the default for real models), roofline (FLOPs and bytes only), hios "
      "(a weighted DAG under HIOS's simulated stage contention; hios:start=code "
      "waits for a producer's device timeline, as HIOS's simulator code does), "
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

void add_precision_flags(CLI::App& cmd, PrecisionFlags& flags) {
  cmd.add_option("--precision", flags.name,
                 "cuda:N and sim:NAME: fp32 (FP32 FMA math), tf32 (TF32 tensor cores in "
                 "convolutions and GEMMs), fp16 or bf16 (16-bit weights and activations, FP32 "
                 "accumulation; inputs and outputs in the model's own type); the CPU computes "
                 "fp32")
      ->capture_default_str();
  cmd.add_flag("--tf32", flags.tf32, "cuda:N: the same as --precision tf32");
}

Precision precision_of(const PrecisionFlags& flags) {
  const Precision p = parse_precision(flags.name);
  BRAID_CHECK(!flags.tf32 || p == Precision::kFp32 || p == Precision::kTf32,
              ErrorCode::kInvalidArgument, "--tf32 and --precision ", flags.name,
              " ask for different precisions");
  return flags.tf32 ? Precision::kTf32 : p;
}

}  // namespace braid::cli
