// Issue 27, "no input that crashes or exhausts memory": every number a user gives braid is
// checked against a stated limit before anything is allocated. Each case runs the CLI under a
// 1 GiB address-space limit (ulimit -v), so a check that came after an allocation would show as
// a crash or std::bad_alloc (exit 1), not as the exit 2 and the sentence asserted here.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "test_env.h"

namespace braid {
namespace {

// 1 GiB of address space: the CLI with its libraries starts well within it; the reported
// inputs asked for many GiB (top -m squeezenet:1e9 was killed by the kernel).
constexpr const char* kAddressSpaceKiB = "1048576";

testing::CommandResult run_limited(const std::string& args) {
  return testing::run_command(std::string("(ulimit -v ") + kAddressSpaceKiB + " && exec " +
                              testing::braid_cli().string() + " " + args + ")");
}

struct LimitCase {
  const char* args;
  // Every piece must be on stderr: the flag (or the text the user gave) and the limit.
  std::vector<const char*> says;
};

void PrintTo(const LimitCase& c, std::ostream* os) {
  *os << c.args;
}

class CliLimits : public ::testing::TestWithParam<LimitCase> {};

TEST_P(CliLimits, RefusedWithExitTwoAndASentence) {
  const LimitCase& c = GetParam();
  const testing::CommandResult r = run_limited(c.args);
  EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.err;
  for (const char* piece : c.says)
    EXPECT_NE(r.err.find(piece), std::string::npos) << c.args << ": '" << piece << "' not in\n"
                                                    << r.err;
  EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("bad_alloc"), std::string::npos) << r.err;
}

INSTANTIATE_TEST_SUITE_P(
    Reported, CliLimits,
    ::testing::Values(
        // The three reports: stoi escaping as an internal error, bad_alloc, the kernel's OOM kill.
        LimitCase{"run squeezenet --device cuda:99999999999",
                  {"device 'cuda:99999999999'", "from 0 to 1023"}},
        LimitCase{"top -m squeezenet:99999999999 --duration 1",
                  {"--model 'squeezenet:99999999999'", "the rate (FPS) must be from 0 to 100000"}},
        LimitCase{"top -m squeezenet:1e9 --duration 1",
                  {"--model 'squeezenet:1e9'", "from 0 to 100000"}},
        LimitCase{"top -m squeezenet:1000 --duration 100000",
                  {"--duration", "from 0.001 to 86400"}}));

INSTANTIATE_TEST_SUITE_P(
    Top, CliLimits,
    ::testing::Values(
        // Each within its own limit, together 8.64e9 tasks: refused before one is generated.
        LimitCase{"top -m squeezenet:100000 --duration 86400",
                  {"tasks, more than the limit of 10000000", "--model NAME:FPS", "--duration"}},
        LimitCase{"top -m squeezenet:200 -m resnet50:5000 --duration 3600",
                  {"18720000 tasks", "--duration"}},
        LimitCase{"top -m squeezenet:1 --device cuda:4096", {"device 'cuda:4096'", "0 to 1023"}},
        LimitCase{"top -m squeezenet:1 --seeds 99999999999", {"--seeds", "from 1 to 1000"}},
        LimitCase{"top -m squeezenet:1 --queue-capacity 99999999999",
                  {"--queue-capacity", "from 0 to 1000000"}},
        LimitCase{"top -m squeezenet:1 --max-in-flight 0", {"--max-in-flight", "from 1 to"}},
        LimitCase{"top -m squeezenet:1 -H 1000", {"--max-sub-blocks", "H must be from 1 to 64"}},
        LimitCase{"top -m squeezenet:1 --batch 99999999999", {"--batch", "from 1 to 65536"}},
        LimitCase{"top -m squeezenet:x", {"--model 'squeezenet:x'", "'x' is not a number"}},
        LimitCase{"top -m squeezenet:nan", {"--model 'squeezenet:nan'", "out of range"}}));

INSTANTIATE_TEST_SUITE_P(
    Load, CliLimits,
    ::testing::Values(
        // Refused before the server is asked anything (none listens on port 9).
        LimitCase{"load 127.0.0.1:9 --pattern squeezenet:1e9",
                  {"pattern 'squeezenet:1e9'", "from 0 to 100000"}},
        LimitCase{"load 127.0.0.1:9 --pattern a:100000,b:100000 --duration 60",
                  {"--pattern/--duration", "12000000 tasks", "limit of 10000000"}},
        LimitCase{"load 127.0.0.1:9 --pattern a:1 --duration 1e9",
                  {"--duration", "from 0.001 to 86400"}},
        LimitCase{"load 127.0.0.1:9 --pattern a:1 --concurrency 100000",
                  {"--concurrency", "from 1 to 1024"}},
        LimitCase{"load 127.0.0.1:99999999999 --pattern a:1",
                  {"URL '127.0.0.1:99999999999'", "the port must be from 1 to 65535"}}));

INSTANTIATE_TEST_SUITE_P(
    RunBenchProfileSchedule, CliLimits,
    ::testing::Values(
        LimitCase{"run squeezenet --iters 99999999999", {"--iters", "from 1 to 1000000"}},
        LimitCase{"run squeezenet --warmup 2000000", {"--warmup", "from 0 to 1000000"}},
        LimitCase{"run squeezenet --batch 99999999999", {"--batch", "from 1 to 65536"}},
        LimitCase{"run squeezenet --streams 100000", {"--streams", "from 1 to 256"}},
        LimitCase{"run squeezenet --threads-per-stream 100000",
                  {"--threads-per-stream", "from 1 to 1024"}},
        LimitCase{"run squeezenet --device sim:a100_40gbx99999",
                  {"device set 'a100_40gbx99999'", "from 1 to 64"}},
        LimitCase{"bench squeezenet --iters 2000000000", {"--iters", "from 1 to 1000000"}},
        LimitCase{"bench squeezenet --device cuda:99999999999", {"cuda:99999999999", "0 to 1023"}},
        LimitCase{"profile squeezenet --runs 99999999999", {"--runs", "from 1 to 1000000"}},
        LimitCase{"schedule squeezenet --algo ios --devices 100000", {"--devices", "from 1 to 64"}},
        LimitCase{"schedule squeezenet --algo ios --ios-tolerance 1e300",
                  {"--ios-tolerance", "from 0 to 1000000"}}));

INSTANTIATE_TEST_SUITE_P(
    Serve, CliLimits,
    ::testing::Values(
        // Refused while parsing the flags: nothing is loaded and no port is opened.
        LimitCase{"serve --models squeezenet --port 70000", {"--port", "from 0 to 65535"}},
        LimitCase{"serve --models squeezenet --http-threads 100000",
                  {"--http-threads", "from 1 to 1024"}},
        LimitCase{"serve --models squeezenet --queue-capacity 99999999999",
                  {"--queue-capacity", "from 1 to 1000000"}},
        LimitCase{"serve --models squeezenet --max-request-bytes 99999999999999",
                  {"--max-request-bytes", "from 1 to 4294967296"}},
        LimitCase{"serve --models squeezenet --device cuda:99999999999",
                  {"device 'cuda:99999999999'", "0 to 1023"}}));

// A scenario file reaches the same limits through runtime::validate, not through the flags.
TEST(CliLimits, ScenarioFileIsHeldToTheSameLimits) {
  const auto path = testing::scratch_dir() / "huge.json";
  std::ofstream(path) << R"({"format": "braid.top/1", "duration_s": 1,
                             "models": [{"model": "squeezenet", "fps": 1e9}]})";
  const testing::CommandResult r = run_limited("top --scenario " + path.string());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("models[0]"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("fps (--model NAME:FPS) must be from 0 to 100000"), std::string::npos)
      << r.err;
  std::ofstream(path) << R"({"format": "braid.top/1", "duration_s": 86400, "sample_period_s": 1e-6,
                             "models": [{"model": "squeezenet", "fps": 1}]})";
  const testing::CommandResult s = run_limited("top --scenario " + path.string());
  EXPECT_EQ(s.exit_code, 2) << s.err;
  EXPECT_NE(s.err.find("samples, more than the limit"), std::string::npos) << s.err;
  // A number past its field's type is refused, not wrapped (as an int, 2^32 + 4 was H = 4).
  std::ofstream(path) << R"({"format": "braid.top/1", "duration_s": 1, "H": 4294967300,
                             "models": [{"model": "squeezenet", "fps": 1}]})";
  const testing::CommandResult b = run_limited("top --scenario " + path.string());
  EXPECT_EQ(b.exit_code, 2) << b.err;
  EXPECT_NE(b.err.find("field \"H\" is 4294967300, not an integer in"), std::string::npos)
      << b.err;
}

// The limits leave room for real use: a small top run within them still runs under the same
// address-space limit.
TEST(CliLimits, ARunWithinTheLimitsStillRuns) {
  const testing::CommandResult r =
      run_limited("top -m squeezenet:30 --duration 0.5 --policy static");
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

}  // namespace
}  // namespace braid
