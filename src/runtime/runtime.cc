#include "runtime/runtime.h"

#include <openssl/evp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <limits>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "base/error.h"
#include "base/stats.h"

namespace braid::runtime {
namespace {

using Clock = std::chrono::steady_clock;

// SHA-256 of the event log, line by line, so a run's log is compared without keeping it.
class LogHash {
 public:
  LogHash() : ctx_(EVP_MD_CTX_new()) { EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr); }
  ~LogHash() { EVP_MD_CTX_free(ctx_); }
  LogHash(const LogHash&) = delete;
  LogHash& operator=(const LogHash&) = delete;
  void add(const std::string& line) {
    EVP_DigestUpdate(ctx_, line.data(), line.size());
    EVP_DigestUpdate(ctx_, "\n", 1);
  }
  std::string hex() {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned len = 0;
    EVP_DigestFinal_ex(ctx_, digest, &len);
    std::string out;
    for (unsigned i = 0; i < len; ++i) out += fmt::format("{:02x}", digest[i]);
    return out;
  }

 private:
  EVP_MD_CTX* ctx_;
};

// One run's mutable state: queues, instances, clock, metrics.
class Run {
 public:
  Run(const ModelSet& models, Backend& backend, Policy& policy, CombinedScheduler* combiner,
      const RuntimeOptions& options, const std::vector<Arrival>& arrivals, Inbox* inbox = nullptr)
      : models_(models),
        backend_(backend),
        policy_(policy),
        combiner_(combiner),
        options_(options),
        arrivals_(arrivals),
        inbox_(inbox),
        queues_(models.size()),
        next_due_(models.size(), 0.0),
        block_us_(models.size(), 0.0) {
    state_.models = &models;
    state_.combiner = combiner;
    state_.model.resize(models.size());
    forgotten_.resize(models.size());
  }

  Report execute() {
    begin();
    advance(std::numeric_limits<double>::infinity());
    return finish();
  }

  void begin() {
    wall_start_ = Clock::now();
    start_ = wall_start_;
    refresh_state();
    decide();
    next_sample_ = options_.sample_period_us;
    next_decision_ = policy_.decision_period_us();
  }

  // The loop until the clock reaches `until_us` (after the step under way) or the run ends;
  // false once it has ended.
  bool advance(double until_us) {
    if (over_) return false;
    for (;;) {
      now_ = std::max(now_, clock_now());
      forget_answered();
      take_arrivals();
      drop_timed_out();
      launch();
      sample_until_now();
      // Without drain the run ends at the duration, whatever is still queued or in flight.
      if ((!options_.drain && now_ >= options_.duration_us) ||
          (inbox_ != nullptr && inbox_->stopped()))
        return end_run();
      if (now_ >= until_us) return true;
      refresh_state();
      if (std::optional<Step> step = policy_.next_step(state_)) {
        run_step(*step);
        continue;
      }
      const double next = next_event();
      const bool arrivals_over = inbox_ != nullptr
                                     ? inbox_->drained()
                                     : next_arrival_ >= arrivals_.size() ||
                                           arrivals_[next_arrival_].at_us >= options_.duration_us;
      if (options_.drain && arrivals_over && instances_in_flight() == 0 && all_queues_empty())
        return end_run();
      // Nothing can change any more (a policy that never admits): over, unless the caller
      // steps the clock itself.
      if (!std::isfinite(next) && !std::isfinite(until_us)) return end_run();
      wait_until(std::min({next, options_.drain ? next : options_.duration_us, until_us}));
    }
  }

  bool end_run() {
    over_ = true;
    return false;
  }

  Report finish() {
    over_ = true;
    sample_until_now();
    // Instances still in flight at the end give their slots back, so the backend can serve
    // another run (their tasks are reported in flight); tasks given online are answered.
    if (inbox_ != nullptr) take_arrivals();  // stopped: submitted ones not yet taken
    for (InstanceId i : order_) {
      backend_.end_instance(i);
      answer(instances_[i].state.task, {.status = TaskOutcome::Status::kCancelled,
                                        .error = "the runtime stopped before the task finished"});
    }
    for (auto& queue : queues_)
      for (uint64_t id : queue) {
        if (inbox_ != nullptr) inbox_->left_queue(task_at(id).model);
        answer(id, {.status = TaskOutcome::Status::kCancelled,
                    .error = "the runtime stopped before the task was run"});
      }
    return report(std::chrono::duration<double>(Clock::now() - wall_start_).count());
  }

