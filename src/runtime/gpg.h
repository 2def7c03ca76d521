// GPG (top.txt §V-C, Algorithm 2, Eqs. 5-6): a learned scheduler of combined blocks, in place of
// IOS's dynamic program (`--intra gpg:DIR`), trained by `braid train gpg` (python/braid/gpg.py)
// and run here without PyTorch, its networks evaluated by braid's reference executor.
//
//   runtime::GpgScheduler gpg("policies/gpg");
//   CombineOptions o{.intra = std::make_shared<runtime::GpgScheduler>("policies/gpg")};
//
// The node embedding is Eq. 5 (e_v = h1(Σ_parents g1(e_p)) + s_v, top-down once per combination)
// and the state Eq. 6 (z = h2(Σ_leaves g2(e_v)) over the leaves of what is left). Where the paper
// indexes one ending ⌊m·M⌋ of a list in an unstated order, GPG here scores candidates (issue 30's
// second option): the sub-blocks share no edge, so an ending of the union is an ending of some
// sub-blocks, and each sub-block's ending is scored by the policy network, π(z, c), with c = [Σ_{v
// in it} e_v, candidate_extras] (intra.h). A stage takes every sub-block's best ending, the best
// scores first while within s groups (at least one). A sub-block sits out of a stage only for s (a
// first version that scored "none" too learned to schedule one sub-block per stage; docs/top.md).
// DIR/policy.json: {"format": "braid.policy/1", "kind": "gpg", "features": [names], "r", "s",
// "message_size", "embedding_size", "batch", "networks": {"g1", "h1", "g2", "h2", "policy"}}.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "runtime/combined.h"
#include "runtime/intra.h"
#include "runtime/policy_files.h"

namespace braid::runtime {

inline constexpr std::string_view kGpgPrefix = "gpg:";

class GpgScheduler final : public IntraScheduler {
 public:
  // kNotFound without DIR/policy.json; kInvalidArgument for a manifest or network that does not
  // fit (naming the field or file), or features other than this braid's.
  explicit GpgScheduler(const std::filesystem::path& dir);
  ~GpgScheduler() override;

  std::string_view name() const override { return name_; }
  std::vector<std::vector<std::vector<UnitRef>>> schedule(
      const ModelSet& models, const StageCost& cost,
      std::span<const SubBlock> combination) const override;
  // The stages of a combined block, first to last.
  std::vector<std::vector<std::vector<UnitRef>>> schedule(const IntraBlock& block) const;
  const sched::EndingLimits& limits() const { return limits_; }

 private:
  std::string name_;
  sched::EndingLimits limits_;
  size_t message_ = 0, embedding_ = 0;
  std::unique_ptr<PolicyNetwork> g1_, h1_, g2_, h2_, policy_;
};

// The intra-block scheduler a name gives: "dp" (null: IOS's DP) or "gpg:DIR".
// kInvalidArgument for another name, listing the known ones.
std::shared_ptr<const IntraScheduler> make_intra_scheduler(std::string_view name);

}  // namespace braid::runtime
