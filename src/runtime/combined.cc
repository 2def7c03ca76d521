#include "runtime/combined.h"

#include <algorithm>
#include <limits>
#include <set>

#include "base/error.h"
#include "sched/ios.h"

namespace braid::runtime {

using Stages = std::vector<std::vector<std::vector<UnitRef>>>;

std::string_view to_string(CombineMethod method) {
  switch (method) {
    case CombineMethod::kSingle:
      return "single";
    case CombineMethod::kZip:
      return "zip";
    case CombineMethod::kDp:
      return "dp";
    case CombineMethod::kSuperblock:
      return "superblock";
    case CombineMethod::kGpg:
      return "gpg";
  }
  return "single";
}

Stages zip_stages(std::span<const CombinedSchedule* const> schedules) {
  Stages out;
  for (const CombinedSchedule* s : schedules)
    for (size_t k = 0; k < s->stages.size(); ++k) {
      if (out.size() <= k) out.emplace_back();
      out[k].insert(out[k].end(), s->stages[k].begin(), s->stages[k].end());
    }
  return out;
}

Micros stages_cost(const StageCost& cost,
                   std::span<const std::vector<std::vector<UnitRef>>> stages) {
  Micros total{0};
  for (const auto& stage : stages) total += cost.stage(stage);
  return total;
}

namespace {

// The combined graph of some sub-blocks as a synthetic UnitGraph (what IOS's DP searches): the
// sub-blocks' units in (sub-block, unit id) order, and the edges inside each sub-block. Edges
// from outside the combination are cut: their tensors are ready before the step starts.
struct UnionGraph {
  ir::UnitGraph graph;
  std::vector<UnitRef> refs;  // synthetic unit i -> the model's unit
};

UnionGraph union_graph(const ModelSet& models, std::span<const SubBlock> combination) {
  std::vector<ir::Unit> units;
  std::vector<ir::UnitEdge> edges;
  std::vector<UnitRef> refs;
  for (const SubBlock& sb : combination) {
    const RuntimeModel& model = models.model(sb.model);
    const ir::UnitGraph& g = model.units();
    const std::vector<UnitId>& block = model.blocks[sb.block].units;
    const size_t base = refs.size();
    for (UnitId u : block) {
      units.push_back({.name = model.name + "/" + g.unit(u).name});
      refs.push_back({sb.model, u});
    }
    for (size_t i = 0; i < block.size(); ++i)
      for (UnitId v : g.successors(block[i])) {
        auto it = std::lower_bound(block.begin(), block.end(), v);
        if (it == block.end() || *it != v) continue;  // v is in a later block
        edges.push_back({.from = make_id<UnitId>(base + i),
                         .to = make_id<UnitId>(base + size_t(it - block.begin()))});
      }
  }
  UnionGraph out{ir::UnitGraph::from_dag("combined", std::move(units), std::move(edges)),
                 std::move(refs)};
  // The units were given in a topological order, so from_dag keeps their numbering.
  for (size_t i = 0; i < out.refs.size(); ++i)
    BRAID_ASSERT(out.graph.unit(make_id<UnitId>(i)).name ==
                     models.model(out.refs[i].model).name + "/" +
                         models.model(out.refs[i].model).units().unit(out.refs[i].unit).name,
                 "combined graph renumbered");
  return out;
}

// IOS's cost model view of a StageCost on a union graph: synthetic ids mapped back to units.
class UnionCost final : public cost::CostModel {
 public:
  UnionCost(const UnionGraph& g, const StageCost& cost)
      : CostModel(g.graph), refs_(&g.refs), cost_(&cost) {}
  std::string_view name() const override { return cost_->name(); }
  Micros unit_latency(UnitId u) const override {
    count_unit_query();
    return cost_->unit((*refs_)[index(u)]);
  }
  Micros stage_latency(std::span<const std::vector<UnitId>> groups) const override {
    count_stage_query();
    std::vector<std::vector<UnitRef>> mapped;
    for (const auto& group : groups) {
      mapped.emplace_back();
      for (UnitId u : group) mapped.back().push_back((*refs_)[index(u)]);
    }
    return cost_->stage(mapped);
  }

