// End-to-end tests of the braid CLI: the acceptance commands of the foundation issue.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "test_env.h"

namespace braid {
namespace {

using testing::run_command;

std::string cli() { return testing::braid_cli().string(); }

nlohmann::json inspect_json(const std::string& model) {
  auto r = run_command(cli() + " inspect " + model + " --json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return nlohmann::json::parse(r.out);
}

struct IosCounts {
  const char* model;
  size_t units, edges, distinct_edges;
};

class CliIosModels : public ::testing::TestWithParam<IosCounts> {};

// LIOS Table IV and the IOS code: unit and edge counts at schedule-unit granularity.
TEST_P(CliIosModels, InspectReportsThePapersCounts) {
  const IosCounts& c = GetParam();
  nlohmann::json j = inspect_json(c.model);
  EXPECT_EQ(j["units"], c.units);
  EXPECT_EQ(j["edges"], c.edges);
  EXPECT_EQ(j["distinct_edges"], c.distinct_edges);
  for (const char* key : {"name", "blocks", "width", "flops", "params"}) EXPECT_TRUE(j.contains(key)) << key;
}

INSTANTIATE_TEST_SUITE_P(Zoo, CliIosModels,
                         ::testing::Values(IosCounts{"squeezenet", 50, 65, 65},
                                           IosCounts{"inception_v3", 119, 153, 153},
                                           IosCounts{"randwire", 120, 260, 260},
                                           IosCounts{"nasnet", 374, 576, 572}),
                         [](const auto& info) { return std::string(info.param.model); });

TEST(Cli, UnknownModelExitsTwoWithOneLine) {
  auto r = run_command(cli() + " inspect no_such_model");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown model 'no_such_model'"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST(Cli, MissingFileExitsTwo) {
  auto r = run_command(cli() + " inspect /nonexistent/x.onnx");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("x.onnx"), std::string::npos) << r.err;
}

TEST(Cli, BadFlagExitsTwo) {
  auto r = run_command(cli() + " inspect squeezenet --batch -3");
  EXPECT_EQ(r.exit_code, 2) << r.err;
}

TEST(Cli, EveryCommandHasHelp) {
  for (const char* c : {"models", "inspect", "export", "schedule", "validate"}) {
    auto r = run_command(cli() + " " + c + " --help");
    EXPECT_EQ(r.exit_code, 0) << c;
    EXPECT_NE(r.out.find("Usage"), std::string::npos) << c << ": " << r.out;
  }
}

}  // namespace
}  // namespace braid
