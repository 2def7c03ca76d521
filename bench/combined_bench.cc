// combined_bench — how long TOP's combined blocks take to schedule (runtime/combined.h), on the
// simulated A100 (SqueezeNet and Inception V3 at 224x224, batch 1), with and without the stage
// dict:
//  - StageDict/cold: a new stage cost and a new CombinedScheduler every iteration, so every
//    stage is simulated and every combination searched (what each step would cost uncached),
//    with the union DP off (dp_state_limit 0: zip only), limited, and at the default limit;
//  - StageDict/warm: the same combinations from a filled stage dict (a lookup each);
//  - UnionDp/K/order: IOS's DP over the union of K Inception V3 sub-blocks (no state limit; the
//    paper's Fig. 13 shows the DP's time growing with the sub-blocks). Counters: the union's
//    units and states, and the DP's time (dp_runs 0: over 64 units, not run); one iteration.
//
//   cmake --build build --target combined_bench
//   taskset -c 0 build/bench/combined_bench --benchmark_filter=StageDict
//
// Benchmarks measure, they do not assert (STYLE.md §5).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "runtime/combined.h"
#include "runtime/sim_backend.h"
#include "sim/device_spec.h"

namespace braid::runtime {
namespace {

constexpr uint32_t kSqueezenet = 0, kInception = 1;

struct Loaded {
  ModelSet models;
  sim::DeviceSpec spec = sim::load_device("a100_40gb");
  std::vector<std::unique_ptr<sim::UnitKernels>> kernels;
  Loaded() {
    const models::LoadOptions load{.zoo = {.batch = 1, .image_size = 224}, .with_weights = false};
    models.add("squeezenet", {.load = load});
    models.add("inception_v3", {.load = load});
    for (size_t m = 0; m < models.size(); ++m)
      kernels.push_back(std::make_unique<sim::UnitKernels>(models.model(m).units(), spec));
  }
  std::unique_ptr<SimStageCost> new_cost() const {
    std::vector<const sim::UnitKernels*> k;
    for (const auto& p : kernels) k.push_back(p.get());
    return std::make_unique<SimStageCost>(std::move(k), spec, true);
  }
};
Loaded& loaded() {
  static Loaded l;
  return l;
}

// The last cold iteration's stage dict, kept for the warm benchmark (filling one takes long).
struct Filled {
  std::unique_ptr<SimStageCost> cost;
  std::unique_ptr<CombinedScheduler> dict;
};
Filled& filled() {
  static Filled f;
  return f;
}

// What a multi-model scenario meets: each Inception V3 block beside a SqueezeNet block, by
// twos, threes and fours (H = 4 on the A100, top.txt §V-D).
std::vector<std::vector<SubBlock>> combinations(const ModelSet& models) {
  const uint32_t sq = uint32_t(models.model(kSqueezenet).blocks.size());
  const uint32_t in = uint32_t(models.model(kInception).blocks.size());
  std::vector<std::vector<SubBlock>> out;
  for (uint32_t b = 0; b < in; ++b) {
    out.push_back({{kSqueezenet, b % sq}, {kInception, b}});
    out.push_back({{kSqueezenet, b % sq}, {kSqueezenet, (b + 1) % sq}, {kInception, b}});
    out.push_back({{kSqueezenet, b % sq},
                   {kSqueezenet, (b + 1) % sq},
                   {kInception, b},
                   {kInception, (b + 1) % in}});
  }
  return out;
}

void report(benchmark::State& state, const CombineStats& stats, size_t n) {
  state.counters["combinations"] = double(n);
  state.counters["searched"] = double(stats.searched);
  state.counters["dp"] = double(stats.dp);
  state.counters["zip"] = double(stats.zip);
  state.counters["search_s"] = stats.search_seconds;  // misses, the union DPs included
  state.counters["union_dp_s"] = stats.dp_seconds;
}

void BM_StageDictCold(benchmark::State& state) {
  const Loaded& l = loaded();
  const auto set = combinations(l.models);
  double predicted = 0;
  for (auto _ : state) {
    predicted = 0;
    auto cost = l.new_cost();
    auto dict = std::make_unique<CombinedScheduler>(
        l.models, *cost, CombineOptions{.dp_state_limit = state.range(0)});
    for (const auto& c : set) predicted += dict->schedule(c).predicted.count();
    filled() = {std::move(cost), std::move(dict)};
  }
  report(state, filled().dict->stats(), set.size());
  state.counters["predicted_us"] = predicted;  // summed over the combinations
}
BENCHMARK(BM_StageDictCold)
    ->Name("StageDict/cold")
    ->ArgName("dp_state_limit")
    ->Arg(0)                                // zip only
    ->Arg(CombineOptions{}.dp_state_limit)  // the default (2,000); the warm rows reuse its dict
    ->Arg(20000)                            // 70 s here: the union DP's states multiply
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

void BM_StageDictWarm(benchmark::State& state) {
  const Loaded& l = loaded();
  const auto set = combinations(l.models);
  Filled& f = filled();
  if (!f.dict) {
    f.cost = l.new_cost();
    f.dict = std::make_unique<CombinedScheduler>(l.models, *f.cost);
    for (const auto& c : set) f.dict->schedule(c);
  }
  const CombineStats before = f.dict->stats();
  for (auto _ : state)
    for (const auto& c : set) benchmark::DoNotOptimize(f.dict->schedule(c).predicted);
  report(state, before, set.size());  // the filling's counts
}
BENCHMARK(BM_StageDictWarm)->Name("StageDict/warm")->Unit(benchmark::kMicrosecond);

// The union DP on K Inception V3 sub-blocks that are not chains (their DP has something to
// choose): the smallest K, or the first K in model order (in_model_order: the Inception-A
// modules, as a scenario meets them).
// One path through the block: one unit without a producer in it, none with two consumers.
bool is_chain(const RuntimeModel& model, uint32_t block) {
  size_t entries = 0;
  for (UnitId u : model.blocks[block].units) {
    size_t inside = 0;
    for (UnitId v : model.units().successors(u)) inside += model.block_of_unit[index(v)] == block;
    if (inside > 1) return false;
    bool fed = false;
    for (UnitId p : model.units().predecessors(u)) fed |= model.block_of_unit[index(p)] == block;
    entries += !fed;
  }
  return entries <= 1;
}

void BM_UnionDp(benchmark::State& state) {
  const Loaded& l = loaded();
  const RuntimeModel& inception = l.models.model(kInception);
  std::vector<SubBlock> picked;
  for (uint32_t b = 0; b < inception.blocks.size(); ++b)
    if (!is_chain(inception, b)) picked.push_back({kInception, b});
  if (state.range(1) == 0)
    std::stable_sort(picked.begin(), picked.end(), [&](SubBlock a, SubBlock b) {
      return inception.blocks[a.block].units.size() < inception.blocks[b.block].units.size();
    });
  picked.resize(std::min(picked.size(), size_t(state.range(0))));
  const auto cost = l.new_cost();
  CombineStats stats;
  size_t units = 0;
  for (auto _ : state) {
    CombinedScheduler dict(l.models, *cost,
                           {.dp_state_limit = std::numeric_limits<int64_t>::max()});
    for (const SubBlock& sb : picked) dict.single(sb);  // the sub-blocks alone, not timed
    const CombineStats before = dict.stats();
    benchmark::DoNotOptimize(dict.schedule(picked).predicted);
    stats = dict.stats();
    stats.dp_states -= before.dp_states;
    stats.dp_seconds -= before.dp_seconds;
  }
  for (const SubBlock& sb : picked) units += inception.blocks[sb.block].units.size();
  state.counters["first_block"] = double(picked.front().block);
  state.counters["units"] = double(units);
  state.counters["states"] = double(stats.dp_states);
  state.counters["dp_s"] = stats.dp_seconds;
  state.counters["dp_runs"] = double(stats.dp_runs);
}
BENCHMARK(BM_UnionDp)
    ->Name("UnionDp")
    ->ArgNames({"sub_blocks", "in_model_order"})
    ->ArgsProduct({{2, 3, 4}, {0, 1}})
    ->Iterations(1)
    ->Unit(benchmark::kSecond);

}  // namespace
}  // namespace braid::runtime

BENCHMARK_MAIN();
