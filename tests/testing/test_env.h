// Paths and tools the tests need, from the environment CTest sets (braid_add_test).
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

namespace braid::testing {

inline std::filesystem::path source_dir() {
  const char* s = std::getenv("BRAID_SOURCE_DIR");
  return s ? s : BRAID_DEFAULT_SOURCE_DIR;
}
inline std::filesystem::path binary_dir() {
  const char* s = std::getenv("BRAID_BINARY_DIR");
  return s ? s : BRAID_DEFAULT_BINARY_DIR;
}
// A file of tests/golden (the example DAGs and schedules of docs/schedule-format.md).
inline std::string golden(const std::string& name) {
  return (source_dir() / "tests/golden" / name).string();
}
// The braid CLI binary, and as the start of a command line.
inline std::filesystem::path braid_cli() {
  return binary_dir() / "braid";
}
inline std::string cli() {
  return braid_cli().string();
}
// The project's Python with onnx/onnxruntime/numpy (make deps creates it); empty if absent.
inline std::filesystem::path venv_python() {
  auto p = source_dir() / ".venv" / "bin" / "python";
  return std::filesystem::exists(p) ? p : std::filesystem::path{};
}
// A scratch directory unique to this test process, removed when it exits (kept with
// BRAID_KEEP_TEST_FILES=1 in the environment).
std::filesystem::path scratch_dir();

struct CommandResult {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};
// Runs a shell command, capturing stdout and stderr.
CommandResult run_command(const std::string& command);

}  // namespace braid::testing
