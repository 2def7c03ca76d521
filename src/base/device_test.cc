// parse_device: the one place a device name becomes a Device; every bad form is one
// kInvalidArgument sentence naming the text and what is accepted.
#include "base/device.h"

#include <gtest/gtest.h>

#include "base/error.h"

namespace braid {
namespace {

std::string error_of(std::string_view text) {
  try {
    parse_device(text);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error for '" << text << "'";
  return {};
}

TEST(Device, ParsesEveryFormAndPrintsItBack) {
  EXPECT_EQ(parse_device("cpu"), Device::cpu());
  EXPECT_EQ(parse_device("cuda:0"), Device::cuda(0));
  EXPECT_EQ(parse_device("cuda:1023"), Device::cuda(1023));
  EXPECT_EQ(parse_device("sim:a100_40gb"), Device::simulated("a100_40gb"));
  EXPECT_EQ(parse_device("sim:a40x2").sim, "a40x2");
  EXPECT_EQ(parse_device("sim:dir/my.json").sim, "dir/my.json");
  for (const char* text : {"cpu", "cuda:0", "cuda:7", "sim:a100_40gb", "sim:x.json"})
    EXPECT_EQ(to_string(parse_device(text)), text);
  EXPECT_TRUE(parse_device("sim:v100").is_gpu());
  EXPECT_FALSE(parse_device("cpu").is_gpu());
}

TEST(Device, BadFormsSaySoInOneSentence) {
  for (const char* text : {"", "gpu0", "CPU", "cuda", "tpu:0", " cpu", "cpu "})
    EXPECT_NE(error_of(text).find("cpu, cuda:N or sim:NAME"), std::string::npos) << text;
  EXPECT_NE(error_of("sim:").find("sim:NAME"), std::string::npos);
  for (const char* text : {"cuda:", "cuda:x", "cuda:-1", "cuda:1.5", "cuda:0x1", "cuda: 1"})
    EXPECT_NE(error_of(text).find("device 'cuda:"), std::string::npos) << text;
}

TEST(Device, OutOfRangeIndexNamesTheLimits) {
  const std::string e = error_of("cuda:1024");
  EXPECT_NE(e.find("device 'cuda:1024'"), std::string::npos) << e;
  EXPECT_NE(e.find("from 0 to 1023"), std::string::npos) << e;
  EXPECT_NE(error_of("cuda:99999999999999999999999").find("0 to 1023"), std::string::npos);
}

}  // namespace
}  // namespace braid
