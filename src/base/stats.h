// Small measurements shared by the runtime, the server and the load generator.
#pragma once

#include <cstddef>
#include <vector>

namespace braid {

// The p-th percentile (0..100) of `values`, linearly interpolated between ranks; 0 when empty.
double percentile(std::vector<double> values, double p);

// The mean and the usual percentiles of a sample of latencies; all 0 when it is empty.
struct Summary {
  double mean = 0, p50 = 0, p90 = 0, p95 = 0, p99 = 0;
};
Summary summarize(std::vector<double> values);

// CPU time of the whole process (every thread), in seconds.
double process_cpu_seconds();

// The CPUs this process may run on (its affinity mask; empty if it cannot be read).
std::vector<int> allowed_cpus();
// How many: allowed_cpus().size(), or the hardware's count if the mask cannot be read (>= 1).
size_t allowed_cpu_count();

}  // namespace braid
