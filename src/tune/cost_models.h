// Cost models by name: what `--cost` accepts on every command, and what the runtime and the
// server use to schedule (one factory, not one per front end).
//   dag       the latencies written in a .dag.json (the default for weighted DAGs)
//   roofline  FLOPs and bytes only: no measurement
//   hios      a weighted DAG under HIOS's simulated stage contention; hios:start=code starts a
//             unit after its producers' devices' timelines (HIOS's simulator code), start=paper
//             (the default) after its producers (cost/hios_stage_cost.h)
//   cpu       measured on this CPU, cached on disk (the default for real models)
//   cuda:N    measured on GPU N with the CUDA executor, cached on disk
//   sim:NAME  the GPU simulator on devices/NAME.json (or a .json path)
//
//   auto cost = tune::make_cost_model({.model = tune::parse_cost_name("sim:a100_40gb")}, units,
//                                     weights);
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "base/device.h"
#include "base/precision.h"
#include "cost/cost_model.h"
#include "cost/hios_stage_cost.h"
#include "ir/unit_graph.h"
#include "ir/weights.h"
#include "profile/cpu_profiler.h"

namespace braid::tune {

// A cost model's name, parsed once from its text where the text arrives (a flag, a scenario's
// field, a session's option): parse_cost_name("sim:h100") is {kSim, Device sim:h100}.
struct CostName {
  enum class Kind : uint8_t { kDag, kRoofline, kHios, kCpu, kCuda, kSim };
  Kind kind = Kind::kCpu;
  Device device;                              // kCuda: cuda:N; kSim: sim:NAME
  std::optional<cost::StartRule> hios_start;  // kHios: hios:start=paper|code, else the default
  bool is_sim() const { return kind == Kind::kSim; }
  friend bool operator==(const CostName&, const CostName&) = default;
};
// One of the names above; kInvalidArgument naming the text and listing cost_model_names(), or
// the malformed cuda:N / sim:NAME / hios option.
CostName parse_cost_name(std::string_view text);
// An option's text: none for "" (the planner's default for the device), else parse_cost_name.
std::optional<CostName> parse_cost_option(std::string_view text);
// The spelling parse_cost_name reads back: "roofline", "hios:start=code", "cuda:0", "sim:h100".
std::string to_string(const CostName& name);

struct CostSpec {
  std::optional<CostName> model;    // none: dag for a weighted DAG, cpu otherwise
  std::string transfers;            // braid.transfers/1 file: its link prices every transfer
  profile::CpuProfilerOptions cpu;  // for cpu
  // sim:NAME prices every kernel as a host launch, for plans run with --eager; by default it
  // prices them inside the plan's CUDA Graph, as braid runs on GPUs (cuda:N always does).
  bool eager = false;
  // sim:NAME prices GEMMs on the tensor-core peak of this precision and tensors in its bytes
  // (sim::with_precision); cuda:N times its stages in it; cpu and dag price FP32. The planner
  // sets it from what the plan runs in (plan_cost_spec).
  Precision precision = Precision::kFp32;
};

// The names, in the order of the list above (cuda:N and sim:NAME as patterns).
std::span<const std::string_view> cost_model_names();

// Whether the cost model named by `spec` for the model `model_spec` (a zoo name or file) runs
// the model, and so needs its weights.
bool cost_needs_weights(const CostSpec& spec, const std::string& model_spec);

// Throws braid::Error(kInvalidArgument) for a cost model the model cannot have (cpu for a weighted
// DAG, dag for a model without latencies). `units` must outlive it; `weights` are needed by cpu and
// cuda:N only.
std::unique_ptr<cost::CostModel> make_cost_model(const CostSpec& spec, const ir::UnitGraph& units,
                                                 std::shared_ptr<const ir::Weights> weights);

}  // namespace braid::tune
