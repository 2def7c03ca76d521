// The runtime online (Runtime::serve): tasks submitted from several threads while it runs, each
// answered exactly once — with the outputs of a plain run, or timed out, failed, cancelled —
// and refused at once when a queue is full or the inbox is closed.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <future>
#include <mutex>
#include <thread>

#include "base/error.h"
#include "runtime/exec_backend.h"
#include "runtime/runtime.h"
#include "runtime/sim_backend.h"
#include "runtime/test_models.h"
#include "sim/device_spec.h"

namespace braid::runtime {
namespace {

using testing_models::Outputs;
using testing_models::PlainRuns;

ModelSet two_models() {
  return testing_models::small_models(48, {"squeezenet", "googlenet"});
}

Outputs inputs_for(const ModelSet& set, uint32_t m, uint64_t seed) {
  return testing_models::random_inputs(set.model(m), seed);
}

// What the callbacks saw, by task key.
struct Answers {
  std::mutex mutex;
  std::map<uint64_t, std::vector<TaskOutcome>> by_key;
  std::function<void(TaskOutcome)> callback(uint64_t key) {
    return [this, key](TaskOutcome o) {
      std::lock_guard lock(mutex);
      by_key[key].push_back(std::move(o));
    };
  }
};

// Four client threads submit while the loop runs, under every policy; close() drains. Every
// accepted task is answered once, done, with exactly a plain run's outputs.
TEST(Online, EveryAcceptedTaskIsAnsweredOnceWithAPlainRunsOutputs) {
  const ModelSet set = two_models();
  PlainRuns plain(set);
  ExecBackend backend(set);
  for (const std::string policy : {"static", "static-serial", "top-heuristic"}) {
    SCOPED_TRACE(policy);
    SimBackend gpu(set, sim::load_device("a100_40gb"));
    CombinedScheduler dict(set, gpu.stage_cost());
    auto p = make_policy(policy);
    Runtime rt(set, backend, *p, &dict, {});
    Inbox inbox(set.size());
    Answers answers;
    std::thread loop([&] { rt.serve(inbox); });
    std::vector<std::thread> clients;
    constexpr int kClients = 4, kPerClient = 6;
    for (int c = 0; c < kClients; ++c)
      clients.emplace_back([&, c] {
        for (int i = 0; i < kPerClient; ++i) {
          const uint64_t key = uint64_t(c * 100 + i);
          const uint32_t m = uint32_t(key % 2);
          EXPECT_EQ(
              inbox.submit(
                  {.model = m, .inputs = inputs_for(set, m, key), .done = answers.callback(key)}),
              SubmitStatus::kAccepted);
          std::this_thread::sleep_for(std::chrono::milliseconds(1 + (key % 3)));
        }
      });
    for (std::thread& t : clients) t.join();
    inbox.close();
    loop.join();
    EXPECT_EQ(inbox.submit({.model = 0, .done = answers.callback(999)}), SubmitStatus::kClosed);
    ASSERT_EQ(answers.by_key.size(), size_t(kClients * kPerClient));
    for (auto& [key, outcomes] : answers.by_key) {
      ASSERT_EQ(outcomes.size(), 1u)
          << "task " << key << " answered " << outcomes.size() << " times";
      const TaskOutcome& o = outcomes[0];
      ASSERT_EQ(o.status, TaskOutcome::Status::kDone) << o.error;
      EXPECT_GE(o.queue_us, 0);
      EXPECT_GT(o.run_us, 0);
      const uint32_t m = uint32_t(key % 2);
      EXPECT_EQ(o.outputs, plain.run(m, inputs_for(set, m, key))) << "task " << key;
    }
  }
}

// A server keeps no history: answered tasks are counted and forgotten, samples not kept, so its
// memory does not grow with what it has served. 300 tasks one after the other leave a handful of
// records in the final report, and every one of them counted.
TEST(Online, AnsweredTasksAreCountedAndForgotten) {
  const ModelSet set = two_models();
  ExecBackend backend(set);
  auto p = make_policy("static");
  Runtime rt(set, backend, *p, nullptr, {.sample_period_us = 1000});
  Inbox inbox(set.size());
  Report report;
  std::thread loop([&] { report = rt.serve(inbox); });
  const std::vector<std::vector<float>> x = inputs_for(set, 0, 1);
  constexpr int kTasks = 300;
  for (int i = 0; i < kTasks; ++i) {
    std::promise<void> answered;
    ASSERT_EQ(inbox.submit({.model = 0,
                            .inputs = x,
                            .done =
                                [&](TaskOutcome o) {
                                  EXPECT_EQ(o.status, TaskOutcome::Status::kDone) << o.error;
                                  answered.set_value();
                                }}),
              SubmitStatus::kAccepted);
    answered.get_future().wait();
  }
  inbox.close();
  loop.join();
  EXPECT_EQ(report.models[0].submitted, uint64_t(kTasks));
  EXPECT_EQ(report.models[0].completed, uint64_t(kTasks));
  EXPECT_LE(report.tasks.size(), 2u) << "records kept of " << kTasks << " answered tasks";
  EXPECT_LE(report.samples.size(), 1u);
}

// A full queue refuses at once (the caller answers 503 without waiting for the loop); an unknown
// model too. Submitted = accepted + refused, and every accepted task is answered.
TEST(Online, FullQueuesRefuseAtOnceAndNothingIsLost) {
  const ModelSet set = two_models();
  ExecBackend backend(set);
  auto p = make_policy("static-serial");
  Runtime rt(set, backend, *p, nullptr, {});
  Inbox inbox(set.size(), {.queue_capacity = 3});
  Answers answers;
  size_t accepted = 0, full = 0;
  for (uint64_t key = 0; key < 40; ++key) {  // before the loop runs: nothing is dequeued yet
    const SubmitStatus s = inbox.submit({.model = uint32_t(key % 2),
                                         .inputs = inputs_for(set, uint32_t(key % 2), key),
                                         .done = answers.callback(key)});
    accepted += s == SubmitStatus::kAccepted;
    full += s == SubmitStatus::kQueueFull;
  }
  EXPECT_EQ(accepted, 6u);
  EXPECT_EQ(full, 34u);
  EXPECT_EQ(inbox.waiting(0), 3u);
  EXPECT_EQ(inbox.submit({.model = 7, .done = answers.callback(99)}), SubmitStatus::kUnknownModel);
  std::thread loop([&] { rt.serve(inbox); });
  inbox.close();
  loop.join();
  EXPECT_EQ(answers.by_key.size(), accepted);
  for (auto& [key, outcomes] : answers.by_key) {
    ASSERT_EQ(outcomes.size(), 1u);
    EXPECT_EQ(outcomes[0].status, TaskOutcome::Status::kDone);
  }
  EXPECT_EQ(inbox.waiting(0) + inbox.waiting(1), 0u);
}

// A task still queued past its timeout is answered kTimedOut and never run late: one instance at
// a time, a burst with a timeout shorter than the burst takes to run.
// A request of several samples is queued whole or not at all, against its model's own capacity.
TEST(Online, SubmitAllTakesEveryTaskOrNone) {
  Inbox inbox(2, {.queue_capacity = 3, .capacities = {5}});  // model 0: 5, model 1: 3
  EXPECT_EQ(inbox.capacity(0), 5u);
  EXPECT_EQ(inbox.capacity(1), 3u);
  auto tasks = [](uint32_t model, size_t n) {
    std::vector<Submission> t(n);
    for (Submission& s : t) s.model = model;
    return t;
  };
  EXPECT_EQ(inbox.submit_all(tasks(0, 4)), SubmitStatus::kAccepted);
  EXPECT_EQ(inbox.submit_all(tasks(0, 2)), SubmitStatus::kQueueFull);  // 4 + 2 > 5: none taken
  EXPECT_EQ(inbox.waiting(0), 4u);
  EXPECT_EQ(inbox.submit_all(tasks(0, 1)), SubmitStatus::kAccepted);
  EXPECT_EQ(inbox.submit_all(tasks(1, 4)), SubmitStatus::kQueueFull);
  EXPECT_EQ(inbox.waiting(1), 0u);
  std::vector<Submission> mixed = tasks(1, 2);
  mixed[1].model = 0;
  EXPECT_THROW(inbox.submit_all(std::move(mixed)), Error);
  EXPECT_EQ(inbox.take().size(), 5u);
  inbox.close();
  EXPECT_EQ(inbox.submit_all(tasks(1, 1)), SubmitStatus::kClosed);
}

TEST(Online, QueuedPastItsTimeoutIsDroppedNotRunLate) {
  const ModelSet set = two_models();
  ExecBackend backend(set);
  auto p = make_policy("static-serial");
  Runtime rt(set, backend, *p, nullptr, {});
  Inbox inbox(set.size());
  Answers answers;
  constexpr double kTimeoutUs = 20000;
  for (uint64_t key = 0; key < 60; ++key)
    ASSERT_EQ(inbox.submit({.model = 1,
                            .inputs = inputs_for(set, 1, key),
                            .timeout_us = kTimeoutUs,
                            .done = answers.callback(key)}),
              SubmitStatus::kAccepted);
  std::thread loop([&] { rt.serve(inbox); });
  inbox.close();
  loop.join();
  ASSERT_EQ(answers.by_key.size(), 60u);
  size_t done = 0, timed_out = 0;
  for (auto& [key, outcomes] : answers.by_key) {
    ASSERT_EQ(outcomes.size(), 1u);
    const TaskOutcome& o = outcomes[0];
    if (o.status == TaskOutcome::Status::kDone) {
      ++done;
      EXPECT_LE(o.queue_us, kTimeoutUs * 1.5) << "task " << key << " ran after its timeout";
    } else {
      ASSERT_EQ(o.status, TaskOutcome::Status::kTimedOut) << o.error;
      EXPECT_TRUE(o.outputs.empty());
      EXPECT_NE(o.error.find("timeout"), std::string::npos) << o.error;
      ++timed_out;
    }
  }
  EXPECT_GT(done, 0u);
  EXPECT_GT(timed_out, 0u);
}

// stop(): the loop ends after the step under way; whatever it holds is answered kCancelled.
TEST(Online, StopAnswersWhatIsLeftCancelled) {
  const ModelSet set = two_models();
  ExecBackend backend(set);
  auto p = make_policy("static-serial");
  Runtime rt(set, backend, *p, nullptr, {});
  Inbox inbox(set.size());
  Answers answers;
  for (uint64_t key = 0; key < 40; ++key)
    inbox.submit({.model = uint32_t(key % 2),
                  .inputs = inputs_for(set, uint32_t(key % 2), key),
                  .done = answers.callback(key)});
  std::thread loop([&] { rt.serve(inbox); });
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  inbox.stop();
  loop.join();
  ASSERT_EQ(answers.by_key.size(), 40u);
  size_t cancelled = 0;
  for (auto& [key, outcomes] : answers.by_key) {
    ASSERT_EQ(outcomes.size(), 1u);
    cancelled += outcomes[0].status == TaskOutcome::Status::kCancelled;
  }
  EXPECT_GT(cancelled, 0u);
  EXPECT_EQ(inbox.submit({.model = 0, .done = answers.callback(99)}), SubmitStatus::kClosed);
}

// A backend that fails model 1's work: its steps, or (at_start) its instances' starts, as a
// CUDA request without device memory would.
class FailingBackend final : public Backend {
 public:
  explicit FailingBackend(bool at_start) : at_start_(at_start) {}
  std::string_view name() const override { return "failing"; }
  bool virtual_time() const override { return false; }
  void begin_instance(InstanceId, uint32_t model, std::span<const std::vector<float>>) override {
    if (at_start_ && model == 1) throw Error(ErrorCode::kInternal, "out of device memory");
  }
  StepResult run(const Step& step) override {
    for (const Piece& p : step.pieces)
      if (!at_start_ && p.model == 1) throw Error(ErrorCode::kInternal, "model 1's kernel failed");
    return {Micros{50}, 0.5};
  }
  std::vector<std::vector<float>> end_instance(InstanceId) override { return {{1.0f}}; }

