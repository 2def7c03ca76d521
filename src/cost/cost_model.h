// cost::CostModel — what the schedulers ask: how long a unit, a stage and a transfer take.
// IOS's dynamic program (ios.txt §4) needs the latency of candidate stages; LIOS/HIOS list
// schedulers need unit latencies and transfer times. One interface serves them all, and the
// implementations decide where the numbers come from:
//  - DagCostModel (dag_cost.h): the latencies written in a weighted DAG (papers' examples).
//  - CpuProfiler (cpu_profiler.h): measured on this CPU with the CPU executor, as IOS profiles
//    each stage on the device, cached on disk (profile_cache.h).
//
//   models::LoadedModel m = models::load_model("inception_v3");
//   cost::CpuProfiler profiler(m.units, weights, {.threads_per_stream = 1});
//   Micros a = profiler.unit_latency(u);
//   std::vector<std::vector<UnitId>> stage = {{u}, {v, w}};   // u ∥ (v then w)
//   Micros s = profiler.stage_latency(stage);
//   profiler.stats().measurements;                          // 0 when everything was cached
//
// A cost model is bound to one UnitGraph (which must outlive it) and is const and deterministic
// from the caller's view: asking twice gives the same answer (caching hides behind the const
// methods). Implementations are safe to call from several threads.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "base/ids.h"
#include "base/units.h"
#include "ir/unit_graph.h"

namespace braid::cost {

// What a cost model did, for the schedulers' reports (the DP prints how many stages it asked
// for and how many were actually measured).
struct CostStats {
  int64_t unit_queries = 0;   // unit_latency calls
  int64_t stage_queries = 0;  // stage_latency calls
  int64_t measurements = 0;   // stages actually run on the device (0 when all were cached)
  int64_t cache_hits = 0;     // answers found in the disk cache
  // Stages priced from their units instead of measured: the CPU profiler's measuring budget
  // was spent (profile::CpuProfilerOptions::stage_budget_s).
  int64_t estimates = 0;
};

// When a unit on one device may start after an input from another device (stage form; the
// HIOS schedulers and sched::predicted_latency follow it):
//  - kProducerFinish: once the producer has finished, plus the transfer (hios.txt's text, and
//    every list scheduler's model);
//  - kProducerDevice: once the producer's device has run everything placed on it so far, plus
//    the transfer: HIOS's simulator code (peers.md §3.1, `graph_latency`), which starts a unit
//    at max(its device's timeline, each producer device's current timeline + transfer).
enum class StartRule { kProducerFinish, kProducerDevice };

// What a device knows of one unit's kernels (CostModel::unit_resources): Opara's resource
// demand (opara.txt §3.3; Opara's code reads the block size, registers per thread and shared
// memory of each operator's first kernel, peers.md §4.3) and whether the unit is compute- or
// memory-bound on that device.
struct UnitResources {
  ir::UnitResources per_block;  // the unit's first kernel: threads, registers per thread, shared
                                // memory (bytes) per block
  int64_t blocks = 0;           // that kernel's grid
  // The largest fraction of the device's resident-warp slots one of the unit's kernels fills
  // alone (resident blocks per SM x warps x SMs used, over the device's warps); 0: unknown.
  double occupancy = 0;
  // From the device's own roofline: the unit's FLOPs over its DRAM bytes against the device's
  // FLOP/s over its bandwidth. kUnknown: the device does not say.
  ir::UnitClass bound = ir::UnitClass::kUnknown;
  bool operator==(const UnitResources&) const = default;
};

// UnitResources' arithmetic, one definition for every device that answers (the simulator, the
// CUDA profiler) and for Opara's own fallback. The share of the device's resident-warp slots one
// kernel fills alone: resident blocks per SM (no more than its grid gives each SM) x warps per
// block x SMs its grid reaches, over the device's warps; 0 on a device without warps.
inline double kernel_occupancy(int64_t blocks, int64_t blocks_per_sm, int64_t warps_per_block,
                               int64_t sms, int64_t max_warps_per_sm) {
  const double device_warps = double(max_warps_per_sm) * double(sms);
  if (device_warps <= 0 || blocks <= 0) return 0;
  const int64_t per_sm = std::min(blocks_per_sm, (blocks + sms - 1) / sms);
  return double(per_sm * warps_per_block * std::min(sms, blocks)) / device_warps;
}
// Memory-bound where the FLOPs per byte moved fall below the roofline's ridge point (FLOP/s over
// bytes/s); compute-bound otherwise, and where nothing moves.
inline ir::UnitClass roofline_class(double flops, double bytes, double ridge) {
  return bytes > 0 && flops / bytes < ridge ? ir::UnitClass::kMemory : ir::UnitClass::kCompute;
}

class CostModel {
 public:
  explicit CostModel(const ir::UnitGraph& units) : units_(&units) {}
  virtual ~CostModel() = default;
  CostModel(const CostModel&) = delete;
  CostModel& operator=(const CostModel&) = delete;

