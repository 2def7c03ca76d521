// TOP's asynchronous multi-model runtime (top.txt §III-§VI): per-model queues of tasks, a task
// launcher that dequeues each queue at its own interval into in-flight instances, and steps
// that advance instances block by block on one device, as the policy picks them.
//
//   runtime::Runtime rt(set, backend, *policy, {.duration_us = 30e6});
//   runtime::Report r = rt.run(arrivals);          // virtual or wall-clock time (the backend's)
//   r.models[0].throughput_fps, r.models[0].p99_ms, r.utilization, r.event_log_sha256
//
// The loop (one thread): take the arrivals due into their queues (or reject them when a queue
// is full); let the launcher dequeue; every sample period record the metrics and, when the
// variance σ_t of the queue lengths exceeds T, ask the policy to decide again; run the step the
// policy picks, or wait for the next arrival or dequeue. The device runs one step at a time.
// In virtual time the clock jumps to each step's end and to the next event; in real time it is
// the wall clock and the loop sleeps while idle. Arrivals stop at the duration, and so does the
// run, after the step under way (what is left is reported queued or in flight, and the instances
// in flight are given back to the backend); with `drain` it goes on until every task is done.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/arrivals.h"
#include "runtime/combined.h"
#include "runtime/inbox.h"
#include "runtime/policy.h"
#include "runtime/step.h"

namespace braid::runtime {

// What the loop reports at every sample (online: a server's gauges).
struct LiveStats {
  double at_us = 0;
  size_t in_flight = 0;  // instances
  double variance = 0;   // σ_t of the remaining tasks
  uint64_t steps = 0, combined_steps = 0;
  uint64_t stage_dict_hits = 0;
};

struct RuntimeOptions {
  double duration_us = 1e6;        // arrivals after it are dropped
  bool drain = false;              // after the duration, run until every task is done
  double variance_threshold = 16;  // T: re-decide when σ_t exceeds it (the paper's 2e5 is huge)
  double sample_period_us = 1e5;   // metrics samples and the T check
  size_t queue_capacity = 0;       // per model; 0: unbounded (the reproduction), else reject
  // The inputs of a task (graph inputs in order), for backends that compute values; unset or
  // empty: none (virtual time).
  std::function<std::vector<std::vector<float>>(uint32_t model, uint64_t task)> input_of;
  bool keep_outputs = false;  // Report::tasks[i].outputs
  bool keep_event_log = false;
  // Called from the loop's thread at every sample.
  std::function<void(const LiveStats&)> on_sample;
};

struct TaskRecord {
  uint64_t id = 0;
  uint32_t model = 0;
  double arrival_us = 0, dequeued_us = -1, done_us = -1;  // -1: not reached
  bool rejected = false;
  std::vector<std::vector<float>> outputs;  // with keep_outputs
};

struct ModelReport {
  std::string name;
  size_t blocks = 0, units = 0;
  uint64_t submitted = 0, completed = 0, rejected = 0, queued = 0, in_flight = 0;
  double throughput_fps = 0;  // completed within the duration / duration
  double mean_ms = 0, p50_ms = 0, p95_ms = 0, p99_ms = 0;  // arrival to done (queue + run)
};

struct Sample {
  double at_us = 0;
  std::vector<size_t> queued;       // per model: tasks in its queue
  std::vector<size_t> remaining;    // per model: queued + in flight
  double variance = 0;              // σ_t of the remaining tasks
  double utilization = 0;           // over the period just ended
  double busy = 0;                  // fraction of the period the device ran a step
  std::vector<uint64_t> completed;  // per model, cumulative
};

struct Report {
  std::string policy, backend;
  double duration_us = 0;  // the run's end on its clock (>= the arrivals' duration with drain)
  std::vector<ModelReport> models;
  std::vector<Sample> samples;
  // Time-weighted over the run: the backend's utilization (achieved occupancy on a simulated
  // GPU, the paper's active-warp metric) and the fraction of time a step ran at all.
  double utilization = 0;
  double busy = 0;
  double throughput_fps = 0;  // all models
  uint64_t steps = 0;
  std::vector<uint64_t> step_sizes;  // step_sizes[k]: steps of k pieces
  CombineStats combine;
  uint64_t decisions = 0;  // policy decisions (the first included)
  double final_variance = 0;
  std::string event_log_sha256;
  std::vector<std::string> event_log;  // with keep_event_log
  std::vector<TaskRecord> tasks;       // every task, by id
  double wall_seconds = 0;
};

class Runtime {
 public:
  // `combiner` may be null for policies that do not combine blocks. All must outlive it.
  Runtime(const ModelSet& models, Backend& backend, Policy& policy, CombinedScheduler* combiner,
          RuntimeOptions options);
  Report run(const std::vector<Arrival>& arrivals);
  // Online: the loop on the calling thread, on the wall clock, taking tasks from `inbox` as they
  // are submitted, until it is closed and every accepted task is answered (or it is stopped:
  // what is left is answered kCancelled). RuntimeOptions' duration, drain, input_of and
  // keep_outputs do not apply. kInvalidArgument for a virtual-time backend.
  Report serve(Inbox& inbox);

 private:
  const ModelSet* models_;
  Backend* backend_;
  Policy* policy_;
  CombinedScheduler* combiner_;
  RuntimeOptions options_;
};

// A run that its caller steps through time: TOP's offline training loop (top.txt Algorithm 1,
// lines 3-24), where an agent decides, the runtime runs a while under that decision, and the
// agent sees what came of it. The same loop as Runtime::run, paused at the times the caller
// gives; the policy decides when the run begins, when σ_t exceeds T, and when the caller asks.
//
//   runtime::Episode ep(set, backend, policy, &combiner, options, arrivals);
//   while (ep.advance(ep.now_us() + 5e5)) { ...; ep.decide(); }
//   runtime::Report r = ep.finish();
class Episode {
 public:
  // As Runtime's; `options` and `arrivals` are kept.
  Episode(const ModelSet& models, Backend& backend, Policy& policy, CombinedScheduler* combiner,
          RuntimeOptions options, std::vector<Arrival> arrivals);
  ~Episode();
  Episode(const Episode&) = delete;
  Episode& operator=(const Episode&) = delete;

  // Runs until the clock reaches `until_us` (after the step under way) or the run ends (the
  // duration, or with drain every task done); false once it has ended.
  bool advance(double until_us);
  // The policy decides again now.
  void decide();
  double now_us() const;
  bool over() const;
  const RuntimeState& state();                  // as the policy would see it now
  const std::vector<Sample>& samples() const;   // every sample so far
  const std::deque<TaskRecord>& tasks() const;  // every task so far, by id
  // Ends the run (what is left is reported queued or in flight) and reports it; once.
  Report finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace braid::runtime
