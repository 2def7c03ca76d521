#include "base/stats.h"

#include <sched.h>
#include <time.h>

#include <algorithm>
#include <cmath>
#include <thread>

namespace braid {

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double rank = p / 100 * double(v.size() - 1);
  const auto lo = size_t(std::floor(rank));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (rank - double(lo));
}

Summary summarize(std::vector<double> v) {
  if (v.empty()) return {};
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  return {.mean = sum / double(v.size()),
          .p50 = percentile(v, 50),
          .p90 = percentile(v, 90),
          .p95 = percentile(v, 95),
          .p99 = percentile(v, 99)};
}

double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

size_t allowed_cpu_count() {
  const size_t n = allowed_cpus().size();
  return n > 0 ? n : std::max(1u, std::thread::hardware_concurrency());
}

}  // namespace braid
