// sim_bench — how fast the GPU simulator is (issue 5's target: one Inception V3 inference in
// under 10 ms of CPU time, so IOS's thousands of stage queries stay cheap).
//
//   cmake --build build --target sim_bench
//   build/bench/sim_bench --benchmark_min_time=0.5
//
// "plan/MODEL/ALGO": one whole inference of MODEL under ALGO's schedule (roofline costs, so the
// schedule is made without simulating) on the simulated V100, program built from the plan
// included; counters: kernels, engine events and the simulated ms. "stage/MODEL": one stage
// query of the sim cost model with the cache bypassed (four units as four groups).
// Benchmarks measure, they do not assert (STYLE.md §5).
#include <benchmark/benchmark.h>

#include <string>

#include "cost/roofline.h"
#include "models/loader.h"
#include "sched/lower.h"
#include "sched/registry.h"
#include "sim/program.h"

namespace braid {
namespace {

void plan_benchmark(benchmark::State& state, std::string model, std::string algorithm) {
  models::LoadOptions load;
  load.with_weights = false;
  const models::LoadedModel m = models::load_model(model, load);
  cost::RooflineCostModel roofline(m.units);
  const sched::Schedule s =
      sched::make_scheduler(algorithm, {.max_streams = 8})->schedule(m.units, roofline);
  const sched::ExecutionPlan plan = sched::lower(m.units, s);
  const sim::DeviceSpec v100 = sim::load_device("v100");
  const sim::UnitKernels kernels(m.units, v100);
  const sim::UnitKernels* devices[] = {&kernels};
  sim::Result r;
  size_t num_kernels = 0;
  for (auto _ : state) {
    const sim::PlanProgram p = sim::plan_program(m.units, plan, devices);
    r = sim::simulate(p.program, std::span(&v100, 1));
    num_kernels = p.program.kernels.size();
    benchmark::DoNotOptimize(r.makespan_us);
  }
  state.counters["kernels"] = double(num_kernels);
  state.counters["events"] = double(r.events);
  state.counters["max_groups"] = double(r.max_groups);
  state.counters["simulated_ms"] = r.makespan_us / 1e3;
}

void stage_benchmark(benchmark::State& state, std::string model) {
  models::LoadOptions load;
  load.with_weights = false;
  const models::LoadedModel m = models::load_model(model, load);
  const sim::DeviceSpec v100 = sim::load_device("v100");
  const sim::UnitKernels kernels(m.units, v100);
  // Four units in the middle of the graph, one per stream (independence does not matter here).
  std::vector<std::vector<UnitId>> groups;
  for (size_t i = 0; i < 4; ++i) groups.push_back({UnitId(m.units.num_units() / 2 + i)});
  double makespan = 0;
  for (auto _ : state) {
    const sim::Program p = sim::stage_program(kernels, groups);
    makespan = sim::simulate(p, std::span(&v100, 1)).makespan_us;
    benchmark::DoNotOptimize(makespan);
  }
  state.counters["simulated_us"] = makespan;
}

}  // namespace
}  // namespace braid

int main(int argc, char** argv) {
  using braid::plan_benchmark;
  for (const char* model : {"inception_v3", "randwire", "nasnet", "squeezenet"})
    for (const char* algo : {"sequential", "ios", "lios"})
      benchmark::RegisterBenchmark((std::string("plan/") + model + "/" + algo).c_str(),
                                   plan_benchmark, model, algo)
          ->Unit(benchmark::kMillisecond);
  for (const char* model : {"inception_v3", "nasnet", "randwire"})
    benchmark::RegisterBenchmark((std::string("stage/") + model).c_str(), braid::stage_benchmark,
                                 model)
        ->Unit(benchmark::kMicrosecond);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
