#include "exec/cpu/lane_pool.h"

#include <gtest/gtest.h>
#include <omp.h>
#include <pthread.h>
#include <sched.h>

#include <mutex>
#include <set>
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
// lane of an allotment plan does for a unit.
std::vector<std::vector<int>> run_and_read_masks(LanePool& pool, bool pin, size_t team = 0) {
  struct Context {
    size_t team;
    std::vector<std::vector<int>> masks;
  } context{team, {}};
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

TEST(LanePool, UnpinnedPoolLeavesTheTeamAlone) {
  const std::vector<int> cpus = allowed_cpus();
  LanePool pool({.threads_per_stream = 2, .pin_threads = false});
  for (const auto& mask : run_and_read_masks(pool, true)) EXPECT_EQ(mask, cpus);
}

}  // namespace
}  // namespace braid::exec::cpu
