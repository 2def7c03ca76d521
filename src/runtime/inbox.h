// Tasks given to a running runtime (Runtime::serve): the way in for a server. Any thread may
// submit; the runtime's loop takes what was submitted, queues it per model, and answers every
// accepted task exactly once through its callback (from the loop's thread): done with its
// outputs, timed out (still queued past its deadline: rejected early, never run late), failed
// (its step threw), or cancelled (the run was stopped before it finished).
//
//   runtime::Inbox inbox(models.size(), {.queue_capacity = 64});
//   std::thread loop([&] { rt.serve(inbox); });
//   inbox.submit({.model = 0, .inputs = x, .done = [](TaskOutcome o) { ... }});  // kAccepted
//   inbox.close();            // no new tasks; the loop finishes what it holds, then returns
//   loop.join();
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace braid::runtime {

struct TaskOutcome {
  enum class Status : uint8_t { kDone, kTimedOut, kFailed, kCancelled };
  Status status = Status::kDone;
  std::vector<std::vector<float>> outputs;  // kDone: the graph outputs in order
  double queue_us = 0;                      // submitted to dequeued
  double run_us = 0;                        // dequeued to done
  std::string error;                        // kFailed: why
};
std::string_view to_string(TaskOutcome::Status status);

struct Submission {
  uint32_t model = 0;
  std::vector<std::vector<float>> inputs;  // one per graph input, in order
  double timeout_us = 0;                   // 0: none; a task queued longer is dropped (kTimedOut)
  std::function<void(TaskOutcome)> done;   // called once, from the runtime's thread
};

enum class SubmitStatus : uint8_t {
  kAccepted,      // `done` will be called exactly once
  kQueueFull,     // the model's queue has no room for the task(s); `done` is never called
  kClosed,        // draining or stopped; `done` is never called
  kUnknownModel,  // no such model; `done` is never called
};
std::string_view to_string(SubmitStatus status);

struct InboxOptions {
  size_t queue_capacity = 0;  // per model: tasks submitted and not yet dequeued; 0: unbounded
  // Per model, where given and non-zero: replaces queue_capacity (a model's own config).
  std::vector<size_t> capacities;
};

class Inbox {
 public:
  Inbox(size_t num_models, InboxOptions options = {});

  // Thread-safe; never blocks on the runtime's work.
  SubmitStatus submit(Submission task);
  // All or none, for one model (a request of several samples): accepted only if its queue has
  // room for every task. kInvalidArgument for an empty list or tasks of different models.
  SubmitStatus submit_all(std::vector<Submission> tasks);
  // Model `m`'s queue capacity (0: unbounded).
  size_t capacity(uint32_t model) const;
  // No new tasks (kClosed); the runtime finishes the accepted ones, then serve() returns.
  void close();
  // Like close(), and the runtime stops after the step under way: what it still holds is
  // answered kCancelled.
  void stop();
  bool closed() const { return closed_.load(); }
  // Tasks submitted and not yet dequeued, per model (what a queue-length gauge shows).
  size_t waiting(uint32_t model) const { return waiting_[model].load(); }

  // --- for the runtime's loop ---
  struct Taken {
    Submission task;
    std::chrono::steady_clock::time_point submitted;
  };
  // Moves every submitted task out, in submission order.
  std::vector<Taken> take();
  // Sleeps until `deadline`, or until a task is submitted or the inbox is closed or stopped.
  void wait_until(std::chrono::steady_clock::time_point deadline);
  bool stopped() const { return stopped_.load(); }
  // Closed with nothing left to take: no task can come any more.
  bool drained();
  // A task left the waiting count (dequeued, timed out or cancelled before it was dequeued).
  void left_queue(uint32_t model) { --waiting_[model]; }

 private:
  InboxOptions options_;
  std::unique_ptr<std::atomic<size_t>[]> waiting_;
  size_t num_models_;
  std::atomic<bool> closed_{false}, stopped_{false};
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<Taken> pending_;
};

}  // namespace braid::runtime
