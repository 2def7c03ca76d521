#include "base/error.h"

#include <cstdio>
#include <cstdlib>

namespace braid {

std::string_view to_string(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return "invalid argument";
    case ErrorCode::kInvalidModel: return "invalid model";
    case ErrorCode::kUnsupported: return "unsupported";
    case ErrorCode::kInvalidSchedule: return "invalid schedule";
    case ErrorCode::kNotFound: return "not found";
    case ErrorCode::kInternal: return "internal error";
  }
  return "unknown error";
}

namespace detail {
void assert_fail(const char* cond, const char* file, int line, const std::string& msg) {
  std::fprintf(stderr, "braid: internal assertion failed: %s at %s:%d %s\n", cond, file, line,
               msg.c_str());
  std::abort();
}
}  // namespace detail

}  // namespace braid
