#include "base/parse.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <system_error>

#include "base/error.h"

namespace braid {
namespace {

// User text can be anything (a fuzzer's bytes included): quote at most this much of it.
constexpr size_t kMaxQuoted = 64;

std::string quoted(std::string_view text) {
  std::string out(text.substr(0, kMaxQuoted));
  if (text.size() > kMaxQuoted) out += "...";
  return out;
}

std::string prefix(std::string_view where) {
  return where.empty() ? std::string() : std::string(where) + ": ";
}

[[noreturn]] void throw_out_of_range(std::string_view shown, std::string_view what,
                                     const std::string& min, const std::string& max,
                                     std::string_view where) {
  BRAID_THROW(ErrorCode::kInvalidArgument, prefix(where), shown, " is out of range: ", what,
              " must be from ", min, " to ", max);
}

}  // namespace

std::string format_number(double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.10g", value);
  return buf;
}

int64_t parse_int(std::string_view text, int64_t min, int64_t max, std::string_view what,
                  std::string_view where) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  // A number beyond int64 is still a number: say it is out of range, not that it is not one.
  const bool number =
      !text.empty() && ptr == end && (ec == std::errc() || ec == std::errc::result_out_of_range);
  BRAID_CHECK(number, ErrorCode::kInvalidArgument, prefix(where), "'", quoted(text),
              "' is not a whole number (", what, ")");
  if (ec != std::errc() || value < min || value > max)
    throw_out_of_range(quoted(text), what, std::to_string(min), std::to_string(max), where);
  return value;
}

double parse_double(std::string_view text, double min, double max, std::string_view what,
                    std::string_view where) {
  double value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  const bool number =
      !text.empty() && ptr == end && (ec == std::errc() || ec == std::errc::result_out_of_range);
  BRAID_CHECK(number, ErrorCode::kInvalidArgument, prefix(where), "'", quoted(text),
              "' is not a number (", what, ")");
  // from_chars reads "inf" and "nan" too; neither is a rate, a duration or a size.
  if (ec != std::errc() || !std::isfinite(value) || value < min || value > max)
    throw_out_of_range(quoted(text), what, format_number(min), format_number(max), where);
  return value;
}

void check_in_range(double value, double min, double max, std::string_view what,
                    std::string_view where) {
  if (!std::isfinite(value) || value < min || value > max)
    throw_out_of_range(format_number(value), what, format_number(min), format_number(max), where);
}

void check_int_in_range(int64_t value, int64_t min, int64_t max, std::string_view what,
                        std::string_view where) {
  if (value < min || value > max)
    throw_out_of_range(std::to_string(value), what, std::to_string(min), std::to_string(max),
                       where);
}

std::optional<int> parse_cuda_device(std::string_view device) {
  if (!device.starts_with("cuda:")) return std::nullopt;
  return static_cast<int>(parse_int(device.substr(5), 0, kMaxCudaDevice,
                                    "the CUDA device index N of cuda:N",
                                    "device '" + quoted(device) + "'"));
}

}  // namespace braid
