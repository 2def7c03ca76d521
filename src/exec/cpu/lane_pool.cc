#include "exec/cpu/lane_pool.h"

#include <omp.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <set>
#include <thread>

#include "base/error.h"
#include "base/stats.h"

namespace braid::exec::cpu {
namespace {

struct FreeDeleter {
  void operator()(std::byte* p) const { std::free(p); }
};

}  // namespace

struct LanePool::Worker {
  std::thread thread;
  // Where the pool pins statically: the index in cpus_ of its OpenMP team's first CPU (member k
  // runs on cpus_[(first_cpu + k) % n]).
  size_t first_cpu = 0;
  // The CPU each member of its OpenMP team is pinned to now (member k on team_cpus[k % size]);
  // empty: every member may use every CPU of the process. `want` is what the caller asks for
  // the job it hands over, written before the handover.
  std::vector<int> team_cpus;
  std::vector<int> want;
  // The pool hands a job over by writing `job` and `member`, then bumping `generation`; the
  // worker answers by storing that generation in `finished` (under the pool's done_mutex_).
  // The job lives on its caller's stack, so the worker's last touch of it is before that.
  std::atomic<uint64_t> generation{0};
  std::atomic<uint64_t> finished{0};
  GangJob* job = nullptr;
  size_t member = 0;
  bool busy = false;  // under the pool's mutex
  LaneState lane;
  std::unique_ptr<std::byte, FreeDeleter> scratchpad;
  Bytes scratchpad_bytes = 0;
};

LanePool::LanePool(const LanePoolOptions& options) : options_(options), cpus_(allowed_cpus()) {
  BRAID_CHECK(options.threads_per_stream >= 1, ErrorCode::kInvalidArgument,
              "threads per stream must be >= 1, got ", options.threads_per_stream);
}

LanePool::~LanePool() {
  shutdown_ = true;
  std::lock_guard lock(mutex_);
  for (auto& w : workers_) {
    w->generation.fetch_add(1, std::memory_order_release);
    w->generation.notify_one();
  }
  for (auto& w : workers_) w->thread.join();
}

size_t LanePool::num_workers() const {
  return num_workers_.load();
}

LanePool::Worker& LanePool::add_worker() {
  const size_t i = workers_.size();
  auto worker = std::make_unique<Worker>();
  // Worker i gets threads_per_stream consecutive CPUs (wrapping around), one per member of its
  // OpenMP team (worker_main).
  if (pins())
    worker->first_cpu = (i * static_cast<size_t>(options_.threads_per_stream)) % cpus_.size();
  worker->lane.stream = dnnl::stream(engine_);
  Worker& w = *worker;
  workers_.push_back(std::move(worker));
  num_workers_ = workers_.size();
  w.thread = std::thread([this, &w] { worker_main(w); });
  return w;
}

namespace {

void set_affinity(const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int cpu : cpus) CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

// Pins the calling worker's OpenMP team of `members`: member k to want[k % size], or, where
// `want` is empty, every member to all of `cpus`. A member that sleeps between runs (past
// libgomp's spin) was woken by Linux onto its master's CPU when its mask allowed it: a whole
// two-thread run then shared one core (SqueezeNet after 0.1 s idle: 47 ms, 23 ms warm;
// bench/README, issue 28 session 14).
void set_team_affinity(const std::vector<int>& want, const std::vector<int>& cpus, size_t members) {
#pragma omp parallel num_threads(static_cast <int>(members))
  {
    if (want.empty())
      set_affinity(cpus);
    else
      set_affinity({want[static_cast<size_t>(omp_get_thread_num()) % want.size()]});
  }
}

// The CPUs that running jobs of unpinned pools hold, process-wide: every pool of the process
// (every session, every model of the runtime) takes its teams' CPUs from here, so jobs running
// side by side get different CPUs.
class CpuLeases {
 public:
  // `n` CPUs of `cpus` that no running job holds, lowest first (so a model run alone gets the
  // same CPUs run after run and its threads need no new mask); empty where fewer are free.
  std::vector<int> take(const std::vector<int>& cpus, size_t n) {
    std::lock_guard lock(mutex_);
    std::vector<int> taken;
    for (int cpu : cpus) {
      if (taken.size() == n) break;
      if (!held_.contains(cpu)) taken.push_back(cpu);
    }
    if (taken.size() < n) return {};
    held_.insert(taken.begin(), taken.end());
    return taken;
  }
  void give_back(const std::vector<int>& taken) {
    std::lock_guard lock(mutex_);
    for (int cpu : taken) held_.erase(cpu);
  }

