#include "runtime/inbox.h"

#include "base/error.h"

namespace braid::runtime {

std::string_view to_string(TaskOutcome::Status status) {
  switch (status) {
    case TaskOutcome::Status::kDone:
      return "done";
    case TaskOutcome::Status::kTimedOut:
      return "timed out";
    case TaskOutcome::Status::kFailed:
      return "failed";
    case TaskOutcome::Status::kCancelled:
      return "cancelled";
  }
  return "?";
}

std::string_view to_string(SubmitStatus status) {
  switch (status) {
    case SubmitStatus::kAccepted:
      return "accepted";
    case SubmitStatus::kQueueFull:
      return "queue full";
    case SubmitStatus::kClosed:
      return "closed";
    case SubmitStatus::kUnknownModel:
      return "unknown model";
  }
  return "?";
}

Inbox::Inbox(size_t num_models, InboxOptions options)
    : options_(options),
      waiting_(std::make_unique<std::atomic<size_t>[]>(num_models)),
      num_models_(num_models) {
  BRAID_CHECK(num_models > 0, ErrorCode::kInvalidArgument, "an inbox for no models");
  for (size_t m = 0; m < num_models; ++m) waiting_[m] = 0;
}

size_t Inbox::capacity(uint32_t model) const {
  if (model < options_.capacities.size() && options_.capacities[model] > 0)
    return options_.capacities[model];
  return options_.queue_capacity;
}

SubmitStatus Inbox::submit(Submission task) {
  std::vector<Submission> one;
  one.push_back(std::move(task));
  return submit_all(std::move(one));
}

SubmitStatus Inbox::submit_all(std::vector<Submission> tasks) {
  BRAID_CHECK(!tasks.empty(), ErrorCode::kInvalidArgument, "submit_all of no tasks");
  const uint32_t model = tasks[0].model;
  for (const Submission& t : tasks)
    BRAID_CHECK(t.model == model, ErrorCode::kInvalidArgument, "submit_all: tasks of models ",
                model, " and ", t.model);
  if (model >= num_models_) return SubmitStatus::kUnknownModel;
  std::lock_guard lock(mutex_);
  // Under the lock, so close() and a submit cannot cross: after close() returns, nothing more
  // is accepted.
  if (closed_) return SubmitStatus::kClosed;
  std::atomic<size_t>& waiting = waiting_[model];
  const size_t cap = capacity(model);
  if (cap > 0 && waiting.load() + tasks.size() > cap) return SubmitStatus::kQueueFull;
  waiting += tasks.size();
  const auto now = std::chrono::steady_clock::now();
  for (Submission& t : tasks) pending_.push_back({std::move(t), now});
  cv_.notify_one();
  return SubmitStatus::kAccepted;
}

void Inbox::close() {
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
  }
  cv_.notify_all();
}

void Inbox::stop() {
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
    stopped_ = true;
  }
  cv_.notify_all();
}

std::vector<Inbox::Taken> Inbox::take() {
  std::lock_guard lock(mutex_);
  std::vector<Taken> taken;
  taken.swap(pending_);
  return taken;
}

bool Inbox::drained() {
  std::lock_guard lock(mutex_);
  return closed_ && pending_.empty();
}

void Inbox::wait_until(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock lock(mutex_);
  cv_.wait_until(lock, deadline, [&] { return !pending_.empty() || closed_ || stopped_; });
}

}  // namespace braid::runtime
