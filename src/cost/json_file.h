// Cache files shared between processes (the profile cache, auto's decisions): an flock held
// while a file is read, merged and rewritten, and the rewrite made atomic (a temporary file
// renamed over the old one), so a reader never sees half a file.
//
//   cost::FileLock lock(path.string() + ".lock");
//   nlohmann::json merged = ...read path, add ours...;
//   cost::write_json_atomically(path, merged);
#pragma once

#include <filesystem>

#include <nlohmann/json.hpp>

namespace braid::cost {

// Holds an flock for the lifetime of the object; a no-op when the lock file cannot be opened
// (a read-only cache still works, it just cannot be written).
class FileLock {
 public:
  explicit FileLock(const std::filesystem::path& path);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_;
};

// Writes `json` (indented by one) to `path` through `path`.tmp.PID and a rename. Throws
// braid::Error(kInternal) naming the file when either step fails; the temporary is removed.
void write_json_atomically(const std::filesystem::path& path, const nlohmann::json& json);

}  // namespace braid::cost
