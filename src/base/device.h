// Where a model runs: the CPU, a GPU (cuda:N) or the GPU simulator (sim:NAME). Text becomes a
// Device once, at the edge (a CLI flag, a JSON field, a Python argument); the library passes the
// typed value and never parses a device name again.
//
//   Device d = parse_device("cuda:1");   // {kCuda, index 1}
//   to_string(d);                        // "cuda:1", the spelling it was parsed from
//   parse_device("sim:a100_40gb").sim;   // "a100_40gb": a devices/ name, a device set
//                                        // ("a40x2") or a .json path
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace braid {

struct Device {
  enum class Kind : uint8_t { kCpu, kCuda, kSim };
  Kind kind = Kind::kCpu;
  int index = 0;    // kCuda: the N of cuda:N
  std::string sim;  // kSim: the NAME of sim:NAME

  static Device cpu() { return {}; }
  static Device cuda(int index) { return {.kind = Kind::kCuda, .index = index}; }
  static Device simulated(std::string name) { return {.kind = Kind::kSim, .sim = std::move(name)}; }

  bool is_cpu() const { return kind == Kind::kCpu; }
  bool is_cuda() const { return kind == Kind::kCuda; }
  bool is_sim() const { return kind == Kind::kSim; }
  bool is_gpu() const { return kind != Kind::kCpu; }  // real or simulated
  friend bool operator==(const Device&, const Device&) = default;
};

// "cpu", "cuda:N" (N from 0 to kMaxCudaDevice, base/parse.h) or "sim:NAME" (NAME not empty; it
// is looked up when the simulator loads it). Throws braid::Error(kInvalidArgument) with one
// sentence naming the text and the accepted forms.
Device parse_device(std::string_view text);
// The spelling parse_device reads back: "cpu", "cuda:0", "sim:a100_40gb".
std::string to_string(const Device& device);

}  // namespace braid
