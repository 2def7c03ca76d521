// libFuzzer entry point for the files users hand braid: a .npy input (`braid run --input`,
// npy::parse), a device file (`--device sim:path.json`, sim::parse_device), a TOP scenario
// (`braid top SCENARIO`, runtime::parse_scenario), a Triton config.pbtxt (`braid serve
// --model-repository`, serve::parse_model_config) and a calibration series (`braid calibrate
// DEVICE FILE`, sim::parse_calibration, then fitted to the H100's file).
// The first byte picks the parser; the rest is the file. Any bytes must end in a value or a
// braid::Error with a message; anything else (another exception, a crash, a sanitizer report) is
// a bug. What the .npy and scenario parsers accept must read back unchanged after their writers.
// scripts/fuzz.sh runs it.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/npy.h"
#include "runtime/scenario.h"
#include "serve/model_config.h"
#include "sim/calibrate.h"
#include "sim/device_spec.h"

namespace {

void require(bool cond) {
  if (!cond) std::abort();
}

void npy_file(std::string_view bytes) {
  braid::npy::Array a;
  try {
    a = braid::npy::parse(bytes, "fuzz.npy");
  } catch (const braid::Error&) {
    return;
  }
  require(int64_t(a.data.size()) == a.elements() * braid::npy::size_of(a.dtype));
  const braid::npy::Array again =
      braid::npy::parse(braid::npy::serialize(a.dtype, a.shape, a.data), "round trip");
  require(again.dtype == a.dtype && again.shape == a.shape && again.data == a.data);
}

void scenario_file(std::string_view text) {
  braid::runtime::Scenario s;
  try {
    s = braid::runtime::parse_scenario(nlohmann::json::parse(text), "fuzz.json");
  } catch (const nlohmann::json::exception&) {
    return;  // braid top reports the parse error with the file's name
  } catch (const braid::Error&) {
    return;
  }
  const nlohmann::json j = braid::runtime::to_json(s);
  require(braid::runtime::to_json(braid::runtime::parse_scenario(j, "round trip")) == j);
}

void calibration_file(std::string_view text) {
  static const braid::sim::DeviceSpec h100 = braid::sim::load_device("h100");
  braid::sim::Calibration c;
  try {
    c = braid::sim::parse_calibration(nlohmann::json::parse(text));
  } catch (const nlohmann::json::exception&) {
    return;
  } catch (const braid::Error&) {
    return;
  }
  braid::sim::calibrate(h100, c);  // a braid::Error (a fit it refuses) is fine
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    switch (data[0] % 5) {
      case 0:
        npy_file(text);
        break;
      case 1:
        braid::sim::parse_device(text, "fuzz.json");
        break;
      case 2:
        scenario_file(text);
        break;
      case 3:
        braid::serve::parse_model_config(text, "config.pbtxt", "m");
        break;
      case 4:
        calibration_file(text);
        break;
    }
  } catch (const braid::Error&) {
  }
  return 0;
}
