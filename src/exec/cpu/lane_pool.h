// The CPU executor's lanes: one pool of worker threads shared by every model an executor
// prepares (and by every request of each), so models running side by side spread over the
// cores instead of each pinning its own lanes from CPU 0. A job takes a gang of idle workers —
// one per lane of the plan, all started before any is waited for, since a plan's lanes wait on
// each other's events — and gives them back when every member is done. Gangs of different
// callers run side by side on different workers; the pool grows when too few are idle, so a
// gang never waits for another gang and two gangs can never deadlock.
//
// Each worker keeps what a lane needs (cpu_kernels.h's contract): a oneDNN stream on the pool's
// engine, its own scratchpad, and the executor's OpenMP thread budget.
//
//   cpu::LanePool pool({.threads_per_stream = 1, .pin_threads = true, .spin_us = 100});
//   cpu::GangJob job{.run = &run_member, .context = &ctx, .members = 3, .scratch = bytes};
//   pool.run(job);  // rethrows the first member's failure
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <memory>
#include <mutex>
#include <vector>

#include "base/units.h"
#include "exec/cpu/cpu_kernels.h"

namespace braid::exec::cpu {

// Spins until `done()` or `budget` has passed; returns done(). The clock is read once every 64
// probes, so a probe costs a few nanoseconds.
template <class Done>
bool spin_until(Done done, std::chrono::microseconds budget) {
  if (budget.count() <= 0) return done();
  const auto deadline = std::chrono::steady_clock::now() + budget;
  for (;;) {
    for (int k = 0; k < 64; ++k) {
      if (done()) return true;
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    }
    if (std::chrono::steady_clock::now() >= deadline) return done();
  }
}

// Waits until `value` holds `want`: spins for `spin`, then sleeps on the atomic.
template <class T>
void wait_for(const std::atomic<T>& value, T want, std::chrono::microseconds spin) {
  spin_until([&] { return value.load(std::memory_order_acquire) == want; }, spin);
  for (T v = value.load(std::memory_order_acquire); v != want;
       v = value.load(std::memory_order_acquire))
    value.wait(v, std::memory_order_acquire);
}

// A job for a gang of workers: member i calls run(context, i, its lane state). A member that
// throws fails the job: `failed` is set, the first exception kept, and on_failure(context)
// called once (to release members waiting on events the failed one will not record). Members
// should stop early once `failed` is set.
struct GangJob {
  void (*run)(void* context, size_t member, LaneState& lane) = nullptr;
  void* context = nullptr;
  size_t members = 0;
  Bytes scratch = 0;  // every member's scratchpad holds at least this many bytes
  void (*on_failure)(void* context) = nullptr;
  // The CPUs the gang keeps busy at most; 0: members x threads per stream. A plan with an
  // allotment (sched/lower.h) gives its cores: a member's OpenMP team widens and narrows unit by
  // unit. Several such members run unpinned (their teams may take any CPU the plan leaves
  // free); one alone is pinned with `team` = the cores.
  size_t cpus = 0;
  // Members on their own CPUs: member i's OpenMP team members k < team (0: threads per stream)
  // one per CPU, from member i's first CPU on (wrapping) where the pool pins, else on CPUs no
  // other running job of the process holds (floating where too few are free).
  bool pin = true;
  size_t team = 0;
  // Whether a member may spin on an event: not where another member's unit widens onto the
  // CPU the waiting member would spin on.
  bool may_spin = true;

  // Set by the pool.
  std::chrono::microseconds spin{0};  // how long a member may spin on an event
  std::atomic<bool> failed{false};
  std::exception_ptr failure;
};

struct LanePoolOptions {
  int threads_per_stream = 1;  // OpenMP threads in each worker's primitives
  // true: worker i on CPUs [i*T, i*T + T) of the allowed set (wrapping), for good. false: each
  // job's teams on CPUs that no other job running in this process (in any pool) holds, taken
  // for the job; where too few are free, the job's threads may use every allowed CPU.
  bool pin_threads = true;
  // How long a worker spins for its next job, and a member on an event, before sleeping: only
  // while every busy worker (for idle ones: every worker) has CPUs of its own.
  int spin_us = 100;
};

class LanePool {
 public:
  explicit LanePool(const LanePoolOptions& options);
  ~LanePool();
  LanePool(const LanePool&) = delete;
  LanePool& operator=(const LanePool&) = delete;

  // The engine every kernel run on this pool's workers is built for (a stream is tied to it).
  const dnnl::engine& engine() const { return engine_; }
  int threads_per_stream() const { return options_.threads_per_stream; }

  // Runs `job` on job.members workers at once and returns when every member has returned;
  // rethrows the job's failure. Thread-safe.
  void run(GangJob& job);

  size_t num_workers() const;

 private:
  struct Worker;
  Worker& add_worker();  // under mutex_
  void worker_main(Worker& worker);
  bool pins() const;  // pin_threads, and the allowed CPUs are known
  // How many of the OpenMP team members of each of the job's workers are pinned one per CPU
  // (fixed or leased CPUs); 0: none.
  size_t pinned_team(const GangJob& job) const;

  LanePoolOptions options_;
  dnnl::engine engine_{dnnl::engine::kind::cpu, 0};
  std::vector<int> cpus_;  // the CPUs this process may use
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<Worker>> workers_;  // never shrinks; addresses stable
  size_t busy_ = 0;                               // workers in a gang
  size_t busy_cpus_ = 0;                          // the CPUs their gangs keep busy
  std::mutex done_mutex_;  // a worker's `finished` is stored under it; callers sleep on it
  std::condition_variable done_cv_;
  std::atomic<size_t> num_workers_{0};
  std::atomic<bool> shutdown_{false};
};

}  // namespace braid::exec::cpu
