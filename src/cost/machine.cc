#include "cost/machine.h"

#include <openssl/evp.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/stats.h"

namespace braid::cost {
namespace {

std::string trim(std::string s) {
  size_t b = s.find_first_not_of(" \t");
  size_t e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? std::string{} : s.substr(b, e - b + 1);
}

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) != 0) continue;
    size_t colon = line.find(':');
    if (colon != std::string::npos) return trim(line.substr(colon + 1));
  }
  return "unknown";
}

std::string omp_wait_setting() {
  std::string s;
  for (const char* name : {"OMP_WAIT_POLICY", "GOMP_SPINCOUNT"})
    if (const char* v = std::getenv(name))
      s += (s.empty() ? "" : " ") + std::string(name) + "=" + v;
  return s.empty() ? "default" : s;
}

}  // namespace

Machine this_machine() {
  return {cpu_model_name(), int(braid::allowed_cpus().size()), BRAID_ONEDNN_VERSION, BRAID_VERSION,
          omp_wait_setting()};
}

std::string fingerprint(const Machine& m) {
  std::ostringstream out;
  out << m.cpu_model << " | " << m.num_cpus << " cpus | oneDNN " << m.onednn_version << " | braid "
      << m.braid_version << " | omp wait " << m.omp_wait;
  if (!m.executor.empty()) out << " | " << m.executor;
  return out.str();
}

std::string fingerprint_digest(const Machine& m) {
  return sha256_hex(fingerprint(m)).substr(0, 16);
}

nlohmann::json to_json(const Machine& m) {
  return {{"cpu_model", m.cpu_model},
          {"num_cpus", m.num_cpus},
          {"onednn_version", m.onednn_version},
          {"braid_version", m.braid_version},
          {"omp_wait", m.omp_wait},
          {"executor", m.executor},
          {"fingerprint", fingerprint(m)}};
}

std::string sha256_hex(const std::string& text) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(text.data(), text.size(), digest, &len, EVP_sha256(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < len; ++i) {
    hex += kHex[digest[i] >> 4];
    hex += kHex[digest[i] & 15];
  }
  return hex;
}

std::optional<std::array<double, 3>> read_loadavg() {
  std::ifstream in("/proc/loadavg");
  std::array<double, 3> load{};
  if (!(in >> load[0] >> load[1] >> load[2])) return std::nullopt;
  return load;
}

std::optional<int> other_runnable_threads() {
  std::ifstream loadavg("/proc/loadavg");
  double load[3];
  int running = 0;
  char slash;
  if (!(loadavg >> load[0] >> load[1] >> load[2] >> running >> slash) || slash != '/')
    return std::nullopt;
  int own = 0;
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    std::ifstream stat(task.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    // "tid (comm) S ...": comm may hold spaces and parentheses, so look after the last ')'.
    size_t close = line.rfind(')');
    if (close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'R') ++own;
  }
  if (ec) return std::nullopt;
  return std::max(0, running - own);
}

}  // namespace braid::cost