 private:
  bool at_start_;
};

// One task per entry of `models` (its index the key), served on `backend` to the end; each
// answer checked: model 1's tasks failed with `error`, the others done unless `may_fail` lets
// a model-0 task share a failed step. Returns how many were done.
size_t serve_and_check(Backend& backend, const std::vector<uint32_t>& models,
                       const std::string& error, bool may_fail) {
  const ModelSet set = two_models();
  auto p = make_policy("static-serial");
  Runtime rt(set, backend, *p, nullptr, {});
  Inbox inbox(set.size());
  Answers answers;
  for (uint64_t key = 0; key < models.size(); ++key)
    inbox.submit({.model = models[key], .done = answers.callback(key)});
  std::thread loop([&] { rt.serve(inbox); });
  inbox.close();
  loop.join();
  EXPECT_EQ(answers.by_key.size(), models.size());
  size_t done = 0;
  for (auto& [key, outcomes] : answers.by_key) {
    EXPECT_EQ(outcomes.size(), 1u);
    const TaskOutcome& o = outcomes[0];
    if (models[key] == 1 || (may_fail && o.status == TaskOutcome::Status::kFailed)) {
      EXPECT_EQ(o.status, TaskOutcome::Status::kFailed) << "task " << key;
      EXPECT_NE(o.error.find(error), std::string::npos) << o.error;
    } else {
      EXPECT_EQ(o.status, TaskOutcome::Status::kDone) << "task " << key << ": " << o.error;
      EXPECT_EQ(o.outputs, Outputs{{1.0f}});
      ++done;
    }
  }
  return done;
}

// A step that throws fails the tasks it advanced (the backend does not say which of its pieces
// finished, so all of them); the loop answers them and goes on with the others. Two tasks of
// model 1 first, then eight of model 0: the first two steps hold a task of each model and fail;
// the six model-0 tasks after them run alone.
TEST(Online, AFailedStepFailsItsTasksAndTheLoopGoesOn) {
  FailingBackend backend(false);
  EXPECT_GE(
      serve_and_check(backend, {1, 1, 0, 0, 0, 0, 0, 0, 0, 0}, "model 1's kernel failed", true),
      6u);
}

// An instance the backend cannot start fails its task; the loop answers it and serves the others.
TEST(Online, AnInstanceThatCannotStartFailsItsTaskAndTheLoopGoesOn) {
  FailingBackend backend(true);
  EXPECT_EQ(serve_and_check(backend, {1, 0, 1, 0, 1, 0}, "out of device memory", false), 3u);
}

TEST(Online, VirtualTimeCannotServe) {
  ModelSet set;
  set.add("squeezenet", {.load = {.zoo = {.image_size = 48}, .with_weights = false}});
  SimBackend gpu(set, sim::load_device("a100_40gb"));
  auto p = make_policy("static");
  Runtime rt(set, gpu, *p, nullptr, {});
  Inbox inbox(set.size());
  EXPECT_THROW(rt.serve(inbox), Error);
}

}  // namespace
}  // namespace braid::runtime
