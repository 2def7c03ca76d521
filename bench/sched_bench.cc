// sched_bench — how long the schedulers search, on the zoo, with the roofline cost model (costs
// known and cheap, so the time is the search itself, not the measurements a profiling cost
// model would make).
//
//   cmake --build build --target sched_bench
//   taskset -c 0 build/bench/sched_bench --benchmark_filter='ios/' --benchmark_min_time=0.5
//
// One benchmark per (algorithm, model), named "ALGORITHM/MODEL": add a row to kCases. Models
// are loaded once (no weights), the scheduler made once; each iteration is one schedule() call.
// Counters (from the last iteration): transitions, states and stage_queries (sched::SearchStats;
// zero where a scheduler does not report them), stages and predicted_ms of the schedule.
// Benchmarks measure, they do not assert (STYLE.md §5).
#include <benchmark/benchmark.h>

#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "cost/hios_stage_cost.h"
#include "cost/roofline.h"
#include "models/loader.h"
#include "models/random_dag.h"
#include "sched/registry.h"

namespace braid {
namespace {

struct Case {
  std::string_view algorithm;  // a registry name (sched::scheduler_names())
  std::string_view model;      // a zoo name or model file
  sched::ScheduleOptions options = {};
};

// Every benchmark, in listing order.
const Case kCases[] = {
    {"ios", "inception_v3"},
    {"ios", "squeezenet"},
    {"ios", "randwire"},
    {"ios", "nasnet"},
    // Stream schedulers; targets: lios <= 1 ms on nasnet, opara <= 0.1 ms on inception_v3.
    {"lios", "inception_v3"},
    {"lios", "nasnet"},
    {"lios-rand", "nasnet"},
    {"heft", "inception_v3"},
    {"heft", "nasnet"},
    {"nimble", "inception_v3"},
    {"nimble", "nasnet"},
    {"opara", "inception_v3"},
    {"opara", "nasnet"},
};

// A model and its cost model, loaded once per process.
struct Loaded {
  models::LoadedModel model;
  std::unique_ptr<cost::RooflineCostModel> cost;
};

const Loaded& load(std::string_view name) {
  static std::map<std::string, Loaded, std::less<>> cache;
  auto it = cache.find(name);
  if (it == cache.end()) {
    Loaded l{models::load_model(name, {.with_weights = false}), nullptr};
    it = cache.emplace(std::string(name), std::move(l)).first;
    // Bound to the units where they now live (moving a LoadedModel moves its UnitGraph).
    it->second.cost = std::make_unique<cost::RooflineCostModel>(it->second.model.units);
  }
  return it->second;
}

void run_case(benchmark::State& state, const Case& c) {
  const Loaded& loaded = load(c.model);
  const auto scheduler = sched::make_scheduler(c.algorithm, c.options);
  sched::SearchStats stats;
  sched::Schedule schedule;
  for (auto _ : state) {
    stats = {};
    schedule = scheduler->schedule(loaded.model.units, *loaded.cost, &stats);
    benchmark::DoNotOptimize(schedule);
  }
  state.counters["transitions"] = static_cast<double>(stats.transitions);
  state.counters["states"] = static_cast<double>(stats.states);
  state.counters["stage_queries"] = static_cast<double>(stats.stage_queries);
  state.counters["stages"] = static_cast<double>(schedule.stages.size());
  state.counters["predicted_ms"] =
      schedule.predicted_latency ? Millis(*schedule.predicted_latency).count() : 0.0;
}

// HIOS's search on its own random DAGs (hios.txt §IV-C: O(|V||E|(M|V|^2 + w^2|E|^2))): 200 to
// 400 units, 2x edges, 14 layers, 4 devices, the HIOS stage model. "ALGO/random_N".
void run_random(benchmark::State& state, std::string algorithm, int ops) {
  const ir::UnitGraph g = models::random_dag({.ops = ops, .layers = 14, .edges = 2 * ops});
  cost::HiosStageCostModel cost(g);
  const auto scheduler = sched::make_scheduler(algorithm, {.max_streams = 2, .num_devices = 4});
  sched::SearchStats stats;
  sched::Schedule schedule;
  for (auto _ : state) {
    schedule = scheduler->schedule(g, cost, &stats);
    benchmark::DoNotOptimize(schedule);
  }
  state.counters["evaluations"] = static_cast<double>(stats.transitions);
  state.counters["predicted_ms"] = Millis(*schedule.predicted_latency).count();
}

}  // namespace
}  // namespace braid

int main(int argc, char** argv) {
  for (const char* algorithm : {"hios-lp", "hios-mr"})
    for (int ops : {200, 300, 400})
      benchmark::RegisterBenchmark(
          (std::string(algorithm) + "/random_" + std::to_string(ops)).c_str(), braid::run_random,
          algorithm, ops)
          ->Unit(benchmark::kMillisecond);
  for (const braid::Case& c : braid::kCases)
    benchmark::RegisterBenchmark((std::string(c.algorithm) + "/" + std::string(c.model)).c_str(),
                                 braid::run_case, c)
        ->Unit(benchmark::kMillisecond);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
