// profile::CpuProfiler — stage latencies measured on this CPU with the CPU executor, the way IOS
// profiles every candidate stage on the device (ios.txt §4; peers.md §1.3, §1.6).
//
//   profile::CpuProfiler profiler(m.units, weights, {.threads_per_stream = 1});
//   Micros u = profiler.unit_latency(unit);          // the unit alone on one stream
//   Micros s = profiler.stage_latency(groups);       // group i on stream i, concurrently
//   cost::Measurement full = profiler.profile_stage(groups);   // median, p10, p90, suspect
//
// How a stage is measured: its units are cut out as a graph of their own (subgraph.h), whose
// inputs are filled with uniform [-1, 1] noise (zeros or uninitialized memory give denormals
// and timings 10x off); a Schedule with one concurrent stage (group i on stream i) is lowered
// and prepared on the CPU executor; `warmup` inferences run untimed, then `runs` runs of
// `number` inferences each. An inference's latency is its makespan, from the first unit's
// start to the last unit's end as the executor observes them, so waking the lane threads for
// a new request is not charged to every stage. The result is the median of the per-run means,
// with p10/p90 of those means as the spread. IOS does the same with warmup 2, number 6,
// repeat 6 and the mean over repeats (peers.md §1.6); the median resists one preempted run.
//
// Layouts: a stage runs with the activation layouts its values have in the whole model
// (exec/cpu/layout.h under `layout`, the executor's), its inputs and outputs included, so its
// kernels are the ones `braid run` builds for those units. Measured with plain boundaries
// instead, a stage's kernels can differ from the model's (other reorders, another oneDNN
// implementation): issue 15 saw 17.6 ms predicted for a model that ran 260 ms.
//
// Results are cached in memory and on disk (profile_cache.h), keyed by the machine, the stage
// key (stage_key.h) and threads per stream: a second profile of the same model measures
// nothing, and identical Inception blocks are measured once (IOS re-measures them,
// peers.md §1.3 step 7).
//
// Busy machine policy (ecosystem.md §4.4). After the warmup and after every timed run the
// profiler counts the other processes' runnable threads (machine.h: the running count of
// /proc/loadavg minus this process's running threads). Their mean is the measurement's
// `other_load`: about how many CPUs others wanted meanwhile. Above `busy_load_threshold` (a
// quarter of a CPU) the measurement is suspect. It is then repeated after a short pause, up to
// `suspect_retries` times, except right after a measurement that stayed suspect (a machine
// busy for minutes would cost a pause per stage). If still suspect it is kept, flagged in the
// cache and counted in suspect_measurements(); `remeasure_suspect` measures it again later.
// Not used for the verdict: the 1-minute load average (it lags; `braid profile` only reports
// it) and /proc/stat CPU times (a 10 ms tick cannot resolve stages of a few milliseconds).
//
// Measuring budget. IOS's DP asks for thousands of stages on a large model (RandWire: 2,406 in
// 22 minutes and not done, 2026-11-27), each measured for about half a second. Once the profiler
// has spent `stage_budget_s` measuring stages of several units, a stage it has not measured is
// priced from its units instead: its slowest group's summed unit latencies (at the group's
// threads), times the median ratio of measured to so-priced over the stages measured so far
// (1 before any). Units alone are always measured. Estimates are kept in memory for the
// profiler's life (a search sees one consistent price per stage) but never cached on disk,
// and are counted in stats().estimates. auto measures its candidates' plans afterwards, so an
// estimate shapes a candidate but never picks the winner.
//
// The OpenMP wait policy is left as the environment sets it: the profile must describe how
// `braid run` executes, and libgomp reads OMP_WAIT_POLICY / GOMP_SPINCOUNT once, at load, so a
// process cannot change its own. It is part of the machine fingerprint. With one thread per
// stream (the default) it does not matter, as a team of one never spins; with more, set
// OMP_WAIT_POLICY=passive on a shared machine (`braid profile` says so). Allotment plans widen
// and narrow teams unit by unit, and a team's idle thread spins on the CPU the next, narrower
// unit of another lane wants: moldable on Inception V3 ran 146 ms with libgomp's default spin
// and 124 ms passive (one noisy run each, 2026-11-27).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include "cost/cost_model.h"
#include "cost/machine.h"
#include "cost/profile_cache.h"
#include "cost/subgraph.h"
#include "exec/cpu/cpu_executor.h"
#include "ir/weights.h"

namespace braid::profile {

struct CpuProfilerOptions {
  int threads_per_stream = 1;  // OpenMP threads inside each oneDNN primitive
  // The CPU executor's activation layout (CpuExecutorOptions::layout) the model will run with.
  exec::TensorLayout layout = exec::CpuExecutorOptions{}.layout;
  int warmup = 2;                   // untimed inferences first
  int runs = 5;                     // timed runs (IOS's repeat)
  int number = 3;                   // inferences per run, averaged (IOS's number)
  uint64_t input_seed = 1;          // of the uniform [-1, 1] inputs
  bool use_cache = true;            // read and write the disk cache
  std::filesystem::path cache_dir;  // empty: cost::ProfileCache::default_dir()
  double busy_load_threshold = 0.25;
  int suspect_retries = 1;
  bool remeasure_suspect = false;
  // Seconds spent measuring stages of several units after which further ones are estimated
  // (see above); 0: no limit.
  double stage_budget_s = 120;
};

class CpuProfiler final : public cost::CostModel {
 public:
  // `units` must be the fusion of an operator graph and `weights` its complete parameters;
  // throws braid::Error otherwise (kInvalidArgument, kInvalidModel).
  CpuProfiler(const ir::UnitGraph& units, std::shared_ptr<const ir::Weights> weights,
              CpuProfilerOptions options = {});
  ~CpuProfiler() override;

