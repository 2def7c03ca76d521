// The profile cache: measured stage latencies on disk, so that a second profile of the same
// model (or of a model sharing its blocks) measures nothing.
//
//   cost::ProfileCache cache(cost::ProfileCache::default_dir(), cost::this_machine());
//   if (auto m = cache.find(key)) return m->median;
//   cache.insert(key, measured, "Conv-Relu || Conv-Relu ; Conv-Relu");
//   cache.flush();                       // also done by the destructor
//
// Layout: one JSON file per machine fingerprint, <dir>/profile-<digest>.json:
//   {"format": "braid.profile_cache/1", "machine": {...},
//    "entries": {"<sha256 of key>": {"median_us": 41.2, "p10_us": 40.9, "p90_us": 43.0,
//                "runs": 5, "number": 3, "other_load": 0.02, "suspect": false,
//                "stage": "Conv-Relu || Conv-Relu"}}}
// The directory is $BRAID_CACHE_DIR, else $XDG_CACHE_HOME/braid, else ~/.cache/braid.
// Writes go to a temporary file renamed over the old one (atomic), under an flock on
// <file>.lock, and merge with what other processes wrote meanwhile. A corrupt file or entry is
// ignored with a warning (stderr, and warnings()), never an error: the cache only saves time.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/units.h"
#include "cost/machine.h"

namespace braid::cost {

inline constexpr std::string_view kProfileCacheFormat = "braid.profile_cache/1";

// One measured stage: the median of per-run means, and the spread of those means.
struct Measurement {
  Micros median{0};
  Micros p10{0};
  Micros p90{0};
  int runs = 0;    // timed runs (IOS's repeat)
  int number = 0;  // inferences per run, averaged (IOS's number)
  // Mean number of other processes' runnable threads, sampled between the timed runs
  // (machine.h): roughly how many CPUs others wanted while this was measured. nullopt: unknown.
  std::optional<double> other_load;
  bool suspect = false;  // measured while the machine was busy: trust it less
};

class ProfileCache {
 public:
  // Reads the file for `machine` in `dir`, if any. A missing directory is created on flush.
  ProfileCache(std::filesystem::path dir, Machine machine);
  ~ProfileCache();  // flushes; errors become warnings
  ProfileCache(const ProfileCache&) = delete;
  ProfileCache& operator=(const ProfileCache&) = delete;

  static std::filesystem::path default_dir();

  // `key` is any text naming what was measured (stage_key plus the run settings).
  std::optional<Measurement> find(const std::string& key) const;
  // Also flushes when the last flush is older than a few seconds, so a long search that dies
  // keeps most of what it measured.
  void insert(const std::string& key, const Measurement& m, const std::string& description);
  // Merges with the file on disk and writes it atomically. Throws braid::Error(kInternal) when
  // the directory cannot be written.
  void flush();

  const std::filesystem::path& path() const { return path_; }
  size_t size() const;
  // Problems met while reading (corrupt file or entries), also printed to stderr.
  std::vector<std::string> warnings() const;

 private:
  struct Entry {
    Measurement m;
    std::string description;
  };
  std::map<std::string, Entry> read_file(bool warn);
  void warn(std::string message);

  std::filesystem::path dir_, path_;
  Machine machine_;
  mutable std::mutex mutex_;
  std::map<std::string, Entry> entries_;  // by digest
  std::map<std::string, Entry> unsaved_;  // inserted since the last flush
  std::vector<std::string> warnings_;
  std::chrono::steady_clock::time_point last_flush_ = std::chrono::steady_clock::now();
};

}  // namespace braid::cost
