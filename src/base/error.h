// braid::Error — the one error type for failures caused by the outside world
// (malformed model, unsupported op, bad flag or JSON, invalid schedule).
//
//   BRAID_CHECK(dims.size() == 4, ErrorCode::kInvalidModel, "node '", name, "': expected 4-D input");
//   try { ... } catch (const braid::Error& e) { std::cerr << e.what(); return exit_code(e.code()); }
//
// Bugs (broken invariants on already-validated data) use BRAID_ASSERT, which aborts.
// Expected "no answer" outcomes are values (std::optional, bool, diagnostics lists).
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace braid {

enum class ErrorCode {
  kInvalidArgument,  // a bad flag, option or request
  kInvalidModel,     // a malformed model file or graph (cycle, shape mismatch, missing weight)
  kUnsupported,      // a well-formed input braid does not support (op type, attribute value)
  kInvalidSchedule,  // a schedule that violates the graph's dependencies or the format
  kNotFound,         // a file, zoo model or algorithm name that does not exist
  kInternal,         // should not happen; reported as exit code 1
};

std::string_view to_string(ErrorCode code);

// Exit codes of the CLI: 2 for bad input of any kind, 1 for internal errors.
inline int exit_code(ErrorCode code) { return code == ErrorCode::kInternal ? 1 : 2; }

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

namespace detail {
template <typename... Args>
std::string concat(Args&&... args) {
  std::ostringstream out;
  (out << ... << std::forward<Args>(args));
  return out.str();
}
[[noreturn]] void assert_fail(const char* cond, const char* file, int line, const std::string& msg);
}  // namespace detail

}  // namespace braid

#define BRAID_THROW(code, ...) throw ::braid::Error((code), ::braid::detail::concat(__VA_ARGS__))

#define BRAID_CHECK(cond, code, ...)  \
  do {                                \
    if (!(cond)) {                    \
      BRAID_THROW(code, __VA_ARGS__); \
    }                                 \
  } while (false)

#define BRAID_ASSERT(cond, ...)                                                                \
  do {                                                                                         \
    if (!(cond)) {                                                                             \
      ::braid::detail::assert_fail(#cond, __FILE__, __LINE__, ::braid::detail::concat("" __VA_OPT__(, ) __VA_ARGS__)); \
    }                                                                                          \
  } while (false)
