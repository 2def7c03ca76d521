#include "test_env.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace braid::testing {

namespace {

std::filesystem::path& scratch_path() {
  static std::filesystem::path path;
  return path;
}

// Every test process has its own directory (CTest runs each test in a process of its own): left
// behind they filled /tmp by the thousand, so it goes at exit unless BRAID_KEEP_TEST_FILES is set.
void remove_scratch_dir() {
  if (std::getenv("BRAID_KEEP_TEST_FILES") != nullptr) return;
  std::error_code ignored;
  std::filesystem::remove_all(scratch_path(), ignored);
}

}  // namespace

std::filesystem::path scratch_dir() {
  static const bool made = [] {
    scratch_path() =
        std::filesystem::temp_directory_path() / ("braid_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(scratch_path());
    std::atexit(remove_scratch_dir);
    return true;
  }();
  (void)made;
  return scratch_path();
}

CommandResult run_command(const std::string& command) {
  static int counter = 0;
  auto base = scratch_dir() / ("cmd" + std::to_string(++counter));
  std::string out = base.string() + ".out", err = base.string() + ".err";
  int status = std::system((command + " >" + out + " 2>" + err).c_str());
  auto slurp = [](const std::string& path) {
    std::ifstream f(path);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
  };
  CommandResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

}  // namespace braid::testing