  // An episode's view (Episode).
  double now() const { return now_; }
  bool over() const { return over_; }
  const RuntimeState& state() {
    refresh_state();
    return state_;
  }
  const std::vector<Sample>& samples() const { return samples_; }
  const std::deque<TaskRecord>& tasks() const { return tasks_; }
  void redecide() {
    log("redecide episode");
    decide();
  }

 private:
  struct Instance {
    InstanceState state;
    bool in_use = false;
  };

  // --- clock ---
  double clock_now() const {
    if (backend_.virtual_time()) return now_;
    return std::chrono::duration<double, std::micro>(Clock::now() - start_).count();
  }
  void wait_until(double t) {
    if (t <= now_) return;
    if (!backend_.virtual_time()) {
      const Clock::time_point deadline =
          start_ + std::chrono::duration_cast<Clock::duration>(
                       std::chrono::duration<double, std::micro>(std::min(t, 1e15)));
      // Online, a submission wakes the loop early (once closed, none can come).
      if (inbox_ != nullptr && !inbox_->closed())
        inbox_->wait_until(deadline);
      else
        std::this_thread::sleep_until(deadline);
    }
    now_ = std::max(now_, backend_.virtual_time() ? t : clock_now());
  }
  // The next time something happens without a step: an arrival, a launcher tick, a sample.
  double next_event() const {
    double t = std::numeric_limits<double>::infinity();
    if (next_arrival_ < arrivals_.size() && arrivals_[next_arrival_].at_us < options_.duration_us)
      t = std::min(t, arrivals_[next_arrival_].at_us);
    for (size_t m = 0; m < queues_.size(); ++m)
      if (!queues_[m].empty() && next_due_[m] > now_) t = std::min(t, next_due_[m]);
    // Online, arrivals are not known ahead: the loop sleeps until the next sample at most (a
    // submission wakes it earlier).
    if (std::isfinite(t) || inbox_ != nullptr) t = std::min(t, next_sample_);
    return t;
  }

  // --- events ---
  void log(const std::string& line) {
    const std::string full = fmt::format("{:.3f} {}", now_, line);
    hash_.add(full);
    if (options_.keep_event_log) event_log_.push_back(full);
  }

  void take_arrivals() {
    if (inbox_ != nullptr) {
      for (Inbox::Taken& taken : inbox_->take()) {
        // Stamped on the run's clock when submitted, so queueing before the loop saw it counts.
        const double at =
            std::chrono::duration<double, std::micro>(taken.submitted - start_).count();
        TaskRecord task{.id = next_task_id(), .model = taken.task.model, .arrival_us = at};
        ++state_.model[task.model].arrived;
        queues_[task.model].push_back(task.id);
        log(fmt::format("arrive m{} t{}", task.model, task.id));
        online_.push_back(std::move(taken.task));
        answered_.push_back(false);
        tasks_.push_back(std::move(task));
      }
      return;
    }
    while (next_arrival_ < arrivals_.size() && arrivals_[next_arrival_].at_us <= now_ &&
           arrivals_[next_arrival_].at_us < options_.duration_us) {
      const Arrival& a = arrivals_[next_arrival_++];
      BRAID_CHECK(a.model < models_.size(), ErrorCode::kInvalidArgument, "arrival for model ",
                  a.model, " but ", models_.size(), " models are loaded");
      TaskRecord task{.id = next_task_id(), .model = a.model, .arrival_us = a.at_us};
      ++state_.model[a.model].arrived;
      if (options_.queue_capacity > 0 && queues_[a.model].size() >= options_.queue_capacity) {
        task.rejected = true;
        log(fmt::format("reject m{} t{}", a.model, task.id));
      } else {
        queues_[a.model].push_back(task.id);
        log(fmt::format("arrive m{} t{}", a.model, task.id));
      }
      tasks_.push_back(std::move(task));
    }
  }

  void launch() {
    for (;;) {
      refresh_state();
      std::vector<bool> due(models_.size(), false);
      bool any = false;
      for (size_t m = 0; m < models_.size(); ++m) {
        due[m] = !queues_[m].empty() && next_due_[m] <= now_;
        any = any || due[m];
      }
      if (!any) return;
      const std::vector<bool> admitted = policy_.admit(state_, due);
      bool progress = false;
      for (size_t m = 0; m < models_.size(); ++m) {
        if (!admitted[m] || !due[m]) continue;
        dequeue(uint32_t(m));
        next_due_[m] = now_ + interval_us_[m];
        progress = true;
      }
      if (!progress) return;
    }
  }

