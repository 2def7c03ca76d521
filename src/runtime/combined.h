// Combined blocks (top.txt §IV, §V-D, §VI-A): blocks of several instances — of one model or of
// several — scheduled as one graph, so operators of different tasks run side by side. The
// combined graph is the disjoint union of its sub-blocks: dependences between different
// instances are cut, and so are a sub-block's edges from earlier blocks (their tensors are
// ready before the step starts).
//
//   runtime::SimStageCost cost(set, a100);                  // or ModelStageCost
//   runtime::CombinedScheduler dict(set, cost, {.max_sub_blocks = 4});
//   const CombinedSchedule& s = dict.schedule({{0, 3}, {1, 0}});   // searched once...
//   dict.schedule({{1, 0}, {0, 3}});                               // ...then a lookup
//
// How a combination is scheduled (the paper uses IOS's DP, then its learned GPG, §V-C, Fig. 13;
// the DP's states multiply across sub-blocks):
//  - each sub-block alone: IOS's dynamic program (concurrent stages, pruning r and s) on the
//    sub-block's units under the stage cost;
//  - zip: stage k of the combination runs stage k of every sub-block side by side (groups
//    concatenated); always available, linear in the sub-blocks;
//  - dp: IOS's dynamic program over the whole union, when it has at most 64 units and the
//    product of the sub-blocks' own state counts (the union's states) is within
//    dp_state_limit; the faster of zip and dp by the stage cost is kept;
//  - gpg: with CombineOptions::intra set (`--intra gpg:DIR`), a learned scheduler in place of
//    the dp (runtime/gpg.h), for any size; the faster of zip and its schedule is kept.
// A combination of more than max_sub_blocks (H) sub-blocks is a superblock: it is not
// optimized (its sub-blocks' own stages zipped, priced, never searched).
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "cost/cost_model.h"
#include "runtime/model_set.h"
#include "runtime/step.h"

namespace braid::runtime {

// Stage latencies across models: groups of units of any loaded models, run concurrently (group
// i on stream i), the units of a group one after another.
class StageCost {
 public:
  virtual ~StageCost() = default;
  virtual std::string_view name() const = 0;
  virtual Micros unit(UnitRef u) const = 0;
  virtual Micros stage(std::span<const std::vector<UnitRef>> groups) const = 0;
};

enum class CombineMethod : uint8_t { kSingle, kZip, kDp, kSuperblock, kGpg };
std::string_view to_string(CombineMethod);

struct CombinedSchedule {
  std::vector<SubBlock> sub_blocks;  // sorted
  // stages[k][g]: group g of stage k, its units in order. Stages run one after another.
  std::vector<std::vector<std::vector<UnitRef>>> stages;
  Micros predicted{0};  // sum of the stages' costs
  CombineMethod method = CombineMethod::kSingle;
  bool optimized() const { return method != CombineMethod::kSuperblock; }
};

// Stage k of the result runs stage k of every schedule side by side (groups concatenated in
// schedule order): the zip of a combination's sub-blocks.
std::vector<std::vector<std::vector<UnitRef>>> zip_stages(
    std::span<const CombinedSchedule* const> schedules);
// What `stages` cost, one after another.
Micros stages_cost(const StageCost& cost,
                   std::span<const std::vector<std::vector<UnitRef>>> stages);

// A learned scheduler of combined blocks in place of IOS's DP (runtime/gpg.h).
class IntraScheduler {
 public:
  virtual ~IntraScheduler() = default;
  virtual std::string_view name() const = 0;
  // The stages of a sorted combination of at least two sub-blocks, first to last.
  virtual std::vector<std::vector<std::vector<UnitRef>>> schedule(
      const ModelSet& models, const StageCost& cost,
      std::span<const SubBlock> combination) const = 0;
};

struct CombineOptions {
  int max_group_size = 3;  // r (ios.txt §4.3, top.txt §V-D)
  int max_groups = 8;      // s
  int max_sub_blocks = 4;  // H: more is a superblock
  // The union DP's cost grows with its states (sim A100, Inception V3 sub-blocks: 527 states
  // 0.05 s, 5,329 states 4.3 s, 38,471 states 57 s; bench/README.md): 2,000 keeps a miss under
  // about a second, 2% better than zip alone over 39 combinations.
  int64_t dp_state_limit = 2000;
  // Null: IOS's DP (within dp_state_limit). Else this scheduler, instead of the DP.
  std::shared_ptr<const IntraScheduler> intra;
};

struct CombineStats {
  int64_t lookups = 0, hits = 0;  // the stage dict
  int64_t searched = 0;           // combinations scheduled (misses)
  int64_t dp = 0, zip = 0, superblocks = 0, gpg = 0;
  double search_seconds = 0;  // time spent scheduling misses
  // IOS's DP over unions of sub-blocks (not the sub-blocks alone): states memoized, time taken.
  int64_t dp_runs = 0, dp_states = 0;
  double dp_seconds = 0;
  // The intra-block scheduler (CombineOptions::intra): combinations it scheduled, time taken.
  int64_t intra_runs = 0;
  double intra_seconds = 0;
};

class CombinedScheduler {
 public:
  // `models` and `cost` must outlive it. Throws kInvalidArgument for r, s or H below 1.
  CombinedScheduler(const ModelSet& models, const StageCost& cost, CombineOptions options = {});
  ~CombinedScheduler();

