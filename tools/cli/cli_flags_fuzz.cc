// libFuzzer entry point for braid's checked parsing of user text (issue 27): parse_int,
// parse_double and parse_cuda_device (base/parse.h), top's --model NAME[:FPS[:ir|stages]]
// (top_flags.h) and --cost's names (tune::parse_cost_name), which every numeric flag, MODEL:RATE
// pattern, cuda:N and cost model name goes through.
// The first byte picks the parser and, for the number parsers, the limits; the rest is the text.
// Any bytes must end in a value within its limits or a braid::Error(kInvalidArgument) with a
// short sentence; anything else (another exception, a crash, a sanitizer report, a value outside
// the limits) is a bug. scripts/fuzz.sh runs it.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>
#include <string_view>

#include "base/error.h"
#include "base/parse.h"
#include "runtime/arrivals.h"
#include "top_flags.h"
#include "tune/cost_models.h"

namespace {

// Limits the CLI uses (commands.h) and the extremes of int64.
constexpr int64_t kIntLimits[][2] = {{1, 65536},
                                     {0, 1023},
                                     {1, 1'000'000},
                                     {-1, 65535},
                                     {std::numeric_limits<int64_t>::min(), 0},
                                     {0, std::numeric_limits<int64_t>::max()},
                                     {5, 5},
                                     {1, std::numeric_limits<int>::max()}};
constexpr double kDoubleLimits[][2] = {{0, 1e5},        {0.001, 86400}, {0, 1e6},
                                       {-1e300, 1e300}, {0, 0},         {1e-300, 1e-200}};

void require(bool cond) {
  if (!cond) std::abort();
}

void fuzz(uint8_t selector, const std::string& text) {
  switch (selector % 5) {  // the parser; selector / 5 picks the limits
    case 0: {
      const auto& l = kIntLimits[(selector / 5) % std::size(kIntLimits)];
      const int64_t v = braid::parse_int(text, l[0], l[1], "the value", "--flag");
      require(v >= l[0] && v <= l[1]);
      break;
    }
    case 1: {
      const auto& l = kDoubleLimits[(selector / 5) % std::size(kDoubleLimits)];
      const double v = braid::parse_double(text, l[0], l[1], "the value", "--flag");
      require(std::isfinite(v) && v >= l[0] && v <= l[1]);
      break;
    }
    case 2: {
      const std::optional<int> gpu = braid::parse_cuda_device(text);
      require(!gpu || (*gpu >= 0 && *gpu <= braid::kMaxCudaDevice));
      require(gpu.has_value() == text.starts_with("cuda:"));
      break;
    }
    case 3: {
      const braid::cli::ModelRate m = braid::cli::parse_model_rate(text);
      require(!m.model.empty() && m.model.find(':') == std::string::npos);
      require(std::isfinite(m.fps) && m.fps >= 0 && m.fps <= braid::runtime::kMaxFps);
      break;
    }
    case 4: {  // a name parses into a value that reads back as itself and parses to the same
      const braid::tune::CostName name = braid::tune::parse_cost_name(text);
      require(braid::tune::parse_cost_name(braid::tune::to_string(name)) == name);
      break;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    fuzz(data[0], text);
  } catch (const braid::Error& e) {
    require(e.code() == braid::ErrorCode::kInvalidArgument);
    // One sentence: the text is quoted short (the flag itself may be quoted whole).
    const std::string_view what = e.what();
    require(!what.empty() && what.size() <= 2 * text.size() + 400);
  }
  return 0;
}