  void dequeue(uint32_t m) {
    const uint64_t task_id = queues_[m].front();
    queues_[m].pop_front();
    TaskRecord& task = task_at(task_id);
    task.dequeued_us = now_;
    InstanceId slot = 0;
    while (slot < instances_.size() && instances_[slot].in_use) ++slot;
    if (slot == instances_.size()) instances_.emplace_back();
    instances_[slot] = {.state = {.id = slot,
                                  .model = m,
                                  .task = task_id,
                                  .next_block = 0,
                                  .arrival_us = task.arrival_us,
                                  .dequeued_us = now_},
                        .in_use = true};
    order_.push_back(slot);
    std::vector<std::vector<float>> inputs;
    if (inbox_ != nullptr) {
      inbox_->left_queue(m);
      inputs = std::move(online_at(task_id).inputs);
    } else if (options_.input_of) {
      inputs = options_.input_of(m, task_id);
    }
    try {
      backend_.begin_instance(slot, m, inputs);
    } catch (const std::exception& e) {
      // Serving: the task fails (a request the device has no memory for, say), not the loop.
      if (inbox_ == nullptr) throw;
      instances_[slot].in_use = false;
      order_.pop_back();
      log(fmt::format("fail dequeue m{} t{}: {}", m, task_id, e.what()));
      answer(task_id, {.status = TaskOutcome::Status::kFailed, .error = e.what()});
      return;
    }
    log(fmt::format("dequeue m{} t{} i{}", m, task_id, slot));
  }

  void check_step(const Step& step) const {
    std::vector<bool> seen(instances_.size(), false);
    for (const Piece& p : step.pieces) {
      BRAID_CHECK(p.instance < instances_.size() && instances_[p.instance].in_use,
                  ErrorCode::kInternal, "policy ", policy_.name(), " stepped instance ", p.instance,
                  ", which is not in flight");
      const InstanceState& s = instances_[p.instance].state;
      const size_t blocks = models_.model(s.model).blocks.size();
      BRAID_CHECK(!seen[p.instance] && p.model == s.model && p.first_block == s.next_block &&
                      p.last_block > p.first_block && p.last_block <= blocks,
                  ErrorCode::kInternal, "policy ", policy_.name(),
                  " made an invalid step: ", describe(step));
      seen[p.instance] = true;
    }
    BRAID_CHECK(!step.pieces.empty(), ErrorCode::kInternal, "policy ", policy_.name(),
                " made an empty step");
    BRAID_CHECK(step.kind != StepKind::kCombined || schedules_cover_pieces(step),
                ErrorCode::kInternal, "policy ", policy_.name(),
                " made a combined step whose schedules do not match its pieces: ", describe(step));
  }

  void run_step(const Step& step) {
    check_step(step);
    const double begin = now_;
    StepResult r;
    try {
      r = backend_.run(step);
    } catch (const std::exception& e) {
      if (inbox_ == nullptr) throw;
      fail_step(step, e.what());
      return;
    }
    const double took = double(r.device_time.count());
    if (backend_.virtual_time())
      now_ += took;
    else
      now_ = clock_now();
    account_busy(begin, now_, r.utilization);
    ++steps_;
    if (step.kind == StepKind::kCombined) ++combined_steps_;
    if (step_sizes_.size() <= step.pieces.size()) step_sizes_.resize(step.pieces.size() + 1, 0);
    ++step_sizes_[step.pieces.size()];
    log(fmt::format("step {} {:.3f}us", describe(step), took));
    if (step.pieces.size() == 1) {  // a block alone: what the launcher paces by
      const Piece& p = step.pieces[0];
      const double per_block = took / double(p.last_block - p.first_block);
      double& b = block_us_[p.model];
      b = b == 0 ? per_block : 0.8 * b + 0.2 * per_block;
    }
    for (const Piece& p : step.pieces) {
      Instance& inst = instances_[p.instance];
      inst.state.next_block = p.last_block;
      if (p.last_block < models_.model(p.model).blocks.size()) continue;
      TaskRecord& task = task_at(inst.state.task);
      task.done_us = now_;
      std::vector<std::vector<float>> outputs = backend_.end_instance(p.instance);
      if (inbox_ != nullptr)
        answer(task.id, {.status = TaskOutcome::Status::kDone, .outputs = std::move(outputs)});
      else if (options_.keep_outputs)
        task.outputs = std::move(outputs);
      ++state_.model[p.model].completed;
      inst.in_use = false;
      order_.erase(std::find(order_.begin(), order_.end(), p.instance));
      log(fmt::format("done m{} t{} {:.3f}us", p.model, task.id, now_ - task.arrival_us));
    }
  }

