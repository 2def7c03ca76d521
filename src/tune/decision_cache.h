// The decision cache of `auto` (auto_schedule.h): which schedule won on this device, so that a
// second run of the same model measures nothing.
//
//   tune::DecisionCache cache(cost::ProfileCache::default_dir());
//   if (auto d = cache.find(key)) ...;           // d->schedule is ready to run
//   cache.insert(key, decision_json);            // written at once
//
// A decision is valid for one key: the model's fingerprint (its units, ops, shapes and edges,
// not its name), the batch, the device's description (describe_device in measure.h), the braid
// version, the cost model and every setting that changes the candidates or their latencies.
//
// Layout: one human-readable JSON file, <dir>/auto-decisions.json:
//   {"format": "braid.auto_decisions/1",
//    "decisions": {"<sha256 of the key>": {"key": {...the key's fields...}, "winner": "lios",
//                  "candidates": [...], "schedule": {...braid.schedule/1...}}}}
// The directory is the profile cache's (cost/profile_cache.h: $BRAID_CACHE_DIR, ...). Writes
// go to a temporary file renamed over the old one under an flock, merged with what other
// processes wrote. A corrupt file or entry is ignored with a warning, never an error.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ir/unit_graph.h"

namespace braid::tune {

inline constexpr std::string_view kDecisionCacheFormat = "braid.auto_decisions/1";

struct DecisionKey {
  std::string model;        // the model's name: for people reading the file, not compared
  std::string fingerprint;  // model_fingerprint()
  int64_t batch = 1;
  std::string device;  // describe_device()
  std::string braid_version;
  std::string settings;  // cost model, streams, executor options...: one line
};
nlohmann::json to_json(const DecisionKey& key);
// The digest the file indexes decisions by (model excluded: a renamed file is the same model).
std::string digest(const DecisionKey& key);

// A SHA-256 of what decides the model's latency: each unit's ops with their attributes and
// tensor types (cost::group_key), its latency for a weighted DAG, and the edges between units.
std::string model_fingerprint(const ir::UnitGraph& units);

// The version braid was built as (CMake's PROJECT_VERSION).
std::string braid_version();

class DecisionCache {
 public:
  explicit DecisionCache(std::filesystem::path dir);

  // The decision stored for `key` (the JSON given to insert), or nullopt.
  std::optional<nlohmann::json> find(const DecisionKey& key) const;
  // Stores `decision` for `key` and writes the file now. A file that cannot be written becomes
  // a warning: the cache only saves time.
  void insert(const DecisionKey& key, const nlohmann::json& decision);

  const std::filesystem::path& path() const { return path_; }
  // Problems met (corrupt file or entries, a file that could not be written), also printed to
  // stderr.
  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  nlohmann::json read_file(bool report);
  void warn(std::string message);

  std::filesystem::path dir_, path_;
  nlohmann::json decisions_ = nlohmann::json::object();  // digest -> {"key", decision...}
  std::vector<std::string> warnings_;
};

}  // namespace braid::tune
