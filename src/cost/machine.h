// The machine a profile was measured on, and how busy it was while measuring.
//
//   cost::Machine m = cost::this_machine();
//   cost::fingerprint(m);        // "Intel(R) Xeon(R) Processor | 2 cpus | oneDNN 3.2.0 | braid
//   0.1.0 | ..." std::optional<int> others = cost::other_runnable_threads();   // between timed
//   runs
//
// Measured latencies are only valid on the machine that measured them, so the profile cache
// (profile_cache.h) is keyed by the fingerprint. The OpenMP wait policy is part of it: with
// several threads per stream it changes latencies by up to 17x when a core is busy
// (ecosystem.md §4.4).
#pragma once

#include <array>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace braid::cost {

struct Machine {
  std::string cpu_model;       // "model name" of /proc/cpuinfo
  int num_cpus = 0;            // CPUs this process may run on (sched_getaffinity, not nproc)
  std::string onednn_version;  // the oneDNN braid was built against
  std::string braid_version;
  std::string omp_wait;  // OMP_WAIT_POLICY and GOMP_SPINCOUNT as set, or "default"
  // What runs the measurements and changes their numbers (set by the profiler: the CPU
  // executor's activation layout), so a layout change never reads stale latencies.
  std::string executor;
};

Machine this_machine();
// One line naming every field; equal fingerprints = comparable measurements.
std::string fingerprint(const Machine& machine);
// A 16-hex-digit digest of fingerprint(), used in file names.
std::string fingerprint_digest(const Machine& machine);
nlohmann::json to_json(const Machine& machine);

// A hex SHA-256 digest of `text` (profile_cache.cc keys entries with it).
std::string sha256_hex(const std::string& text);

// /proc/loadavg: the 1, 5 and 15 minute load averages; nullopt where it cannot be read.
std::optional<std::array<double, 3>> read_loadavg();

// Threads of other processes runnable right now on the whole machine: the running count of
// /proc/loadavg minus this process's threads in state R (/proc/self/task/*/stat). Sampled
// between timed runs, its mean is how many CPUs others wanted while we measured. nullopt where
// /proc cannot be read.
std::optional<int> other_runnable_threads();

}  // namespace braid::cost