  // Task records by id. Online, answered tasks are forgotten from the front (forget_answered), so
  // a server's memory does not grow with the tasks it has served: ids are offset by first_task_.
  TaskRecord& task_at(uint64_t id) { return tasks_[id - first_task_]; }
  Submission& online_at(uint64_t id) { return online_[id - first_task_]; }
  uint64_t next_task_id() const { return first_task_ + tasks_.size(); }

  // Online: drops the records of the oldest tasks while they are answered (nothing refers to an
  // answered task any more), counting them for the report.
  void forget_answered() {
    if (inbox_ == nullptr) return;
    while (!answered_.empty() && answered_.front()) {
      const TaskRecord& t = tasks_.front();
      Forgotten& f = forgotten_[t.model];
      ++f.submitted;
      if (t.done_us >= 0) ++f.completed;
      tasks_.pop_front();
      online_.pop_front();
      answered_.pop_front();
      ++first_task_;
    }
  }

  // Online: answers task `id` once (its callback), with its queueing and run times.
  void answer(uint64_t id, TaskOutcome outcome) {
    if (inbox_ == nullptr) return;
    const TaskRecord& task = task_at(id);
    Submission& sub = online_at(id);
    if (!sub.done) return;  // answered already
    answered_[id - first_task_] = true;
    const double end = task.done_us >= 0 ? task.done_us : now_;
    outcome.queue_us = (task.dequeued_us >= 0 ? task.dequeued_us : end) - task.arrival_us;
    outcome.run_us = task.dequeued_us >= 0 ? end - task.dequeued_us : 0;
    auto done = std::move(sub.done);
    sub = {};
    done(std::move(outcome));
  }

  // Online: tasks still queued past their timeout are answered kTimedOut, not run late.
  void drop_timed_out() {
    if (inbox_ == nullptr) return;
    for (auto& queue : queues_)
      for (auto it = queue.begin(); it != queue.end();) {
        const TaskRecord& task = task_at(*it);
        const double timeout = online_at(*it).timeout_us;
        if (timeout <= 0 || now_ - task.arrival_us <= timeout) {
          ++it;
          continue;
        }
        log(fmt::format("timeout m{} t{}", task.model, task.id));
        inbox_->left_queue(task.model);
        answer(*it, {.status = TaskOutcome::Status::kTimedOut,
                     .error = fmt::format("queued {:.0f} us, over its timeout of {:.0f} us",
                                          now_ - task.arrival_us, timeout)});
        it = queue.erase(it);
      }
  }

  // Online: a step that threw fails the tasks it advanced (their instances are given back);
  // the loop goes on with the others.
  void fail_step(const Step& step, const std::string& what) {
    now_ = clock_now();
    log(fmt::format("fail {} {}", describe(step), what));
    for (const Piece& p : step.pieces) {
      Instance& inst = instances_[p.instance];
      if (!inst.in_use) continue;
      backend_.end_instance(p.instance);
      inst.in_use = false;
      order_.erase(std::find(order_.begin(), order_.end(), p.instance));
      answer(inst.state.task, {.status = TaskOutcome::Status::kFailed, .error = what});
    }
  }

  // --- metrics ---
  // Busy time (duration x utilization) per sample period, a step split across the periods it
  // spans, so each sample's utilization is its own.
  void account_busy(double begin, double end, double utilization) {
    busy_total_ += (end - begin) * utilization;
    run_total_ += end - begin;
    const double period = options_.sample_period_us;
    for (double t = begin; t < end;) {
      const auto k = size_t(t / period);
      const double cut = std::min(end, double(k + 1) * period);
      if (k >= first_period_) {  // earlier periods are sampled and gone (online)
        const size_t i = k - first_period_;
        if (busy_by_period_.size() <= i) {
          busy_by_period_.resize(i + 1, 0.0);
          run_by_period_.resize(i + 1, 0.0);
        }
        busy_by_period_[i] += (cut - t) * utilization;
        run_by_period_[i] += cut - t;
      }
      if (cut <= t) break;  // t at the end of the representable range
      t = cut;
    }
  }

