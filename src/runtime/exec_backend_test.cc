#include "runtime/exec_backend.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>

#include "base/error.h"
#include "runtime/combined.h"
#include "runtime/sim_backend.h"
#include "runtime/test_models.h"
#include "sched/random_schedule.h"
#include "sched/registry.h"
#include "sim/device_spec.h"

namespace braid::runtime {
namespace {

using testing_models::Outputs;

// SqueezeNet at 64x64 on one lane; a small Inception V3 on three random lanes (events between
// lanes, so blocks end with cross-lane waits), both cut into IR blocks.
ModelSet make_set() {
  ModelSet set;
  AddOptions squeezenet;
  squeezenet.load.zoo.image_size = 64;
  set.add("squeezenet", squeezenet);
  set.set_schedule(0, sched::make_scheduler("sequential")->schedule(set.model(0).units()));
  AddOptions inception;
  inception.load.zoo.image_size = 96;
  set.add("inception_v3", inception);
  set.set_schedule(1, sched::random_stream_schedule(set.model(1).units(), 3, 5));
  return set;
}

using testing_models::random_inputs;

// Same kernels, same plan, own arena: the values must not depend on what ran in between.
void expect_equal(const Outputs& got, const Outputs& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].size(), want[i].size()) << what << " output " << i;
    EXPECT_TRUE(std::any_of(want[i].begin(), want[i].end(), [](float x) { return x != 0; }))
        << what << ": an all-zero output compares equal to anything left unwritten";
    size_t mismatches = 0;
    for (size_t k = 0; k < got[i].size(); ++k)
      if (got[i][k] != want[i][k] && ++mismatches <= 3)
        ADD_FAILURE() << what << " output " << i << "[" << k << "]: " << got[i][k]
                      << " != " << want[i][k];
    EXPECT_EQ(mismatches, 0u) << what << " output " << i;
  }
}