 private:
  std::mutex mutex_;
  std::set<int> held_;
};

CpuLeases& cpu_leases() {
  static CpuLeases leases;
  return leases;
}

}  // namespace

bool LanePool::pins() const {
  return options_.pin_threads && !cpus_.empty();
}

size_t LanePool::pinned_team(const GangJob& job) const {
  if (cpus_.empty() || !job.pin) return 0;
  return job.team > 0 ? job.team : static_cast<size_t>(options_.threads_per_stream);
}

void LanePool::worker_main(Worker& w) {
  // OpenMP's thread budget is per thread: the primitives were built under this one.
  omp_set_num_threads(options_.threads_per_stream);
  const size_t width = static_cast<size_t>(options_.threads_per_stream);
  if (pins()) {
    for (size_t k = 0; k < width; ++k)
      w.team_cpus.push_back(cpus_[(w.first_cpu + k) % cpus_.size()]);
    set_team_affinity(w.team_cpus, cpus_, width);
  }
  uint64_t seen = 0;
  for (;;) {
    // Idle workers spin for their next job only while every worker has CPUs of its own.
    const bool fits = num_workers_.load(std::memory_order_relaxed) *
                          static_cast<size_t>(options_.threads_per_stream) <=
                      cpus_.size();
    auto handed = [&] { return w.generation.load(std::memory_order_acquire) != seen; };
    spin_until(handed, std::chrono::microseconds(fits ? options_.spin_us : 0));
    for (uint64_t g = w.generation.load(std::memory_order_acquire); g == seen;
         g = w.generation.load(std::memory_order_acquire))
      w.generation.wait(g, std::memory_order_acquire);
    if (shutdown_) return;
    seen = w.generation.load(std::memory_order_acquire);
    GangJob& job = *w.job;
    if (w.want != w.team_cpus) {
      set_team_affinity(w.want, cpus_, std::max({w.want.size(), w.team_cpus.size(), width}));
      w.team_cpus = w.want;
    }
    try {
      if (w.scratchpad_bytes < job.scratch) {
        const Bytes bytes = (job.scratch + 63) / 64 * 64;
        w.scratchpad.reset(static_cast<std::byte*>(std::aligned_alloc(64, bytes)));
        BRAID_CHECK(w.scratchpad != nullptr, ErrorCode::kInternal, "cannot allocate a ", bytes,
                    "-byte scratchpad");
        w.scratchpad_bytes = bytes;
        w.lane.scratchpad = w.scratchpad.get();
      }
      job.run(job.context, w.member, w.lane);
    } catch (...) {
      if (!job.failed.exchange(true)) {
        job.failure = std::current_exception();
        if (job.on_failure) job.on_failure(job.context);
      }
    }
    {
      // Under the mutex the caller sleeps on (a condition variable, not an atomic wait: a
      // caller sharing this worker's CPU must be woken, and so scheduled at once, not left
      // yielding to a worker spinning for its next job).
      std::lock_guard lock(done_mutex_);
      w.finished.store(seen, std::memory_order_release);
    }
    done_cv_.notify_all();
  }
}

void LanePool::run(GangJob& job) {
  if (job.members == 0) return;
  job.failed = false;
  job.failure = nullptr;
  // The gang: the lowest idle workers (so one model alone gets workers 0..k-1, on CPUs
  // 0..k-1), new ones where too few are idle.
  std::vector<Worker*> gang;
  gang.reserve(job.members);
  const size_t gang_cpus =
      job.cpus > 0 ? job.cpus : job.members * static_cast<size_t>(options_.threads_per_stream);
  bool caller_spins = false;
  std::vector<int> leased;
  {
    std::lock_guard lock(mutex_);
    for (auto& w : workers_) {
      if (gang.size() == job.members) break;
      if (!w->busy) gang.push_back(w.get());
    }
    while (gang.size() < job.members) gang.push_back(&add_worker());
    for (Worker* w : gang) w->busy = true;
    busy_ += gang.size();
    busy_cpus_ += gang_cpus;
    const size_t busy_cpus = busy_cpus_;
    job.spin =
        std::chrono::microseconds(job.may_spin && busy_cpus <= cpus_.size() ? options_.spin_us : 0);
    // The caller spins for the gang's end only on a CPU of its own: spinning on a member's CPU
    // would take it from the member it waits for.
    caller_spins = busy_cpus + 1 <= cpus_.size();
    // Each member's team CPUs: fixed where the pool pins, else CPUs no other running job of
    // the process holds, one per team member; where too few are free the team floats.
    if (const size_t team = pinned_team(job); team > 0) {
      if (!pins()) leased = cpu_leases().take(cpus_, gang.size() * team);
      for (size_t i = 0; i < gang.size(); ++i) {
        Worker& w = *gang[i];
        w.want.clear();
        for (size_t k = 0; k < team; ++k) {
          if (pins())
            w.want.push_back(cpus_[(w.first_cpu + k) % cpus_.size()]);
          else if (!leased.empty())
            w.want.push_back(leased[i * team + k]);
        }
      }
    } else {
      for (Worker* w : gang) w->want.clear();
    }
    if (caller_spins) {
      const int me = sched_getcpu();
      for (const Worker* w : gang)
        if (std::find(w->want.begin(), w->want.end(), me) != w->want.end()) caller_spins = false;
    }
  }
  std::vector<uint64_t> handed(gang.size());
  for (size_t i = 0; i < gang.size(); ++i) {
    Worker& w = *gang[i];
    w.job = &job;
    w.member = i;
    handed[i] = w.generation.fetch_add(1, std::memory_order_acq_rel) + 1;
    w.generation.notify_one();
  }
  auto all_finished = [&] {
    for (size_t i = 0; i < gang.size(); ++i)
      if (gang[i]->finished.load(std::memory_order_acquire) != handed[i]) return false;
    return true;
  };
  if (!caller_spins || !spin_until(all_finished, job.spin)) {
    std::unique_lock lock(done_mutex_);
    done_cv_.wait(lock, all_finished);
  }
  {
    std::lock_guard lock(mutex_);
    for (Worker* w : gang) w->busy = false;
    busy_ -= gang.size();
    busy_cpus_ -= gang_cpus;
  }
  if (!leased.empty()) cpu_leases().give_back(leased);
  if (job.failed) std::rethrow_exception(job.failure);
}

}  // namespace braid::exec::cpu