  void sample_until_now() {
    while (now_ >= next_sample_) {
      Sample s{.at_us = next_sample_};
      refresh_state();
      for (size_t m = 0; m < models_.size(); ++m) {
        s.queued.push_back(queues_[m].size());
        s.remaining.push_back(queues_[m].size() + state_.model[m].in_flight);
        s.completed.push_back(state_.model[m].completed);
      }
      const size_t k = samples_taken_++ - first_period_;  // this period's index in the deques
      const double busy = k < busy_by_period_.size() ? busy_by_period_[k] : 0.0;
      const double ran = k < run_by_period_.size() ? run_by_period_[k] : 0.0;
      s.utilization = std::clamp(busy / options_.sample_period_us, 0.0, 1.0);
      s.busy = std::clamp(ran / options_.sample_period_us, 0.0, 1.0);
      s.variance = state_.queue_variance();
      samples_.push_back(std::move(s));
      if (inbox_ != nullptr) {
        std::vector<uint64_t> arrived;
        for (const ModelState& ms : state_.model) arrived.push_back(ms.arrived);
        arrival_history_.emplace_back(next_sample_, std::move(arrived));
        while (arrival_history_.front().first < next_sample_ - kRateWindowUs)
          arrival_history_.pop_front();
      }
      next_sample_ += options_.sample_period_us;
      if (options_.on_sample)
        options_.on_sample({.at_us = samples_.back().at_us,
                            .in_flight = order_.size(),
                            .variance = samples_.back().variance,
                            .steps = steps_,
                            .combined_steps = combined_steps_,
                            .stage_dict_hits = combiner_ ? uint64_t(combiner_->stats().hits) : 0});
      const double variance = samples_.back().variance;
      policy_.observe(state_);
      if (inbox_ != nullptr) {
        // Online, a server keeps no history: the last sample, and the periods not sampled yet.
        samples_.erase(samples_.begin(), samples_.end() - 1);
        while (first_period_ < samples_taken_ && !busy_by_period_.empty()) {
          busy_by_period_.pop_front();
          run_by_period_.pop_front();
          ++first_period_;
        }
      }
      if (const double period = policy_.decision_period_us(); period > 0) {
        if (samples_.back().at_us + 1e-6 >= next_decision_) {
          log("redecide cadence");
          decide();
          while (next_decision_ <= samples_.back().at_us + 1e-6) next_decision_ += period;
        }
      } else if (variance > options_.variance_threshold) {
        log(fmt::format("redecide variance {:.3f}", variance));
        decide();
      }
    }
  }

  void decide() {
    refresh_state();
    Decision d = policy_.decide(state_);
    BRAID_CHECK(d.interval_us.size() == models_.size(), ErrorCode::kInternal, "policy ",
                policy_.name(), " gave ", d.interval_us.size(), " intervals for ", models_.size(),
                " models");
    interval_us_ = d.interval_us;
    ++decisions_;
    std::string line = "decide intervals";
    for (double i : interval_us_) line += fmt::format(" {:.3f}", i);
    line += fmt::format(" partition {}", d.partition.size());
    log(line);
  }

  void refresh_state() {
    state_.now_us = now_;
    const double elapsed = std::max(now_, 1.0);
    // Online, rates are over the last second (arrival_history_): a server idle for an hour and
    // then busy must not see its rate averaged over the hour. Offline, over the whole run.
    const std::pair<double, std::vector<uint64_t>>* since =
        inbox_ != nullptr && !arrival_history_.empty() ? &arrival_history_.front() : nullptr;
    for (size_t m = 0; m < models_.size(); ++m) {
      ModelState& s = state_.model[m];
      s.queued = queues_[m].size();
      s.in_flight = 0;
      s.arrival_rate_hz = since != nullptr && now_ > since->first
                              ? double(s.arrived - since->second[m]) / (now_ - since->first) * 1e6
                              : double(s.arrived) / elapsed * 1e6;
      s.block_us = block_us_[m];
    }
    state_.instances.clear();
    for (InstanceId i : order_) {
      state_.instances.push_back(instances_[i].state);
      ++state_.model[instances_[i].state.model].in_flight;
    }
  }

