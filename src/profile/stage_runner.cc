#include "profile/stage_runner.h"

#include <algorithm>
#include <random>

#include "sched/validate.h"

namespace braid::profile {

Micros percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  const double pos = p * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(pos);
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return Micros{v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo))};
}

void StageRunner::set_inputs(const exec::PreparedModel& model, exec::Request& request) const {
  for (size_t i = 0; i < inputs.size(); ++i) model.set_input(request, i, inputs[i]);
}

std::unique_ptr<const StageRunner> make_stage_runner(const ir::UnitGraph& units,
                                                     const ir::Weights* weights,
                                                     std::span<const std::vector<UnitId>> groups,
                                                     uint64_t input_seed,
                                                     std::span<const int> threads, bool merge) {
  std::vector<UnitId> flat;
  for (const auto& group : groups) flat.insert(flat.end(), group.begin(), group.end());
  auto runner = std::make_unique<StageRunner>();
  runner->stage = cost::extract(*units.graph(), units, flat, weights);
  const cost::ExtractedStage& stage = runner->stage;

  sched::Schedule schedule;
  schedule.algorithm = "profile";
  schedule.model = stage.graph->name();
  sched::Stage concurrent;
  if (merge) concurrent.kind = sched::StageKind::kMerge;
  size_t position = 0;
  for (const auto& group : groups) {
    std::vector<UnitId> mapped;
    for (size_t i = 0; i < group.size(); ++i) mapped.push_back(stage.unit_of[position++]);
    concurrent.groups.push_back(std::move(mapped));
  }
  if (!threads.empty()) {
    concurrent.threads.assign(threads.begin(), threads.end());
    for (int k : threads) schedule.cores += k;
  }
  schedule.stages.push_back(std::move(concurrent));
  // Dependent groups are not a stage; the validator names the offending edge.
  sched::validate_or_throw(stage.units, schedule);
  runner->plan = sched::lower(stage.units, schedule);

  std::mt19937_64 rng(input_seed);
  std::uniform_real_distribution<float> noise(-1.0f, 1.0f);
  for (ValueId v : stage.graph->inputs()) {
    runner->inputs.emplace_back(stage.graph->value(v).type.elements());
    for (float& x : runner->inputs.back()) x = noise(rng);
  }
  return runner;
}

}  // namespace braid::profile