  virtual std::string_view name() const = 0;
  // The latency of `unit` run alone.
  virtual Micros unit_latency(UnitId unit) const = 0;
  // One IOS stage (ios.txt §3): `groups` run concurrently, group i on stream i, the units of a
  // group one after another. Groups must be non-empty and independent of each other.
  virtual Micros stage_latency(std::span<const std::vector<UnitId>> groups) const = 0;
  // How many units run at full speed at once: a stage of more groups shares them (the CPU
  // profiler: the CPUs it may use over threads per stream). Infinity: every group has its own
  // device, as in the papers' DAGs and the roofline.
  virtual double parallelism() const { return std::numeric_limits<double>::infinity(); }
  // Whether stage_latency runs the stage on a device (seconds per new stage): a search should
  // then ask the lower bounds first and measure only what they do not rule out.
  virtual bool measures() const { return false; }
  // A lower bound on stage_latency(groups) that needs no measurement: the slowest group's
  // summed unit latencies (a group sharing the machine never runs faster than alone), and the
  // summed work over parallelism(). A search may skip a stage this bound already rules out
  // instead of measuring it; implementations keep stage_latency >= this bound.
  virtual Micros stage_lower_bound(std::span<const std::vector<UnitId>> groups) const {
    Micros slowest{0}, work{0};
    for (const auto& group : groups) {
      Micros sum{0};
      for (UnitId u : group) sum += unit_latency(u);
      slowest = std::max(slowest, sum);
      work += sum;
    }
    return std::max(slowest, Micros{work.count() / parallelism()});
  }
  // An operator-merge stage (ios.txt §4.2): the units run as one wider kernel. By default the
  // units one after another, which is what an executor without merged kernels does.
  virtual Micros merge_latency(std::span<const UnitId> units) const {
    std::vector<UnitId> group(units.begin(), units.end());
    return stage_latency(std::span<const std::vector<UnitId>>(&group, 1));
  }
  // A lower bound on merge_latency(units) that needs no measurement; by default that of the
  // units run as one group, matching merge_latency's default.
  virtual Micros merge_lower_bound(std::span<const UnitId> units) const {
    std::vector<UnitId> group(units.begin(), units.end());
    return stage_lower_bound(std::span<const std::vector<UnitId>>(&group, 1));
  }
  // The slowest of `units` alone: a lower bound of a merged kernel that computes every unit's
  // outputs (at least the work of each), for a cost model that measures merged kernels (their
  // sum, the default bound, would hide exactly the merges that pay).
  Micros slowest_unit(std::span<const UnitId> units) const {
    Micros slowest{0};
    for (UnitId u : units) slowest = std::max(slowest, unit_latency(u));
    return slowest;
  }
  // Moldable units (an allotment, sched/schedule.h): the most threads one unit may take here;
  // 1 where units have no allotment (a GPU kernel brings its own parallelism).
  virtual int max_threads() const { return 1; }
  // The latency of `unit` run alone on `threads` threads (1..max_threads()). By default
  // unit_latency: no gain from more threads.
  virtual Micros unit_latency_at(UnitId unit, int threads) const { return unit_latency(unit); }
  // A stage whose group i runs on threads[i] threads (one entry per group, summing to at most
  // max_threads()). By default the slowest group's units at their threads, the groups not
  // slowing each other down.
  virtual Micros stage_latency_at(std::span<const std::vector<UnitId>> groups,
                                  std::span<const int> threads) const {
    Micros slowest{0};
    for (size_t g = 0; g < groups.size(); ++g) {
      Micros sum{0};
      for (UnitId u : groups[g]) sum += unit_latency_at(u, g < threads.size() ? threads[g] : 1);
      slowest = std::max(slowest, sum);
    }
    return slowest;
  }
  // Copying the tensors of `edge` between devices (HIOS); 0 on one device.
  virtual Micros transfer_latency(const ir::UnitEdge& edge) const { return Micros{0}; }
  // Where a unit waits for an input from another device (StartRule above).
  virtual StartRule start_rule() const { return StartRule::kProducerFinish; }
  // What the device knows of `unit`'s kernels (UnitResources above); nullopt where it knows
  // nothing (the default: the CPU profiler, weighted DAGs, the roofline) or the unit launches
  // no kernel.
  virtual std::optional<UnitResources> unit_resources(UnitId unit) const { return std::nullopt; }

  const ir::UnitGraph& units() const { return *units_; }
  virtual CostStats stats() const {
    return {unit_queries_.load(), stage_queries_.load(), measurements_.load(), cache_hits_.load(),
            estimates_.load()};
  }

 protected:
  void count_unit_query() const { ++unit_queries_; }
  void count_stage_query() const { ++stage_queries_; }
  void count_measurement() const { ++measurements_; }
  void count_cache_hit() const { ++cache_hits_; }
  void count_estimate() const { ++estimates_; }

 private:
  const ir::UnitGraph* units_;
  mutable std::atomic<int64_t> unit_queries_{0}, stage_queries_{0}, measurements_{0},
      cache_hits_{0}, estimates_{0};
};

}  // namespace braid::cost