 private:
  const std::vector<UnitRef>* refs_;
  const StageCost* cost_;
};

}  // namespace

UnionDp union_dp(const ModelSet& models, const StageCost& cost, const CombineOptions& options,
                 std::span<const SubBlock> combination) {
  size_t units = 0;
  for (const SubBlock& sb : combination) {
    BRAID_CHECK(sb.model < models.size() && sb.block < models.model(sb.model).blocks.size(),
                ErrorCode::kInvalidArgument, "union dp: no block ", sb.block, " of model ",
                sb.model);
    units += models.model(sb.model).blocks[sb.block].units.size();
  }
  BRAID_CHECK(units >= 1 && units <= size_t(sched::kIosMaxPartSize), ErrorCode::kInvalidArgument,
              "union dp: a combination of 1 to ", sched::kIosMaxPartSize, " units, got ", units);
  const UnionGraph g = union_graph(models, combination);
  const UnionCost union_cost(g, cost);
  sched::ScheduleOptions ios;
  ios.max_streams = 0;  // s bounds the groups
  ios.max_group_size = options.max_group_size;
  ios.max_groups = options.max_groups;
  ios.ios_search = sched::IosSearch::kDynamicProgram;
  const sched::IosScheduler scheduler(ios, sched::IosVariant::kParallel, sched::kIosMaxPartSize);
  sched::SearchStats stats;
  const sched::Schedule s = scheduler.schedule(g.graph, union_cost, &stats);
  UnionDp out;
  out.states = stats.states;
  for (const sched::Stage& stage : s.stages) {
    auto& groups = out.stages.emplace_back();
    for (const auto& group : stage.groups) {
      auto& mapped = groups.emplace_back();
      for (UnitId u : group) mapped.push_back(g.refs[index(u)]);
    }
  }
  return out;
}

void check_combined_schedule(const ModelSet& models, const CombinedSchedule& s) {
  std::map<UnitRef, std::pair<size_t, std::pair<size_t, size_t>>> where;  // stage, (group, pos)
  for (size_t k = 0; k < s.stages.size(); ++k)
    for (size_t g = 0; g < s.stages[k].size(); ++g)
      for (size_t i = 0; i < s.stages[k][g].size(); ++i)
        BRAID_CHECK(where.emplace(s.stages[k][g][i], std::pair(k, std::pair(g, i))).second,
                    ErrorCode::kInternal, "combined schedule places a unit twice");
  size_t total = 0;
  for (const SubBlock& sb : s.sub_blocks) {
    const RuntimeModel& model = models.model(sb.model);
    const std::vector<UnitId>& block = model.blocks[sb.block].units;
    total += block.size();
    for (UnitId u : block) {
      auto to = where.find({sb.model, u});
      BRAID_CHECK(to != where.end(), ErrorCode::kInternal, "combined schedule misses unit '",
                  model.units().unit(u).name, "' of ", model.name);
      for (UnitId p : model.units().predecessors(u)) {
        if (model.block_of_unit[index(p)] != sb.block) continue;
        auto from = where.find({sb.model, p});
        BRAID_CHECK(from != where.end(), ErrorCode::kInternal, "combined schedule misses unit");
        const auto [ks, gp] = from->second;
        const auto [kd, gd] = to->second;
        const bool ordered = ks < kd || (ks == kd && gp.first == gd.first && gp.second < gd.second);
        BRAID_CHECK(ordered, ErrorCode::kInternal, "combined schedule runs '",
                    model.units().unit(u).name, "' before its producer '",
                    model.units().unit(p).name, "'");
      }
    }
  }
  BRAID_CHECK(where.size() == total, ErrorCode::kInternal,
              "combined schedule places units outside its sub-blocks");
}

CombinedScheduler::CombinedScheduler(const ModelSet& models, const StageCost& cost,
                                     CombineOptions options)
    : models_(&models), cost_(&cost), options_(options) {
  BRAID_CHECK(options.max_group_size >= 1 && options.max_groups >= 1 && options.max_sub_blocks >= 1,
              ErrorCode::kInvalidArgument,
              "combined blocks: r, s and H must be >= 1, got r = ", options.max_group_size,
              ", s = ", options.max_groups, ", H = ", options.max_sub_blocks);
}

CombinedScheduler::~CombinedScheduler() = default;

const CombinedSchedule& CombinedScheduler::schedule(std::span<const SubBlock> combination) {
  BRAID_CHECK(!combination.empty(), ErrorCode::kInvalidArgument,
              "combined blocks: an empty combination");
  std::vector<SubBlock> key(combination.begin(), combination.end());
  std::sort(key.begin(), key.end());
  for (size_t i = 0; i < key.size(); ++i) {
    BRAID_CHECK(
        key[i].model < models_->size() && key[i].block < models_->model(key[i].model).blocks.size(),
        ErrorCode::kInvalidArgument, "combined blocks: no block ", key[i].block, " of model ",
        key[i].model);
    BRAID_CHECK(i == 0 || key[i] != key[i - 1], ErrorCode::kInvalidArgument,
                "combined blocks: block ", key[i].block, " of model ", key[i].model,
                " appears twice");
  }
  return lookup(std::move(key), true);
}

const CombinedSchedule& CombinedScheduler::lookup(std::vector<SubBlock> key, bool count) {
  {
    std::lock_guard lock(mutex_);
    if (count) ++stats_.lookups;
    if (auto it = dict_.find(key); it != dict_.end()) {
      if (count) ++stats_.hits;
      return *it->second;
    }
  }
  // Searched without the lock, so other combinations are served meanwhile; two threads missing
  // the same combination both search it and the first result is kept.
  const auto start = std::chrono::steady_clock::now();
  auto found = std::make_unique<CombinedSchedule>(search(key));
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  std::lock_guard lock(mutex_);
  auto [it, inserted] = dict_.emplace(std::move(key), std::move(found));
  if (inserted) {
    if (count) stats_.search_seconds += took.count();  // a nested search is inside its caller's
    switch (it->second->method) {
      case CombineMethod::kSingle:
        ++stats_.searched;
        break;
      case CombineMethod::kZip:
        ++stats_.searched;
        ++stats_.zip;
        break;
      case CombineMethod::kDp:
        ++stats_.searched;
        ++stats_.dp;
        break;
      case CombineMethod::kSuperblock:
        ++stats_.superblocks;
        break;
      case CombineMethod::kGpg:
        ++stats_.searched;
        ++stats_.gpg;
        break;
    }
  }
  return *it->second;
}

CombinedSchedule CombinedScheduler::search(std::vector<SubBlock> combination) {
  CombinedSchedule out;
  out.sub_blocks = combination;
  if (combination.size() == 1) {
    UnionDp dp = union_dp(*models_, *cost_, options_, combination);
    out.stages = std::move(dp.stages);
    out.predicted = stages_cost(*cost_, out.stages);
    out.method = CombineMethod::kSingle;
    check_combined_schedule(*models_, out);
    std::lock_guard lock(mutex_);
    single_states_[combination[0]] = dp.states;
    return out;
  }
  std::vector<const CombinedSchedule*> singles;
  int64_t states = 1;
  size_t units = 0;
  for (const SubBlock& sb : combination) {
    singles.push_back(&lookup({sb}, false));
    std::lock_guard lock(mutex_);
    const int64_t s = single_states_.at(sb);
    states = states > options_.dp_state_limit / std::max<int64_t>(s, 1)
                 ? std::numeric_limits<int64_t>::max()
                 : states * s;
    units += models_->model(sb.model).blocks[sb.block].units.size();
  }
  out.stages = zip_stages(singles);
  out.predicted = stages_cost(*cost_, out.stages);
  out.method = CombineMethod::kZip;
  if (combination.size() > size_t(options_.max_sub_blocks)) {
    out.method = CombineMethod::kSuperblock;
  } else if (options_.intra != nullptr) {
    const auto start = std::chrono::steady_clock::now();
    Stages stages = options_.intra->schedule(*models_, *cost_, combination);
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    {
      std::lock_guard lock(mutex_);
      ++stats_.intra_runs;
      stats_.intra_seconds += took.count();
    }
    const Micros predicted = stages_cost(*cost_, stages);
    if (predicted < out.predicted) {
      out.stages = std::move(stages);
      out.predicted = predicted;
      out.method = CombineMethod::kGpg;
    }
  } else if (units <= size_t(sched::kIosMaxPartSize) && states <= options_.dp_state_limit) {
    const auto start = std::chrono::steady_clock::now();
    UnionDp dp = union_dp(*models_, *cost_, options_, combination);
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    {
      std::lock_guard lock(mutex_);
      ++stats_.dp_runs;
      stats_.dp_states += dp.states;
      stats_.dp_seconds += took.count();
    }
    const Micros predicted = stages_cost(*cost_, dp.stages);
    if (predicted < out.predicted) {
      out.stages = std::move(dp.stages);
      out.predicted = predicted;
      out.method = CombineMethod::kDp;
    }
  }
  check_combined_schedule(*models_, out);
  return out;
}

CombineStats CombinedScheduler::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

ModelStageCost::ModelStageCost(std::vector<const cost::CostModel*> per_model)
    : per_model_(std::move(per_model)) {
  for (const cost::CostModel* c : per_model_)
    BRAID_CHECK(c != nullptr, ErrorCode::kInvalidArgument, "ModelStageCost: a null cost model");
}

Micros ModelStageCost::unit(UnitRef u) const {
  BRAID_CHECK(u.model < per_model_.size(), ErrorCode::kInvalidArgument,
              "ModelStageCost: no cost model for model ", u.model);
  return per_model_[u.model]->unit_latency(u.unit);
}

Micros ModelStageCost::stage(std::span<const std::vector<UnitRef>> groups) const {
  std::set<uint32_t> involved;
  for (const auto& group : groups)
    for (const UnitRef& u : group) involved.insert(u.model);
  if (involved.size() == 1) {
    const uint32_t m = *involved.begin();
    BRAID_CHECK(m < per_model_.size(), ErrorCode::kInvalidArgument,
                "ModelStageCost: no cost model for model ", m);
    std::vector<std::vector<UnitId>> own;
    for (const auto& group : groups) {
      auto& g = own.emplace_back();
      for (const UnitRef& u : group) g.push_back(u.unit);
    }
    return per_model_[m]->stage_latency(own);
  }
  // No cost model spans two graphs: the bound every one of them keeps (cost_model.h), the
  // slowest group and the summed work over the least parallel model's machine.
  double parallelism = std::numeric_limits<double>::infinity();
  for (uint32_t m : involved) parallelism = std::min(parallelism, per_model_.at(m)->parallelism());
  Micros slowest{0}, work{0};
  for (const auto& group : groups) {
    Micros sum{0};
    for (const UnitRef& u : group) sum += unit(u);
    slowest = std::max(slowest, sum);
    work += sum;
  }
  return std::max(slowest, Micros{work.count() / parallelism});
}

}  // namespace braid::runtime