  std::string_view name() const override { return "cpu_profiler"; }
  Micros unit_latency(UnitId unit) const override;
  // The measured median, never below stage_lower_bound: a stage measured faster than its
  // slowest group's units alone (noise, or a consumer finding its input still in cache) would
  // make the lower bounds a search prunes with inconsistent.
  Micros stage_latency(std::span<const std::vector<UnitId>> groups) const override;
  // The CPUs this process may use over threads per stream.
  double parallelism() const override;
  // The executor pins stream i to threads_per_stream consecutive CPUs from CPU
  // i * threads_per_stream (wrapping around), so each CPU runs the groups of its streams one
  // after another at best: the busiest CPU's summed group latencies (with more streams than
  // CPUs, a tighter bound than the work over the CPUs).
  Micros stage_lower_bound(std::span<const std::vector<UnitId>> groups) const override;
  // An operator merge measured as the CPU executor runs it: one oneDNN convolution over the
  // units' concatenated, zero-padded weights, then a copy of each unit's channels
  // (cpu_kernels.h, make_merged_conv_kernel); cached under its own key. Never below
  // merge_lower_bound.
  Micros merge_latency(std::span<const UnitId> units) const override;
  // The slowest unit alone: the merged kernel computes every unit's outputs, so at least the
  // work of each. Not their sum, which the merged kernel may beat (the default bound would
  // hide exactly the merges that pay).
  Micros merge_lower_bound(std::span<const UnitId> units) const override;
  bool measures() const override { return true; }
  // Allotments: a unit on up to every CPU this process may use, measured on an allotment plan
  // (its primitives built for that many threads), cached like any stage.
  int max_threads() const override;
  Micros unit_latency_at(UnitId unit, int threads) const override;
  Micros stage_latency_at(std::span<const std::vector<UnitId>> groups,
                          std::span<const int> threads) const override;

  // The full result for a stage (median, spread, busy-machine judgement); measures it unless
  // it is cached. Does not count as a query in stats().
  cost::Measurement profile_stage(std::span<const std::vector<UnitId>> groups) const;
  cost::Measurement profile_unit(UnitId unit) const;
  int64_t suspect_measurements() const;
  const cost::Machine& machine() const { return machine_; }
  // Null when options.use_cache is false.
  const cost::ProfileCache* cache() const { return cache_.get(); }
  // Saves new measurements to disk now (the destructor also does).
  void flush() const;
  // The layout, in the whole model, of each value of `stage` (a graph cut out of the model by
  // cost::extract, by ValueId): the layouts a stage is measured in.
  std::vector<exec::TensorLayout> stage_layouts(const ir::Graph& stage) const;

 private:
  // `threads` empty: the groups at threads per stream; else an allotment, one entry per group.
  // `merge`: the groups (one unit each) as one operator merge stage.
  cost::Measurement lookup_or_measure(std::span<const std::vector<UnitId>> groups,
                                      std::span<const int> threads = {}, bool merge = false) const;
  cost::Measurement measure(std::span<const std::vector<UnitId>> groups,
                            std::span<const int> threads, bool merge) const;
  // The budget's price of a stage not measured (see above).
  cost::Measurement estimate(Micros units_price) const;
  // Its slowest group's summed unit latencies at the group's threads.
  Micros from_units(std::span<const std::vector<UnitId>> groups,
                    std::span<const int> threads) const;
  std::string cache_key(std::span<const std::vector<UnitId>> groups, std::span<const int> threads,
                        bool merge = false) const;

  std::shared_ptr<const ir::Weights> weights_;
  CpuProfilerOptions options_;
  cost::Machine machine_;
  std::vector<exec::TensorLayout> model_layouts_;  // per ValueId of the model
  std::unique_ptr<cost::ProfileCache> cache_;
  mutable std::mutex memo_mutex_;     // guards memo_, unit_memo_, unit_at_memo_
  mutable std::mutex measure_mutex_;  // one measurement at a time: two would disturb each other
  mutable std::map<std::string, cost::Measurement> memo_;  // by cache_key
  mutable std::vector<std::optional<cost::Measurement>> unit_memo_;
  mutable std::map<std::pair<size_t, int>, Micros> unit_at_memo_;  // (unit, threads) -> median
  mutable int64_t suspect_ = 0;                                    // measure_mutex_
  mutable bool busy_streak_ = false;  // the last measurement stayed suspect (measure_mutex_)
  // The budget (measure_mutex_): seconds spent measuring stages of several units, and the
  // ratios measured / from_units of those stages, measured or read from the cache.
  mutable double stage_seconds_ = 0;
  mutable std::vector<double> stage_ratios_;
  mutable bool budget_noted_ = false;
};

}  // namespace braid::profile
