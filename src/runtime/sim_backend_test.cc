// The simulated A100 as a runtime backend (sim_backend.h): steps are simulated once and
// cached, deterministically; a combined step is its stages with barriers; an independent step
// is each piece's blocks of its model's plan on streams of its own.
#include "runtime/sim_backend.h"

#include <gtest/gtest.h>

#include <cstdio>

#include "base/error.h"
#include "sched/registry.h"
#include "sim/device_spec.h"

namespace braid::runtime {
namespace {

constexpr uint32_t kSqueezenet = 0, kInception = 1;

struct Fixture {
  ModelSet models;
  Fixture() {
    const models::LoadOptions load{.zoo = {.batch = 1, .image_size = 224}, .with_weights = false};
    models.add("squeezenet", {.load = load});
    models.add("inception_v3", {.load = load});
    for (size_t m = 0; m < models.size(); ++m)
      models.set_schedule(m, sched::make_scheduler("greedy")->schedule(models.model(m).units()));
  }
};
const ModelSet& models() {
  static Fixture f;
  return f.models;
}

Step combined(CombinedScheduler& dict, std::vector<SubBlock> sub_blocks) {
  Step s{.kind = StepKind::kCombined};
  InstanceId instance = 0;
  for (const SubBlock& sb : sub_blocks)
    s.pieces.push_back({instance++, sb.model, sb.block, sb.block + 1});
  s.schedules = {&dict.schedule(sub_blocks)};
  return s;
}

TEST(SimBackend, StepsAreDeterministicAndSimulatedOnce) {
  SimBackend gpu(models(), sim::load_device("a100_40gb"));
  CombinedScheduler dict(models(), gpu.stage_cost());
  const Step step = combined(dict, {{kInception, 4}, {kSqueezenet, 3}});
  const StepResult first = gpu.run(step);
  EXPECT_EQ(gpu.simulations(), 1);
  Step again = step;  // other instances, same shape
  for (Piece& p : again.pieces) p.instance += 10;
  const StepResult second = gpu.run(again);
  EXPECT_EQ(gpu.simulations(), 1);
  EXPECT_EQ(first.device_time, second.device_time);
  EXPECT_EQ(first.utilization, second.utilization);
  EXPECT_GT(first.device_time.count(), 0);
  EXPECT_GT(first.utilization, 0);
  EXPECT_LE(first.utilization, 1);

  // A second backend simulates it again, to the same numbers.
  SimBackend other(models(), sim::load_device("a100_40gb"));
  const StepResult fresh = other.run(step);
  EXPECT_EQ(other.simulations(), 1);
  EXPECT_EQ(fresh.device_time, first.device_time);
  EXPECT_EQ(fresh.utilization, first.utilization);

  const Step independent{.kind = StepKind::kIndependent,
                         .pieces = {{0, kInception, 2, 5}, {1, kSqueezenet, 0, 12}}};
  const StepResult a = gpu.run(independent);
  const StepResult b = gpu.run(independent);
  EXPECT_EQ(gpu.simulations(), 2);
  EXPECT_EQ(a.device_time, b.device_time);
  EXPECT_GT(a.device_time.count(), 0);
}

// Each unit's kernels once; a barrier event per stream of every stage but the last.
TEST(SimBackend, CombinedProgramIsTheStagesWithBarriers) {
  SimBackend gpu(models(), sim::load_device("a100_40gb"));
  CombinedScheduler dict(models(), gpu.stage_cost());
  const Step step = combined(dict, {{kSqueezenet, 5}, {kInception, 6}});
  const sim::Program p = gpu.program(step);
  size_t kernels = 0, groups = 0;
  for (const auto& stage : step.schedules[0]->stages) {
    groups += stage.size();
    for (const auto& group : stage)
      for (const UnitRef& u : group)
        kernels += sim::UnitKernels(models().model(u.model).units(), gpu.spec()).of(u.unit).size();
  }
  EXPECT_EQ(p.kernels.size(), kernels);
  EXPECT_EQ(p.num_events, groups);
  size_t waits = 0;
  for (const sim::Op& op : p.ops) waits += op.type == sim::OpType::kWait;
  EXPECT_GT(waits, 0u);
}

TEST(SimBackend, IndependentPiecesRunOnStreamsOfTheirOwn) {
  SimBackend gpu(models(), sim::load_device("a100_40gb"));
  const Step one{.kind = StepKind::kIndependent, .pieces = {{0, kInception, 0, 13}}};
  const Step two{.kind = StepKind::kIndependent,
                 .pieces = {{0, kInception, 0, 13}, {1, kInception, 0, 13}}};
  const sim::Program p1 = gpu.program(one), p2 = gpu.program(two);
  EXPECT_EQ(p2.streams.size(), 2 * p1.streams.size());
  EXPECT_EQ(p2.kernels.size(), 2 * p1.kernels.size());
  EXPECT_EQ(p2.num_events, 2 * p1.num_events);
  const StepResult r1 = gpu.run(one), r2 = gpu.run(two);
  std::printf(
      "inception_v3 whole: one instance %.1f us (occupancy %.2f), two side by side "
      "%.1f us (occupancy %.2f)\n",
      r1.device_time.count(), r1.utilization, r2.device_time.count(), r2.utilization);
  EXPECT_GT(r2.device_time, r1.device_time);
  EXPECT_LT(r2.device_time, 2 * r1.device_time);
}

// TOP's point (top.txt §IV): blocks of two models combined use the idle SMs that each leaves.
TEST(SimBackend, CombinedStepBeatsTheSubBlocksAsSeparateSteps) {
  SimBackend gpu(models(), sim::load_device("a100_40gb"));
  CombinedScheduler dict(models(), gpu.stage_cost());
  const size_t sq = models().model(kSqueezenet).blocks.size();
  double together = 0, apart = 0;
  for (uint32_t b = 0; b < models().model(kInception).blocks.size(); ++b) {
    const SubBlock s{kSqueezenet, uint32_t(b % sq)}, i{kInception, b};
    const StepResult both = gpu.run(combined(dict, {s, i}));
    const StepResult alone_s = gpu.run(combined(dict, {s}));
    const StepResult alone_i = gpu.run(combined(dict, {i}));
    const double sum = alone_s.device_time.count() + alone_i.device_time.count();
    std::printf(
        "squeezenet:%u + inception_v3:%u  combined %.1f us (occ %.2f, %s)  separate "
        "%.1f + %.1f us (occ %.2f, %.2f)\n",
        s.block, i.block, both.device_time.count(), both.utilization,
        std::string(to_string(dict.schedule(std::vector{s, i}).method)).c_str(),
        alone_s.device_time.count(), alone_i.device_time.count(), alone_s.utilization,
        alone_i.utilization);
    EXPECT_LT(both.device_time.count(), sum);
    together += both.device_time.count();
    apart += sum;
  }
  std::printf("all pairs: combined %.1f us, separate %.1f us (%.2fx)\n", together, apart,
              apart / together);
}

TEST(SimBackend, RejectsBadSteps) {
  SimBackend gpu(models(), sim::load_device("a100_40gb"));
  CombinedScheduler dict(models(), gpu.stage_cost());
  Step wrong = combined(dict, {{kSqueezenet, 1}, {kInception, 1}});
  wrong.pieces[1].first_block = 2;  // not the schedule's sub-block
  Step no_schedule = wrong;
  no_schedule.schedules.clear();
  const Step past_end{.kind = StepKind::kIndependent, .pieces = {{0, kInception, 3, 99}}};
  const Step empty_range{.kind = StepKind::kIndependent, .pieces = {{0, kInception, 3, 3}}};
  const Step no_model{.kind = StepKind::kIndependent, .pieces = {{0, 5, 0, 1}}};
  for (const Step& bad : {wrong, no_schedule, past_end, empty_range, no_model, Step{}}) {
    try {
      gpu.run(bad);
      ADD_FAILURE() << "ran " << describe(bad);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    }
  }
  EXPECT_EQ(gpu.simulations(), 0);
}

}  // namespace
}  // namespace braid::runtime
