// `auto`: the scheduler that measures. It schedules the model with every single-device
// scheduler under the device's cost model, runs the few best candidates (by prediction) on
// the device itself, interleaved, and keeps the fastest; sequential is always one of them, so
// the choice is never slower than sequential on the machine that measured it. The decision is
// cached (decision_cache.h): a second call with the same key measures nothing.
//
//   tune::AutoOptions options{.measure = {.device = Device::cpu(), .iters = 20}};
//   options.cache_dir = cost::ProfileCache::default_dir();
//   tune::AutoDecision d = tune::auto_schedule(units, weights, cost, options);
//   d.winner;   d.schedule;   d.speedup_over_sequential();   d.cached;
//
// Not a sched::Scheduler: it runs schedules, and sched/ never links exec/. The candidates and
// why the other registry entries are left out: docs/schedulers.md, section `auto`.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cost/cost_model.h"
#include "sched/registry.h"
#include "tune/measure.h"

namespace braid::tune {

// The schedulers auto tries, in this order: every single-device scheduler of the registry
// except the randomized ablations (lios-rand*) and those IOS's own search already covers
// (ios-parallel, ios-merge: subsets of ios's choices under the same cost model). The
// allotment schedulers (intra, moldable, ios-threads, optimal-threads) only where units can take
// several cores (the cost model's max_threads, capped by ScheduleOptions::cores).
std::span<const std::string_view> auto_candidates();
// The candidates as auto lists them on `cores` cores: sequential (at the executor's threads per
// stream), intra@K for every other K from 1 to cores (every unit on K threads), moldable,
// ios-threads and optimal-threads on `cores`, then the inter-operator schedulers.
std::vector<std::string> auto_candidate_labels(int cores, int threads_per_stream);

inline constexpr std::string_view kAuto = "auto";
// What --algo accepts where auto can run (braid run, braid bench): "auto", then the registry.
std::vector<std::string_view> algorithm_names();
// Throws braid::Error(kNotFound) for a name in neither, listing algorithm_names().
void check_algorithm_name(std::string_view name);

struct AutoOptions {
  sched::ScheduleOptions schedule;  // num_devices must be 1
  MeasureOptions measure;           // the device; iters = interleaved rounds
  // Candidates run on the device, sequential included: the best predicted distinct others.
  int max_measured = 4;
  int64_t batch = 1;
  // Where decisions are cached; nullopt: neither read nor written.
  std::optional<std::filesystem::path> cache_dir;
  bool reuse_cached = true;  // false: measure afresh, then replace the cached decision
  // The key's device and version; empty: describe_device(measure.device) and braid_version().
  // Tests set them to see the cache miss.
  std::string device_description, braid_version;
};

// The interleaved rounds (MeasureOptions::iters) and warm-up runs auto uses on `device` unless
// told otherwise: a few hundred on a GPU (a replayed graph takes about a millisecond), fewer
// on the CPU, one on sim (deterministic).
int default_auto_rounds(const Device& device);
int default_auto_warmup(const Device& device);
// Candidates auto runs on `device`, sequential included (AutoOptions::max_measured): every
// distinct one on a GPU, where a round of replays costs milliseconds and the measured costs put
// five schedulers ahead of ios on tv_inception_v3, where ios ran fastest on an H100
// (docs/gpu.md), and on a simulated one, where a run is a millisecond of simulation; the best
// predicted four on the CPU. The intra-operator runs are measured beyond these: max_measured
// counts sequential and the max_measured - 1 others.
int default_auto_max_measured(const Device& device);
// The cores auto's allotment candidates plan for: the cost model's max_threads (the CPUs here,
// under the CPU profiler; 1 on GPUs and simulators), capped by options.schedule.cores (--threads).
int auto_cores(const cost::CostModel& cost, const AutoOptions& options);

struct AutoCandidate {
  std::string algorithm;  // the label: a scheduler's name, or intra@K
  // sequential or intra@K: intra-operator parallelism only. Always measured: they are the
  // runs auto must never lose to.
  bool intra_operator = false;
  // Why it was not measured: the scheduler's error, "same schedule as X", or "predicted no
  // faster than the N measured beside sequential". Empty for a measured candidate.
  std::string skipped;
  std::optional<double> predicted_ms;  // the cost model's latency of its schedule
  std::optional<Measured> measured;    // on the device (median, p10, p90)
};

struct AutoDecision {
  std::string winner;
  sched::Schedule schedule;  // the winner's, ready to run
  std::vector<AutoCandidate> candidates;
  bool cached = false;  // read from the decision cache: nothing was scheduled or measured
  double sequential_ms = 0, winner_ms = 0;  // measured medians
  std::string best_intra;                   // the fastest intra-operator candidate
  double best_intra_ms = 0;
  double speedup_over_sequential() const { return sequential_ms / winner_ms; }
  double speedup_over_intra() const { return best_intra_ms / winner_ms; }
};

// "winner": ..., "cached": ..., "sequential_ms", "winner_ms", "speedup_over_sequential",
// "candidates": [{"algorithm", "predicted_ms", "measured_ms": {median, p10, p90}, "skipped"}].
nlohmann::json to_json(const AutoDecision& decision);
// "lios (measured 1.43x over sequential; candidates: lios 4.10 ms, sequential 5.86 ms, ...)"
std::string summary(const AutoDecision& decision);

// Times the given schedules on the device: one Measured per schedule, in order.
using MeasureCandidates = std::function<std::vector<Measured>(std::span<const sched::Schedule>)>;

// Measures with measure_interleaved(units, weights, ..., options.measure).
AutoDecision auto_schedule(const ir::UnitGraph& units, std::shared_ptr<const ir::Weights> weights,
                           const cost::CostModel& cost, const AutoOptions& options);
// The same with `measure` timing the candidates (tests inject latencies through it).
AutoDecision auto_schedule(const ir::UnitGraph& units, const cost::CostModel& cost,
                           const AutoOptions& options, const MeasureCandidates& measure);

}  // namespace braid::tune
