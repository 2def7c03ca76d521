#include "exec/cpu/lane_pool.h"

#include <gtest/gtest.h>
#include <omp.h>
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "base/stats.h"

namespace braid::exec::cpu {
namespace {

// The CPUs each member of the calling thread's OpenMP team may run on, by team index.
std::vector<std::vector<int>> team_masks() {
  std::vector<std::vector<int>> masks(static_cast<size_t>(omp_get_max_threads()));
  std::mutex m;
#pragma omp parallel
  {
    cpu_set_t set;
    CPU_ZERO(&set);
    pthread_getaffinity_np(pthread_self(), sizeof(set), &set);
    std::vector<int> cpus;
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
    std::lock_guard lock(m);
    masks[static_cast<size_t>(omp_get_thread_num())] = cpus;
  }
  return masks;
}

// One member's team masks; `team` > 0: the job widens its team to that many threads, as a
// lane of an allotment plan does for a unit. With `hold`, the job reads its masks, sets
// `*read`, and returns only once `*hold` is false (to keep its CPUs while another job runs).
std::vector<std::vector<int>> run_and_read_masks(LanePool& pool, bool pin, size_t team = 0,
                                                 std::atomic<bool>* hold = nullptr,
                                                 std::atomic<bool>* read = nullptr) {
  struct Context {
    size_t team;
    std::atomic<bool>* hold;
    std::atomic<bool>* read;
    std::vector<std::vector<int>> masks;
  } context{team, hold, read, {}};
  GangJob job;
  job.members = 1;
  job.pin = pin;
  job.team = team;
  job.context = &context;
  job.run = [](void* c, size_t, LaneState&) {
    auto& ctx = *static_cast<Context*>(c);
    const int saved = omp_get_max_threads();
    if (ctx.team > 0) omp_set_num_threads(static_cast<int>(ctx.team));
    ctx.masks = team_masks();
    omp_set_num_threads(saved);
    if (ctx.read) ctx.read->store(true);
    while (ctx.hold && ctx.hold->load()) std::this_thread::yield();
  };
  pool.run(job);
  return context.masks;
}

// A pinned lane's OpenMP team has one CPU per member: a member woken after sleeping between
// runs cannot land on its master's CPU (which made runs after ~0.1 s idle take one thread's
// time on a 2-vCPU VM). Unpinned, every member may use every allowed CPU again.
TEST(LanePool, PinnedLaneGivesEachTeamMemberItsOwnCpu) {
  const std::vector<int> cpus = allowed_cpus();
  if (cpus.size() < 2) GTEST_SKIP() << "needs two CPUs, this process may use " << cpus.size();
  LanePool pool({.threads_per_stream = 2, .pin_threads = true});
  const auto pinned = run_and_read_masks(pool, true);
  ASSERT_EQ(pinned.size(), 2u);
  EXPECT_EQ(pinned[0], std::vector<int>{cpus[0]});
  EXPECT_EQ(pinned[1], std::vector<int>{cpus[1]});
  const auto unpinned = run_and_read_masks(pool, false);
  for (const auto& mask : unpinned) EXPECT_EQ(mask, cpus);
  const auto again = run_and_read_masks(pool, true);
  EXPECT_EQ(again, pinned);
}

// A lone lane of an allotment plan (one thread per stream, units on up to two): pinned with a
// team of two, its units' two threads on two CPUs.
TEST(LanePool, LoneAllotmentLanePinsItsWidestTeam) {
  const std::vector<int> cpus = allowed_cpus();
  if (cpus.size() < 2) GTEST_SKIP() << "needs two CPUs, this process may use " << cpus.size();
  LanePool pool({.threads_per_stream = 1, .pin_threads = true});
  const auto masks = run_and_read_masks(pool, true, 2);
  ASSERT_EQ(masks.size(), 2u);
  EXPECT_EQ(masks[0], std::vector<int>{cpus[0]});
  EXPECT_EQ(masks[1], std::vector<int>{cpus[1]});
  for (const auto& mask : run_and_read_masks(pool, false, 2)) EXPECT_EQ(mask, cpus);
}

// Unpinned pools (the Python session's default, the runtime's, `braid serve`'s) pin each run's
// team one member per CPU too, on CPUs no other run of the process holds: two sessions' runs
// side by side get different CPUs; a run that finds too few free floats.
TEST(LanePool, UnpinnedPoolsTakeFreeCpusForEachRun) {
  const std::vector<int> cpus = allowed_cpus();
  if (cpus.size() < 2) GTEST_SKIP() << "needs two CPUs, this process may use " << cpus.size();
  LanePool wide({.threads_per_stream = 2, .pin_threads = false});
  EXPECT_EQ(run_and_read_masks(wide, true), (std::vector<std::vector<int>>{{cpus[0]}, {cpus[1]}}));

  LanePool first({.threads_per_stream = 1, .pin_threads = false});
  LanePool second({.threads_per_stream = 1, .pin_threads = false});
  std::atomic<bool> hold{true}, read{false};
  std::vector<std::vector<int>> held;
  std::thread holder([&] { held = run_and_read_masks(first, true, 0, &hold, &read); });
  while (!read.load()) std::this_thread::yield();
  const auto beside = run_and_read_masks(second, true);
  const auto crowded = run_and_read_masks(wide, true, cpus.size());  // wants every CPU
  hold = false;
  holder.join();
  EXPECT_EQ(held, std::vector<std::vector<int>>{{cpus[0]}});
  EXPECT_EQ(beside, std::vector<std::vector<int>>{{cpus[1]}});
  for (const auto& mask : crowded) EXPECT_EQ(mask, cpus);
  // Given back: the next run alone takes the first CPU again.
  EXPECT_EQ(run_and_read_masks(second, true), std::vector<std::vector<int>>{{cpus[0]}});
  // A job that asks for no pinning floats in an unpinned pool as in a pinned one.
  for (const auto& mask : run_and_read_masks(wide, false)) EXPECT_EQ(mask, cpus);
}

}  // namespace
}  // namespace braid::exec::cpu
