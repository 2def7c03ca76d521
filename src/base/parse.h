// Checked parsing of numbers in user text (flags, MODEL:RATE patterns, device names): the one
// place braid turns text into a number. Every failure is a braid::Error with kInvalidArgument
// (exit 2 in the CLI) and one sentence that names what was parsed and its limits; nothing else
// is ever thrown (no std::stoi's std::out_of_range escaping as an internal error).
//
//   int64_t n = parse_int("12", 0, 1023, "the CUDA device index", "device 'cuda:12'");
//   double fps = parse_double("1e9", 0, 1e5, "the rate (FPS)", "--model 'squeezenet:1e9'");
//   // -> "--model 'squeezenet:1e9': 1e9 is out of range: the rate (FPS) must be from 0 to 100000"
//
// Numbers that arrive already converted (a JSON field, a CLI11 option) are checked against the
// same kind of sentence with check_in_range.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace braid {

// `text`, whole, as a decimal integer from `min` to `max`. `what` names the quantity ("the batch
// size"); `where`, when given, prefixes the sentence ("--batch", "device 'cuda:x'").
int64_t parse_int(std::string_view text, int64_t min, int64_t max, std::string_view what,
                  std::string_view where = {});
// `text`, whole, as a finite decimal number (1.5, 1e3) from `min` to `max`; no inf, nan or hex.
double parse_double(std::string_view text, double min, double max, std::string_view what,
                    std::string_view where = {});

// Throws the out-of-range sentence when `value` is not within [min, max] (or is not finite).
void check_in_range(double value, double min, double max, std::string_view what,
                    std::string_view where = {});
void check_int_in_range(int64_t value, int64_t min, int64_t max, std::string_view what,
                        std::string_view where = {});

// The GPU a device name gives ("cuda:3" -> 3); nullopt for names that do not start "cuda:".
// Throws kInvalidArgument naming the device for an N that is not a whole number from 0 to
// kMaxCudaDevice (no machine has more GPUs; CUDA's ordinals are ints).
inline constexpr int kMaxCudaDevice = 1023;
std::optional<int> parse_cuda_device(std::string_view device);

// A number as the sentences print it: 100000, 0.001, 1e+09 (%g with enough digits).
std::string format_number(double value);

}  // namespace braid