  size_t instances_in_flight() const { return order_.size(); }
  bool all_queues_empty() const {
    return std::all_of(queues_.begin(), queues_.end(), [](const auto& q) { return q.empty(); });
  }

  Report report(double wall_seconds) {
    Report r;
    r.policy = std::string(policy_.name());
    r.backend = std::string(backend_.name());
    r.duration_us = now_;
    r.wall_seconds = wall_seconds;
    const double window_us = options_.drain ? now_ : options_.duration_us;
    for (size_t m = 0; m < models_.size(); ++m) {
      const RuntimeModel& model = models_.model(m);
      ModelReport mr{
          .name = model.name, .blocks = model.blocks.size(), .units = model.units().num_units()};
      std::vector<double> latencies;
      for (const TaskRecord& t : tasks_) {
        if (t.model != m) continue;
        ++mr.submitted;
        if (t.rejected) {
          ++mr.rejected;
        } else if (t.done_us >= 0) {
          ++mr.completed;
          latencies.push_back((t.done_us - t.arrival_us) / 1e3);
        } else if (t.dequeued_us >= 0) {
          ++mr.in_flight;
        } else {
          ++mr.queued;
        }
      }
      uint64_t done_in_window = 0;
      for (const TaskRecord& t : tasks_)
        if (t.model == m && t.done_us >= 0 && t.done_us <= window_us) ++done_in_window;
      // Online, tasks answered long ago are counted, not kept (latencies: the kept ones only).
      mr.submitted += forgotten_[m].submitted;
      mr.completed += forgotten_[m].completed;
      done_in_window += forgotten_[m].completed;
      mr.throughput_fps = window_us > 0 ? double(done_in_window) / (window_us / 1e6) : 0;
      const Summary l = summarize(std::move(latencies));
      mr.mean_ms = l.mean;
      mr.p50_ms = l.p50;
      mr.p95_ms = l.p95;
      mr.p99_ms = l.p99;
      r.throughput_fps += mr.throughput_fps;
      r.models.push_back(std::move(mr));
    }
    r.samples = std::move(samples_);
    r.utilization = now_ > 0 ? busy_total_ / now_ : 0;
    r.busy = now_ > 0 ? run_total_ / now_ : 0;
    r.steps = steps_;
    r.step_sizes = step_sizes_;
    if (combiner_ != nullptr) r.combine = combiner_->stats();
    r.decisions = decisions_;
    refresh_state();
    r.final_variance = state_.queue_variance();
    r.event_log_sha256 = hash_.hex();
    r.event_log = std::move(event_log_);
    r.tasks.assign(std::make_move_iterator(tasks_.begin()), std::make_move_iterator(tasks_.end()));
    return r;
  }

  const ModelSet& models_;
  Backend& backend_;
  Policy& policy_;
  CombinedScheduler* combiner_;
  const RuntimeOptions& options_;
  const std::vector<Arrival>& arrivals_;
  Inbox* inbox_;  // online: where tasks come from; null offline
  // Online: (sample time, arrivals per model so far) over the last kRateWindowUs.
  static constexpr double kRateWindowUs = 1e6;
  std::deque<std::pair<double, std::vector<uint64_t>>> arrival_history_;
  std::deque<Submission> online_;  // online: per task id, its inputs until dequeued and callback
  std::deque<bool> answered_;      // online: per task id, whether its callback was called
  struct Forgotten {
    uint64_t submitted = 0, completed = 0;
  };
  std::vector<Forgotten> forgotten_;  // online, per model: tasks forgotten once answered
  uint64_t first_task_ = 0;           // the id of tasks_.front()

  Clock::time_point start_, wall_start_;
  double now_ = 0;
  bool over_ = false;
  size_t next_arrival_ = 0;
  std::vector<std::deque<uint64_t>> queues_;
  std::vector<double> next_due_, interval_us_, block_us_;
  std::vector<Instance> instances_;
  std::vector<InstanceId> order_;  // in-flight instances, oldest first
  std::deque<TaskRecord> tasks_;
  RuntimeState state_;

  double next_sample_ = 0;
  double next_decision_ = 0;  // a policy with a decision period: when it decides next
  double busy_total_ = 0, run_total_ = 0;
  // Busy and run time per sample period from first_period_ on (online, sampled periods go).
  std::deque<double> busy_by_period_, run_by_period_;
  size_t first_period_ = 0, samples_taken_ = 0;
  std::vector<Sample> samples_;
  uint64_t steps_ = 0, combined_steps_ = 0, decisions_ = 0;
  std::vector<uint64_t> step_sizes_;
  LogHash hash_;
  std::vector<std::string> event_log_;
};

}  // namespace

