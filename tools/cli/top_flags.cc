#include "top_flags.h"

#include "base/error.h"
#include "base/parse.h"
#include "runtime/arrivals.h"

namespace braid::cli {

ModelRate parse_model_rate(const std::string& flag) {
  const std::string where = "--model '" + flag + "'";
  const size_t first = flag.find(':');
  const size_t second = first == std::string::npos ? first : flag.find(':', first + 1);
  BRAID_CHECK(first != 0 && !flag.empty() &&
                  (second == std::string::npos || flag.find(':', second + 1) == std::string::npos),
              ErrorCode::kInvalidArgument, where, ": expected NAME[:FPS[:ir|stages]]");
  ModelRate m{.model = flag.substr(0, first)};
  if (first == std::string::npos) return m;
  const std::string fps =
      flag.substr(first + 1, second == std::string::npos ? std::string::npos : second - first - 1);
  m.fps = parse_double(fps, 0, runtime::kMaxFps, "the rate (FPS)", where);
  if (second == std::string::npos) return m;
  const std::string blocks = flag.substr(second + 1);
  BRAID_CHECK(blocks == "ir" || blocks == "stages", ErrorCode::kInvalidArgument, where,
              ": blocks must be ir or stages");
  m.stages = blocks == "stages";
  return m;
}

}  // namespace braid::cli