  // The schedule of a combination (any order; no sub-block twice, else kInvalidArgument).
  // Cached by the sorted combination: the reference stays valid for the scheduler's life.
  // Thread-safe.
  const CombinedSchedule& schedule(std::span<const SubBlock> combination);
  // A sub-block's own schedule (the DP on it alone), cached likewise.
  const CombinedSchedule& single(SubBlock sub_block) { return schedule({&sub_block, 1}); }

  CombineStats stats() const;
  const CombineOptions& options() const { return options_; }
  const ModelSet& models() const { return *models_; }
  const StageCost& cost() const { return *cost_; }

 private:
  // The dict's entry for a sorted, checked combination, searched on a miss. `count`: a caller's
  // lookup (stats), not one made while searching a combination of this one.
  const CombinedSchedule& lookup(std::vector<SubBlock> key, bool count);
  CombinedSchedule search(std::vector<SubBlock> combination);

  const ModelSet* models_;
  const StageCost* cost_;
  CombineOptions options_;
  mutable std::mutex mutex_;
  std::map<std::vector<SubBlock>, std::unique_ptr<CombinedSchedule>> dict_;
  std::map<SubBlock, int64_t> single_states_;  // the DP's state count of each sub-block alone
  CombineStats stats_;
};

// IOS's dynamic program (concurrent stages only, r and s of `options`, no state limit) over the
// union of a combination of at most 64 units in all (kInvalidArgument otherwise): its stages and
// the states it memoized. What CombinedScheduler runs within dp_state_limit.
struct UnionDp {
  std::vector<std::vector<std::vector<UnitRef>>> stages;
  int64_t states = 0;
};
UnionDp union_dp(const ModelSet& models, const StageCost& cost, const CombineOptions& options,
                 std::span<const SubBlock> combination);

// Every unit of the combination's sub-blocks exactly once, each after its producers in the same
// sub-block (an earlier stage, or earlier in its group): kInternal naming the first that is not.
void check_combined_schedule(const ModelSet& models, const CombinedSchedule& schedule);

// Stage costs from each model's own cost model (cpu, roofline, ...): a stage of one model is
// asked of that model's cost model; a stage mixing models is priced by the lower bound every
// cost model keeps (cost_model.h: the slowest group, the summed work over the machine's
// parallelism), since no measured or simulated model spans two graphs.
class ModelStageCost final : public StageCost {
 public:
  explicit ModelStageCost(std::vector<const cost::CostModel*> per_model);
  std::string_view name() const override { return "per-model"; }
  Micros unit(UnitRef u) const override;
  Micros stage(std::span<const std::vector<UnitRef>> groups) const override;

 private:
  std::vector<const cost::CostModel*> per_model_;
};

}  // namespace braid::runtime
