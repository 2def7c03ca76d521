#include "base/device.h"

#include "base/error.h"
#include "base/parse.h"

namespace braid {

Device parse_device(std::string_view text) {
  if (text == "cpu") return Device::cpu();
  if (const std::optional<int> gpu = parse_cuda_device(text)) return Device::cuda(*gpu);
  if (text.starts_with("sim:")) {
    BRAID_CHECK(text.size() > 4, ErrorCode::kInvalidArgument,
                "device 'sim:' names no simulated device (sim:NAME, NAME one of devices/ or a "
                ".json file)");
    return Device::simulated(std::string(text.substr(4)));
  }
  BRAID_THROW(ErrorCode::kInvalidArgument, "unknown device '", text,
              "' (available: cpu, cuda:N or sim:NAME)");
}

std::string to_string(const Device& device) {
  switch (device.kind) {
    case Device::Kind::kCpu:
      return "cpu";
    case Device::Kind::kCuda:
      return "cuda:" + std::to_string(device.index);
    case Device::Kind::kSim:
      return "sim:" + device.sim;
  }
  return "cpu";
}

}  // namespace braid
