// `sync`: synchronous multi-model inference in the manner of POS (top.txt §II [11]): the models
// are merged into one graph, scheduled once offline, and run as one unit, which assumes every
// model has an input at once. A round dequeues one task of every model, only when every queue
// has one, and the next round starts when the last model of this one is done; the models' queues
// with higher arrival rates therefore back up (Fig. 17).
//
// The merged graph here: step k of a round runs block k of every model that has one, as one
// combined block scheduled by the stage dict (IOS's DP across the models' blocks, or zipped
// above H). POS searches the merged graph with its own algorithm and is not block-aligned; what
// is faithful is the synchronization and that the models' operators are co-scheduled, not the
// exact stages.
#include <memory>

#include "base/error.h"
#include "runtime/policy.h"

namespace braid::runtime {
namespace {

class SyncPolicy final : public Policy {
 public:
  std::string_view name() const override { return "sync"; }

  Decision decide(const RuntimeState& state) override {
    return {.interval_us = std::vector<double>(state.model.size(), 0.0), .partition = {}};
  }

  std::vector<bool> admit(const RuntimeState& state, const std::vector<bool>& due) override {
    bool all = state.instances.empty();
    for (size_t m = 0; m < due.size(); ++m) all = all && due[m] && state.model[m].queued > 0;
    return std::vector<bool>(due.size(), all);
  }

  std::optional<Step> next_step(const RuntimeState& state) override {
    if (state.instances.empty()) return std::nullopt;
    BRAID_CHECK(state.combiner != nullptr, ErrorCode::kInternal, "sync needs a stage dict");
    Step step{.kind = StepKind::kCombined};
    std::vector<SubBlock> subs;
    for (const InstanceState& inst : state.instances) {
      step.pieces.push_back({inst.id, inst.model, inst.next_block, inst.next_block + 1});
      subs.push_back({inst.model, inst.next_block});
    }
    step.schedules = {&state.combiner->schedule(subs)};
    return step;
  }
};

}  // namespace

std::unique_ptr<Policy> make_sync_policy(const PolicyOptions&) {
  return std::make_unique<SyncPolicy>();
}

}  // namespace braid::runtime
