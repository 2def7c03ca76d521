#include "tune/decision_cache.h"

#include <cstdio>
#include <fstream>

#include "base/error.h"
#include "cost/json_file.h"
#include "cost/machine.h"
#include "cost/stage_key.h"

namespace braid::tune {

nlohmann::json to_json(const DecisionKey& key) {
  return {{"model", key.model},   {"fingerprint", key.fingerprint},     {"batch", key.batch},
          {"device", key.device}, {"braid_version", key.braid_version}, {"settings", key.settings}};
}

std::string digest(const DecisionKey& key) {
  return cost::sha256_hex(key.fingerprint + "\n" + std::to_string(key.batch) + "\n" + key.device +
                          "\n" + key.braid_version + "\n" + key.settings);
}

std::string model_fingerprint(const ir::UnitGraph& units) {
  std::string text;
  for (size_t i = 0; i < units.num_units(); ++i) {
    const UnitId u{static_cast<uint32_t>(i)};
    const ir::Unit& unit = units.unit(u);
    if (units.graph() != nullptr) {
      text += cost::group_key(units, std::span(&u, 1));
    } else {
      text += "task " + std::to_string(unit.latency ? unit.latency->count() : 0.0);
      if (unit.utilization) text += " util " + std::to_string(*unit.utilization);
    }
    text += " <-";
    for (UnitId p : units.predecessors(u)) text += " " + std::to_string(static_cast<uint32_t>(p));
    text += "\n";
  }
  return cost::sha256_hex(text);
}

std::string braid_version() {
  return cost::this_machine().braid_version;
}

DecisionCache::DecisionCache(std::filesystem::path dir)
    : dir_(std::move(dir)), path_(dir_ / "auto-decisions.json") {
  decisions_ = read_file(true);
}

std::optional<nlohmann::json> DecisionCache::find(const DecisionKey& key) const {
  auto it = decisions_.find(digest(key));
  if (it == decisions_.end()) return std::nullopt;
  return *it;
}

void DecisionCache::warn(std::string message) {
  std::fprintf(stderr, "braid: warning: %s\n", message.c_str());
  warnings_.push_back(std::move(message));
}

nlohmann::json DecisionCache::read_file(bool report) {
  nlohmann::json decisions = nlohmann::json::object();
  std::ifstream in(path_);
  if (!in) return decisions;  // no cache yet
  auto ignore = [&](const std::string& why) {
    if (report) warn("ignoring the decision cache " + path_.string() + ": " + why);
    return nlohmann::json::object();
  };
  nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return ignore("not valid JSON");
  if (!j.is_object() || !j.contains("format") || j["format"] != kDecisionCacheFormat)
    return ignore("not in format " + std::string(kDecisionCacheFormat));
  if (!j.contains("decisions") || !j["decisions"].is_object())
    return ignore("no \"decisions\" object");
  size_t bad = 0;
  for (const auto& [d, value] : j["decisions"].items()) {
    // What auto_schedule reads back; anything else in an entry is for people.
    if (!value.is_object() || !value.contains("winner") || !value["winner"].is_string() ||
        !value.contains("schedule") || !value["schedule"].is_object()) {
      ++bad;
      continue;
    }
    decisions[d] = value;
  }
  if (bad > 0 && report)
    warn("skipped " + std::to_string(bad) + " malformed entries of the decision cache " +
         path_.string());
  return decisions;
}

void DecisionCache::insert(const DecisionKey& key, const nlohmann::json& decision) {
  nlohmann::json entry = decision;
  entry["key"] = to_json(key);
  decisions_[digest(key)] = entry;
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) return warn("cannot create the cache directory " + dir_.string() + ": " + ec.message());
  // Under an flock, merged with what other processes saved since we read the file.
  cost::FileLock lock(path_.string() + ".lock");
  nlohmann::json merged = read_file(false);
  merged[digest(key)] = entry;
  for (const auto& [d, value] : merged.items())
    if (!decisions_.contains(d)) decisions_[d] = value;
  try {
    cost::write_json_atomically(path_, {{"format", kDecisionCacheFormat}, {"decisions", merged}});
  } catch (const Error& e) {  // a cache that cannot be saved costs a re-measure, not the run
    warn("could not save the decision cache " + path_.string() + ": " + e.what());
  }
}

}  // namespace braid::tune
