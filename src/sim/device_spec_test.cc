#include "sim/device_spec.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "base/error.h"
#include "test_env.h"

namespace braid::sim {
namespace {

// The issue's list: every one of them is in devices/ and loads.
TEST(DeviceSpec, TheIssuesDevicesLoad) {
  for (const char* name : {"v100", "a100_40gb", "h100", "rtx3080", "rtx2080super", "a40",
                           "jetson_nano", "jetson_tx2", "jetson_xavier_nx"}) {
    SCOPED_TRACE(name);
    const DeviceSpec d = load_device(name);
    EXPECT_EQ(d.name, name);
    EXPECT_FALSE(d.source.empty());
    // Peak FP32 is 2 FLOPs (an FMA) per core per cycle: cores per SM = peak / (2 sms clock) must
    // be a whole number of 32-lane units, between 64 and 128 (Maxwell to Hopper).
    const double cores_per_sm = d.peak_fp32_flops() / (2 * d.sms * d.clock_mhz * 1e6);
    EXPECT_NEAR(cores_per_sm / 32, std::round(cores_per_sm / 32), 0.05) << cores_per_sm;
    EXPECT_GE(cores_per_sm, 63);
    EXPECT_LE(cores_per_sm, 129);
  }
  EXPECT_GE(device_names().size(), 9u);
}

TEST(DeviceSpec, BadInputIsAClearError) {
  try {
    load_device("v99");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_NE(std::string(e.what()).find("v100"), std::string::npos) << e.what();
  }
  const auto dir = braid::testing::scratch_dir();
  auto write = [&](const std::string& file, const std::string& text) {
    std::ofstream(dir / file) << text;
    return (dir / file).string();
  };
  EXPECT_THROW(load_device(write("broken.json", "{ not json")), Error);
  EXPECT_THROW(load_device(write("format.json", "{\"format\": \"other\"}")), Error);
  EXPECT_THROW(load_device(write("format_number.json", "{\"format\": 1}")), Error);
  // A v100 with 48 warps but 2048 threads per SM.
  std::ifstream in(devices_dir() / "v100.json");
  std::string text((std::istreambuf_iterator<char>(in)), {});
  const auto at = text.find("\"max_warps\": 64");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 15, "\"max_warps\": 48");
  try {
    load_device(write("warps.json", text));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("max_warps"), std::string::npos) << e.what();
  }
  // A count past an int is refused by name, not cast (1e30 as an int is undefined).
  text.replace(text.find("\"max_warps\": 48"), 15, "\"max_warps\": 1e30");
  try {
    load_device(write("huge.json", text));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("field \"max_warps\" is 1e+30"), std::string::npos)
        << e.what();
  }
}

// The H100's tensor-core model (issue 29) loads as written, and a layout conversion the model
// does not know is refused by name.
TEST(DeviceSpec, TensorCoreModelLoadsAndUnknownConversionsAreRefused) {
  const TensorCoreModel tc = load_device("h100").kernel_model.tensor_cores;
  EXPECT_GT(tc.efficiency, 0);
  EXPECT_LE(tc.efficiency, 1);
  EXPECT_TRUE(tc.convert_input || tc.convert_filter || tc.convert_output);
  EXPECT_EQ(load_device("v100").kernel_model.tensor_cores.efficiency, 0);
  std::ifstream in(devices_dir() / "h100.json");
  std::string text((std::istreambuf_iterator<char>(in)), {});
  const auto at = text.find("\"output\"");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 8, "\"weights\"");
  const auto path = braid::testing::scratch_dir() / "conversions.json";
  std::ofstream(path) << text;
  try {
    load_device(path.string());
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("'weights'"), std::string::npos) << e.what();
  }
}

// The co-resident GEMM factor is the fitted default unless a device file sets its own, in (0, 1].
TEST(DeviceSpec, CoResidentGemmFactorLoadsAndOutOfRangeIsRefused) {
  EXPECT_DOUBLE_EQ(load_device("v100").kernel_model.co_resident_gemm, 0.95);
  std::ifstream in(devices_dir() / "h100.json");
  std::string text((std::istreambuf_iterator<char>(in)), {});
  const auto at = text.find("\"block_latency_us\"");
  ASSERT_NE(at, std::string::npos);
  const auto dir = braid::testing::scratch_dir();
  for (const char* value : {"1.0", "1.5"}) {
    std::string t = text;
    t.insert(at, std::string("\"co_resident_gemm\": ") + value + ", ");
    const auto path = dir / (std::string("coresident_") + value + ".json");
    std::ofstream(path) << t;
    if (std::string(value) == "1.0") {
      EXPECT_DOUBLE_EQ(load_device(path.string()).kernel_model.co_resident_gemm, 1.0);
      continue;
    }
    try {
      load_device(path.string());
      FAIL() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("co_resident_gemm"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace braid::sim

namespace braid::sim {
namespace {

TEST(DeviceSpec, DeviceSetsNameADeviceAndACount) {
  EXPECT_EQ(parse_device_set("a40x2"), (std::pair<std::string, int>{"a40", 2}));
  EXPECT_EQ(parse_device_set("v100"), (std::pair<std::string, int>{"v100", 1}));
  EXPECT_EQ(parse_device_set("rtx3080"), (std::pair<std::string, int>{"rtx3080", 1}));
  EXPECT_EQ(parse_device_set("my_gpu.json"), (std::pair<std::string, int>{"my_gpu.json", 1}));
  EXPECT_EQ(load_device("a40x4").name, "a40");
  EXPECT_THROW(parse_device_set("a40x0"), Error);
}

}  // namespace
}  // namespace braid::sim