void expect_error(ErrorCode code, const std::string& needle, auto&& call) {
  try {
    call();
    ADD_FAILURE() << "expected braid::Error containing '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

struct Task {
  uint32_t model;
  uint64_t seed;
  uint32_t next_block = 0;
};

// Combined blocks of `pieces` (one block each): each piece joins the first combined block with
// room (under `h` sub-blocks) and no sub-block of its (model, block); pieces regrouped by
// combined block, as a combined step wants them.
Step combined_step(CombinedScheduler& dict, std::vector<Piece> pieces, size_t h) {
  std::vector<std::vector<Piece>> groups;
  for (const Piece& p : pieces) {
    auto fits = [&](const std::vector<Piece>& g) {
      return g.size() < h && std::none_of(g.begin(), g.end(), [&](const Piece& q) {
               return q.model == p.model && q.first_block == p.first_block;
             });
    };
    auto it = std::find_if(groups.begin(), groups.end(), fits);
    if (it == groups.end()) it = groups.insert(groups.end(), std::vector<Piece>{});
    it->push_back(p);
  }
  Step step{.kind = StepKind::kCombined};
  for (const std::vector<Piece>& g : groups) {
    std::vector<SubBlock> sub_blocks;
    for (const Piece& p : g) sub_blocks.push_back({p.model, p.first_block});
    step.schedules.push_back(&dict.schedule(sub_blocks));
    step.pieces.insert(step.pieces.end(), g.begin(), g.end());
  }
  return step;
}

// Instances of two models advanced block by block in interleaved steps — two instances of one
// model in one step, combined steps (units of several instances side by side, as the combined
// schedules say), a request reused after its instance ended — give exactly the outputs of a
// plain run of the same inputs.
TEST(ExecBackend, InterleavedInstancesMatchPlainRuns) {
  const ModelSet set = make_set();
  // Combined schedules under the simulated A100's stage cost: zipped and searched by the DP.
  SimBackend gpu(set, sim::load_device("a100_40gb"));
  CombinedScheduler dict(set, gpu.stage_cost());
  const uint32_t kSqueeze = 0, kInception = 1;
  const uint32_t squeeze_blocks = static_cast<uint32_t>(set.model(kSqueeze).blocks.size());
  const uint32_t inception_blocks = static_cast<uint32_t>(set.model(kInception).blocks.size());
  ASSERT_EQ(squeeze_blocks, 12u);
  ASSERT_EQ(inception_blocks, 13u);
  ExecBackend cpu(set);
  const testing_models::PlainRuns plain(set);  // the oracle
  EXPECT_EQ(cpu.name(), "cpu");
  EXPECT_FALSE(cpu.virtual_time());

  std::map<InstanceId, Task> tasks = {
      {0, {kSqueeze, 100}}, {1, {kSqueeze, 101}}, {2, {kInception, 200}}, {3, {kInception, 201}}};
  for (auto& [id, task] : tasks) {
    const Outputs inputs = random_inputs(set.model(task.model), task.seed);
    cpu.begin_instance(id, task.model, inputs);
  }
  auto run = [&](const Step& s) {
    for (const Piece& p : s.pieces) tasks.at(p.instance).next_block = p.last_block;
    StepResult r = cpu.run(s);
    EXPECT_GT(r.device_time.count(), 0);
    EXPECT_GE(r.utilization, 0.0);
    EXPECT_LE(r.utilization, 1.0);
  };
  auto step = [&](StepKind kind, std::vector<Piece> pieces) {
    run(kind == StepKind::kCombined ? combined_step(dict, std::move(pieces), 4)
                                    : Step{.kind = kind, .pieces = std::move(pieces)});
  };
  // Two instances of SqueezeNet and one of Inception in one step, at different blocks.
  step(StepKind::kIndependent, {{0, kSqueeze, 0, 2}, {2, kInception, 0, 1}, {1, kSqueeze, 0, 1}});
  // One instance advanced twice in one step (its pieces run in turn).
  step(StepKind::kIndependent, {{1, kSqueeze, 1, 2}, {3, kInception, 0, 3}, {1, kSqueeze, 2, 4}});
  // A combined step: one block of each instance, all four in one combined block.
  step(StepKind::kCombined,
       {{0, kSqueeze, 2, 3}, {1, kSqueeze, 4, 5}, {2, kInception, 1, 2}, {3, kInception, 3, 4}});

  // The rest in random interleavings: each step advances a random subset by 1-3 blocks, or
  // (every other step) by one block each in combined blocks of up to 3.
  const uint64_t seed = 17;
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  std::map<InstanceId, Outputs> results;
  InstanceId next_id = 4;
  int reused = 0, combined = 0;
  for (int n = 0; !tasks.empty(); ++n) {
    const bool combine = n % 2 == 1;
    std::vector<Piece> pieces;
    for (auto& [id, task] : tasks) {
      const uint32_t num_blocks = task.model == kSqueeze ? squeeze_blocks : inception_blocks;
      if (rng() % 3 == 0 && task.next_block > 0) continue;
      const uint32_t last =
          combine ? task.next_block + 1
                  : std::min<uint32_t>(num_blocks, task.next_block + 1 + uint32_t(rng() % 3));
      pieces.push_back({id, task.model, task.next_block, last});
    }
    std::shuffle(pieces.begin(), pieces.end(), rng);
    if (!pieces.empty()) {
      const Step s = combine ? combined_step(dict, pieces, 3)
                             : Step{.kind = StepKind::kIndependent, .pieces = pieces};
      combined += combine;
      run(s);
    }
    for (auto it = tasks.begin(); it != tasks.end();) {
      const auto [id, task] = *it;
      const uint32_t num_blocks = task.model == kSqueeze ? squeeze_blocks : inception_blocks;
      if (task.next_block < num_blocks) {
        ++it;
        continue;
      }
      results[id] = cpu.end_instance(id);
      expect_equal(results[id],
                   plain.run(task.model, random_inputs(set.model(task.model), task.seed)),
                   "instance " + std::to_string(id));
      it = tasks.erase(it);
      // A new task takes a pooled request (one that already held another task's values).
      if (reused < 2) {
        Task fresh{task.model, 300 + static_cast<uint64_t>(reused)};
        cpu.begin_instance(next_id, fresh.model, random_inputs(set.model(fresh.model), fresh.seed));
        tasks.emplace(next_id++, fresh);
        ++reused;
      }
    }
  }
  EXPECT_EQ(reused, 2);
  EXPECT_EQ(results.size(), 6u);
  EXPECT_GT(combined, 5);
  const CombineStats stats = dict.stats();
  EXPECT_GT(stats.zip + stats.dp, 3) << "combinations of several sub-blocks were scheduled";
  EXPECT_GT(stats.dp, 0) << "a combination searched by the DP over the union";
}

// A malformed step runs nothing; a piece that fails while running (blocks out of order) stops
// its model's pieces, the other models' pieces finish, and the error reaches the caller once
// every thread has joined. The backend keeps working, and the values stay right.
TEST(ExecBackend, FailuresReachTheCallerWithoutAHang) {
  const ModelSet set = make_set();
  ExecBackend cpu(set);
  const Outputs a_in = random_inputs(set.model(0), 1), b_in = random_inputs(set.model(1), 2);
  cpu.begin_instance(0, 0, a_in);
  cpu.begin_instance(1, 1, b_in);

  expect_error(ErrorCode::kInvalidArgument, "instance 9 is not in flight", [&] {
    cpu.run({.kind = StepKind::kIndependent, .pieces = {{0, 0, 0, 1}, {9, 1, 0, 1}}});
  });
  expect_error(ErrorCode::kInvalidArgument, "is of model #1, not #0", [&] {
    cpu.run({.kind = StepKind::kIndependent, .pieces = {{1, 0, 0, 1}}});
  });
  expect_error(ErrorCode::kInvalidArgument, "blocks [0, 13)", [&] {
    cpu.run({.kind = StepKind::kIndependent, .pieces = {{0, 0, 0, 13}}});
  });
  expect_error(ErrorCode::kInvalidArgument, "blocks [2, 2)", [&] {
    cpu.run({.kind = StepKind::kIndependent, .pieces = {{0, 0, 2, 2}}});
  });

  // Inception's piece skips blocks 0-1 and fails in its thread; SqueezeNet's runs.
  expect_error(ErrorCode::kInvalidArgument, "out of order", [&] {
    cpu.run({.kind = StepKind::kIndependent, .pieces = {{0, 0, 0, 1}, {1, 1, 2, 3}}});
  });
  // SqueezeNet's instance is at block 1 (the malformed steps ran nothing, the failed one ran
  // its piece), Inception's still at block 0.
  expect_error(ErrorCode::kInvalidArgument, "the instance is at block 1", [&] {
    cpu.run({.kind = StepKind::kIndependent, .pieces = {{0, 0, 0, 1}}});
  });
  // Combined steps: schedules that do not cover the pieces, and a piece out of order (its
  // combined block does not run; the other one does), then a good one.
  SimBackend gpu(set, sim::load_device("a100_40gb"));
  CombinedScheduler dict(set, gpu.stage_cost());
  const std::vector<SubBlock> wrong = {{0, 4}, {1, 0}}, right = {{0, 2}, {1, 0}};
  expect_error(ErrorCode::kInvalidArgument, "do not cover its pieces", [&] {
    cpu.run({.kind = StepKind::kCombined,
             .pieces = {{0, 0, 1, 2}, {1, 1, 0, 1}},
             .schedules = {&dict.schedule(wrong)}});
  });
  expect_error(ErrorCode::kInvalidArgument, "the instance is at block 0", [&] {
    cpu.run({.kind = StepKind::kCombined,
             .pieces = {{0, 0, 1, 2}, {1, 1, 1, 2}},
             .schedules = {&dict.single({0, 1}), &dict.single({1, 1})}});
  });
  cpu.run({.kind = StepKind::kCombined,
           .pieces = {{0, 0, 2, 3}, {1, 1, 0, 1}},
           .schedules = {&dict.schedule(right)}});
  cpu.run({.kind = StepKind::kIndependent, .pieces = {{0, 0, 3, 12}, {1, 1, 1, 13}}});
  const testing_models::PlainRuns plain(set);
  expect_equal(cpu.end_instance(0), plain.run(0, a_in), "squeezenet");
  expect_equal(cpu.end_instance(1), plain.run(1, b_in), "inception_v3");
}

TEST(ExecBackend, BadInstancesAreRejected) {
  const ModelSet set = make_set();
  ExecBackend cpu(set);
  const Outputs in = random_inputs(set.model(0), 1);
  expect_error(ErrorCode::kInvalidArgument, "model #2 does not exist",
               [&] { cpu.begin_instance(0, 2, in); });
  expect_error(ErrorCode::kInvalidArgument, "2 inputs given, the model takes 1", [&] {
    cpu.begin_instance(0, 0, Outputs{in[0], in[0]});
  });
  expect_error(ErrorCode::kInvalidArgument, "needs",
               [&] { cpu.begin_instance(0, 0, Outputs{std::vector<float>(5)}); });
  cpu.begin_instance(0, 0, in);
  expect_error(ErrorCode::kInvalidArgument, "already in flight",
               [&] { cpu.begin_instance(0, 0, in); });
  expect_error(ErrorCode::kInvalidArgument, "instance 4 is not in flight",
               [&] { cpu.end_instance(4); });
  // Ended before its last block: no outputs, and the slot is free again.
  cpu.run({.kind = StepKind::kIndependent, .pieces = {{0, 0, 0, 3}}});
  EXPECT_TRUE(cpu.end_instance(0).empty());
  cpu.begin_instance(0, 0, {});  // no inputs: the pooled request's buffers as they are
  cpu.run({.kind = StepKind::kIndependent, .pieces = {{0, 0, 0, 12}}});
  EXPECT_EQ(cpu.end_instance(0).size(), 1u);
}

// A model with no schedule has no plan to prepare.
TEST(ExecBackend, ModelWithoutAScheduleIsRejected) {
  ModelSet set;
  AddOptions squeezenet;
  squeezenet.load.zoo.image_size = 64;
  set.add("squeezenet", squeezenet);
  expect_error(ErrorCode::kInvalidArgument, "has no schedule", [&] { ExecBackend cpu(set); });
}

}  // namespace
}  // namespace braid::runtime