namespace {

// What a run needs of its models and options, and of its arrivals (Runtime and Episode).
void check_run(const ModelSet& models, const RuntimeOptions& options) {
  BRAID_CHECK(options.duration_us >= 0, ErrorCode::kInvalidArgument, "duration must be >= 0, got ",
              options.duration_us, " us");
  BRAID_CHECK(options.sample_period_us > 0, ErrorCode::kInvalidArgument,
              "sample period must be > 0, got ", options.sample_period_us, " us");
  BRAID_CHECK(models.size() > 0, ErrorCode::kInvalidArgument, "the runtime has no models");
}
void check_arrivals(const std::vector<Arrival>& arrivals) {
  BRAID_CHECK(std::is_sorted(arrivals.begin(), arrivals.end(),
                             [](const Arrival& a, const Arrival& b) { return a.at_us < b.at_us; }),
              ErrorCode::kInvalidArgument, "arrivals must be sorted by time");
}

}  // namespace

Runtime::Runtime(const ModelSet& models, Backend& backend, Policy& policy,
                 CombinedScheduler* combiner, RuntimeOptions options)
    : models_(&models),
      backend_(&backend),
      policy_(&policy),
      combiner_(combiner),
      options_(std::move(options)) {
  check_run(models, options_);
}

Report Runtime::run(const std::vector<Arrival>& arrivals) {
  check_arrivals(arrivals);
  Run run(*models_, *backend_, *policy_, combiner_, options_, arrivals);
  return run.execute();
}

Report Runtime::serve(Inbox& inbox) {
  BRAID_CHECK(!backend_->virtual_time(), ErrorCode::kInvalidArgument, "backend '", backend_->name(),
              "' runs in virtual time: it cannot serve tasks as they come");
  RuntimeOptions options = options_;
  options.duration_us = std::numeric_limits<double>::infinity();
  options.drain = true;
  options.keep_outputs = false;
  const std::vector<Arrival> none;
  Run run(*models_, *backend_, *policy_, combiner_, options, none, &inbox);
  return run.execute();
}

struct Episode::Impl {
  Impl(const ModelSet& models, Backend& backend, Policy& policy, CombinedScheduler* combiner,
       RuntimeOptions opts, std::vector<Arrival> arr)
      : options(std::move(opts)),
        arrivals(std::move(arr)),
        run(models, backend, policy, combiner, options, arrivals) {}
  RuntimeOptions options;
  std::vector<Arrival> arrivals;
  Run run;  // refers to the two above
  bool finished = false;
};

Episode::Episode(const ModelSet& models, Backend& backend, Policy& policy,
                 CombinedScheduler* combiner, RuntimeOptions options,
                 std::vector<Arrival> arrivals) {
  check_run(models, options);
  check_arrivals(arrivals);
  impl_ = std::make_unique<Impl>(models, backend, policy, combiner, std::move(options),
                                 std::move(arrivals));
  impl_->run.begin();
}

Episode::~Episode() {
  if (!impl_ || impl_->finished) return;
  try {
    impl_->run.finish();  // gives the backend its instances back
  } catch (...) {         // a destructor must not throw; the run is gone either way
  }
}

bool Episode::advance(double until_us) {
  BRAID_CHECK(!impl_->finished, ErrorCode::kInvalidArgument, "the episode has finished");
  return impl_->run.advance(until_us);
}
void Episode::decide() {
  BRAID_CHECK(!impl_->finished, ErrorCode::kInvalidArgument, "the episode has finished");
  impl_->run.redecide();
}
double Episode::now_us() const {
  return impl_->run.now();
}
bool Episode::over() const {
  return impl_->run.over();
}
const RuntimeState& Episode::state() {
  return impl_->run.state();
}
const std::vector<Sample>& Episode::samples() const {
  return impl_->run.samples();
}
const std::deque<TaskRecord>& Episode::tasks() const {
  return impl_->run.tasks();
}
Report Episode::finish() {
  BRAID_CHECK(!impl_->finished, ErrorCode::kInvalidArgument, "the episode has finished");
  impl_->finished = true;
  return impl_->run.finish();
}

}  // namespace braid::runtime
