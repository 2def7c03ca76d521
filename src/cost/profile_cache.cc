#include "cost/profile_cache.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "base/error.h"
#include "base/json_value.h"
#include "cost/json_file.h"

namespace braid::cost {
namespace {

nlohmann::json entry_to_json(const Measurement& m, const std::string& description) {
  return {{"median_us", m.median.count()},
          {"p10_us", m.p10.count()},
          {"p90_us", m.p90.count()},
          {"runs", m.runs},
          {"number", m.number},
          {"other_load", m.other_load ? nlohmann::json(*m.other_load) : nlohmann::json()},
          {"suspect", m.suspect},
          {"stage", description}};
}

// nullopt for an entry with a missing or mistyped field, or a latency that is not positive.
std::optional<Measurement> measurement_from_json(const nlohmann::json& j) {
  if (!j.is_object()) return std::nullopt;
  auto number = [&](const char* k) { return j.contains(k) && j[k].is_number(); };
  if (!number("median_us") || !number("p10_us") || !number("p90_us") || !number("runs") ||
      !number("number"))
    return std::nullopt;
  Measurement m;
  m.median = Micros{j["median_us"].get<double>()};
  m.p10 = Micros{j["p10_us"].get<double>()};
  m.p90 = Micros{j["p90_us"].get<double>()};
  try {  // counts past an int are a corrupt entry, not a cast
    m.runs = json_value<int>(j["runs"], "profile cache", "runs");
    m.number = json_value<int>(j["number"], "profile cache", "number");
  } catch (const Error&) {
    return std::nullopt;
  }
  if (number("other_load")) m.other_load = j["other_load"].get<double>();
  if (j.contains("suspect") && j["suspect"].is_boolean()) m.suspect = j["suspect"].get<bool>();
  if (!(m.median.count() > 0) || !std::isfinite(m.median.count())) return std::nullopt;
  return m;
}

constexpr std::chrono::seconds kAutoFlushInterval{5};

}  // namespace

ProfileCache::ProfileCache(std::filesystem::path dir, Machine machine)
    : dir_(std::move(dir)), machine_(std::move(machine)) {
  path_ = dir_ / ("profile-" + fingerprint_digest(machine_) + ".json");
  entries_ = read_file(true);
}

ProfileCache::~ProfileCache() {
  try {
    flush();
  } catch (const std::exception& e) {
    warn(std::string("could not save the profile cache: ") + e.what());
  }
}

std::filesystem::path ProfileCache::default_dir() {
  if (const char* d = std::getenv("BRAID_CACHE_DIR"); d && *d) return d;
  if (const char* d = std::getenv("XDG_CACHE_HOME"); d && *d)
    return std::filesystem::path(d) / "braid";
  if (const char* home = std::getenv("HOME"); home && *home)
    return std::filesystem::path(home) / ".cache" / "braid";
  return std::filesystem::temp_directory_path() / "braid-cache";
}

std::optional<Measurement> ProfileCache::find(const std::string& key) const {
  std::lock_guard lock(mutex_);
  auto it = entries_.find(sha256_hex(key));
  if (it == entries_.end()) return std::nullopt;
  return it->second.m;
}

void ProfileCache::insert(const std::string& key, const Measurement& m,
                          const std::string& description) {
  {
    std::lock_guard lock(mutex_);
    std::string digest = sha256_hex(key);
    entries_[digest] = {m, description};
    unsaved_[digest] = {m, description};
    if (std::chrono::steady_clock::now() - last_flush_ < kAutoFlushInterval) return;
  }
  try {
    flush();
  } catch (const Error& e) {
    warn(std::string("could not save the profile cache: ") + e.what());
  }
}

size_t ProfileCache::size() const {
  std::lock_guard lock(mutex_);
  return entries_.size();
}

std::vector<std::string> ProfileCache::warnings() const {
  std::lock_guard lock(mutex_);
  return warnings_;
}

// Never called with mutex_ held (flush reads the file quietly).
void ProfileCache::warn(std::string message) {
  std::lock_guard lock(mutex_);
  std::fprintf(stderr, "braid: warning: %s\n", message.c_str());
  warnings_.push_back(std::move(message));
}

std::map<std::string, ProfileCache::Entry> ProfileCache::read_file(bool report) {
  std::map<std::string, Entry> entries;
  std::ifstream in(path_);
  if (!in) return entries;  // no cache yet
  auto ignore = [&](const std::string& why) {
    if (report) warn("ignoring the profile cache " + path_.string() + ": " + why);
    return std::map<std::string, Entry>{};
  };
  nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return ignore("not valid JSON");
  if (!j.is_object() || !j.contains("format") || j["format"] != kProfileCacheFormat)
    return ignore(std::string("not in format ") + std::string(kProfileCacheFormat));
  if (!j.contains("entries") || !j["entries"].is_object()) return ignore("no \"entries\" object");
  // Two fingerprints with one digest would mix machines: distrust the file.
  const auto& m = j.contains("machine") ? j["machine"] : nlohmann::json{};
  if (!m.is_object() || !m.contains("fingerprint") || m["fingerprint"] != fingerprint(machine_))
    return ignore("written for another machine");
  size_t bad = 0;
  for (const auto& [digest, value] : j["entries"].items()) {
    std::optional<Measurement> measured = measurement_from_json(value);
    if (!measured) {
      ++bad;
      continue;
    }
    std::string description = value.contains("stage") && value["stage"].is_string()
                                  ? value["stage"].get<std::string>()
                                  : "";
    entries.emplace(digest, Entry{*measured, std::move(description)});
  }
  if (bad > 0 && report)
    warn("skipped " + std::to_string(bad) + " malformed entries of the profile cache " +
         path_.string());
  return entries;
}

void ProfileCache::flush() {
  std::lock_guard lock(mutex_);
  if (unsaved_.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  BRAID_CHECK(!ec, ErrorCode::kInternal, "cannot create the cache directory ", dir_.string(), ": ",
              ec.message());
  FileLock file_lock(path_.string() + ".lock");
  // Keep what other processes saved since we read the file; our new entries win.
  std::map<std::string, Entry> merged = read_file(false);
  for (auto& [digest, entry] : unsaved_) merged[digest] = entry;
  for (const auto& [digest, entry] : merged) entries_.try_emplace(digest, entry);

  nlohmann::json entries = nlohmann::json::object();
  for (const auto& [digest, entry] : merged)
    entries[digest] = entry_to_json(entry.m, entry.description);
  nlohmann::json j = {{"format", kProfileCacheFormat},
                      {"machine", to_json(machine_)},
                      {"entries", std::move(entries)}};
  write_json_atomically(path_, j);
  unsaved_.clear();
  last_flush_ = std::chrono::steady_clock::now();
}

}  // namespace braid::cost
