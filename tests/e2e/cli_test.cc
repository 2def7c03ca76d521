// End-to-end tests of the braid CLI: the acceptance commands of the foundation issue.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "models/loader.h"
#include "runtime/scenario.h"
#include "sched/schedule.h"
#include "session/session.h"
#include "test_env.h"
#include "tune/bench.h"

namespace braid {
namespace {

using testing::cli;
using testing::golden;
using testing::run_command;

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
  for (const char* key : {"name", "blocks", "width", "flops", "params"})
    EXPECT_TRUE(j.contains(key)) << key;
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
  for (const char* c : {"models", "inspect", "export", "schedule", "validate", "run", "profile",
                        "bench", "calibrate", "top"}) {
    auto r = run_command(cli() + " " + c + " --help");
    EXPECT_EQ(r.exit_code, 0) << c;
    EXPECT_NE(r.out.find("Usage"), std::string::npos) << c << ": " << r.out;
  }
}

// Every trivial schedule of every model kind round-trips through a file and validates.
TEST(Cli, ScheduleThenValidate) {
  for (const std::string& model : {std::string("squeezenet"), golden("diamond.dag.json")}) {
    for (const char* algo : {"sequential", "greedy"}) {
      auto path = (testing::scratch_dir() / (std::string(algo) + ".json")).string();
      // Real models: the roofline, so the test measures nothing and writes no profile cache.
      const std::string cost = model.ends_with(".dag.json") ? "" : " --cost roofline";
      auto r = run_command(cli() + " schedule " + model + " --algo " + algo + cost + " --json -o " +
                           path);
      ASSERT_EQ(r.exit_code, 0) << model << " " << algo << ": " << r.err;
      nlohmann::json j = nlohmann::json::parse(r.out);
      EXPECT_EQ(j["algorithm"], algo);
      EXPECT_TRUE(j.contains("search_ms"));
      auto v = run_command(cli() + " validate " + model + " " + path);
      EXPECT_EQ(v.exit_code, 0) << v.err;
    }
  }
}

// A schedule that breaks a dependency must be refused with exit 2 and a message naming it,
// before any executor could run it.
TEST(Cli, ValidateRejectsBrokenScheduleWithExitTwo) {
  auto path = (testing::scratch_dir() / "broken.json").string();
  std::ofstream(path) << R"({"format":"braid.schedule/1","model":"diamond","algorithm":"hand",
    "devices":1,"streams":[{"device":0,"stream":0,"units":["a","b","d"]},
                           {"device":0,"stream":1,"units":["c"]}]})";
  auto r = run_command(cli() + " validate " + golden("diamond.dag.json") + " " + path);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("'a'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("'c'"), std::string::npos) << r.err;
}

// braid bench: one row per (model, algorithm); a real model's schedules run on the CPU and
// give the sequential schedule's outputs; a weighted DAG is predicted only. CSV too.
TEST(Cli, BenchComparesSchedulers) {
  const auto csv = (testing::scratch_dir() / "bench.csv").string();
  auto r = run_command(cli() + " bench squeezenet " + golden("diamond.dag.json") +
                       " --image-size 64 --algos sequential,greedy --cost roofline --iters 2 " +
                       "--warmup 1 --json --csv " + csv);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json rows = nlohmann::json::parse(r.out);
  ASSERT_EQ(rows.size(), 4u);
  for (const auto& row : rows) {
    EXPECT_GT(row["predicted_ms"].get<double>(), 0) << row;
    if (row["model"] == "squeezenet") {
      EXPECT_TRUE(row["outputs_match_sequential"].get<bool>()) << row;
      EXPECT_GT(row["measured_ms"]["median"].get<double>(), 0) << row;
    } else {
      EXPECT_FALSE(row.contains("measured_ms")) << row;
    }
  }
  EXPECT_DOUBLE_EQ(rows[3]["predicted_ms"].get<double>(), 5.5);  // diamond, greedy
  std::ifstream in(csv);
  std::string header;
  std::getline(in, header);
  EXPECT_EQ(header.rfind("model,algorithm,search_ms,predicted_ms", 0), 0u) << header;
}

TEST(Cli, BenchRejectsUnknownAlgorithm) {
  auto r = run_command(cli() + " bench squeezenet --algos sequential,nope --cost roofline");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("nope"), std::string::npos) << r.err;
}

// lios.txt's running example (Fig. 3, Table III): LIOS on three streams plans a makespan of
// 38, sequential execution takes 73, in the DAG's unit (latency_ms: predicted_ms).
TEST(Cli, LiosRunningExample) {
  for (auto [algo, expected] : {std::pair("lios", 38.0), std::pair("sequential", 73.0)}) {
    auto r = run_command(cli() + " schedule " + golden("lios_fig3.dag.json") + " --algo " + algo +
                         " --streams 3 --json");
    ASSERT_EQ(r.exit_code, 0) << algo << ": " << r.err;
    nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_DOUBLE_EQ(j["predicted_ms"].get<double>(), expected) << algo;
    EXPECT_DOUBLE_EQ(j["sequential_ms"].get<double>(), 73.0) << algo;
    EXPECT_EQ(j["streams"], std::string(algo) == "lios" ? 3 : 1) << algo;
  }
}

TEST(Cli, UnknownAlgorithmExitsTwo) {
  auto r = run_command(cli() + " schedule squeezenet --algo nope");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("nope"), std::string::npos) << r.err;
  for (const char* command : {" run squeezenet --algo nope", " bench squeezenet --algos nope"}) {
    auto run = run_command(cli() + command);
    EXPECT_EQ(run.exit_code, 2) << command;
    EXPECT_NE(run.err.find("known: auto, sequential"), std::string::npos) << run.err;
  }
}

TEST(Cli, InspectWeightedDag) {
  nlohmann::json j = inspect_json(golden("diamond.dag.json"));
  EXPECT_EQ(j["units"], 4);
  EXPECT_EQ(j["edges"], 4);
  EXPECT_EQ(j["width"], 2);
}

// Export, then inspect the file: the same structure comes back through ONNX.
TEST(Cli, ExportedModelReimportsWithTheSameCounts) {
  for (const char* model : {"squeezenet", "inception_v3"}) {
    auto path = (testing::scratch_dir() / (std::string(model) + ".onnx")).string();
    auto r = run_command(cli() + " export " + model + " -o " + path);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    nlohmann::json a = inspect_json(model), b = inspect_json(path);
    for (const char* key :
         {"units", "edges", "distinct_edges", "blocks", "width", "flops", "params"})
      EXPECT_EQ(a[key], b[key]) << model << " " << key;
  }
}

struct BadOnnx {
  const char* file;
  const char* message;  // a fragment the one-line error must contain
};

class CliBadOnnx : public ::testing::TestWithParam<BadOnnx> {
 protected:
  static void SetUpTestSuite() {
    if (testing::venv_python().empty()) return;
    dir_ = (testing::scratch_dir() / "bad_onnx").string();
    auto r =
        run_command(testing::venv_python().string() + " " +
                    (testing::source_dir() / "scripts/make_bad_onnx.py").string() + " " + dir_);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  static inline std::string dir_;
};

// A malformed model must never crash braid: one line on stderr naming the fault, exit code 2.
TEST_P(CliBadOnnx, InspectExitsTwoWithOneLineNamingTheFault) {
  if (dir_.empty()) GTEST_SKIP() << "no .venv with onnx (run make deps)";
  const BadOnnx& c = GetParam();
  auto r = run_command(cli() + " inspect " + dir_ + "/" + c.file);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

INSTANTIATE_TEST_SUITE_P(
    Files, CliBadOnnx,
    ::testing::Values(BadOnnx{"truncated.onnx", "not a valid ONNX model"},
                      BadOnnx{"not_onnx.onnx", "not a valid ONNX model"},
                      BadOnnx{"unsupported_op.onnx", "node 'lstm': unsupported op type 'LSTM'"},
                      BadOnnx{"cycle.onnx", "cycle"}, BadOnnx{"shape_mismatch.onnx", "node 'conv'"},
                      BadOnnx{"missing_initializer.onnx", "conv.w"}),
    [](const auto& info) {
      std::string n = info.param.file;
      return n.substr(0, n.find('.'));
    });

// ---- issue 15: real inputs and outputs, names, version, validate-before-lower, range errors ----

std::string scratch(const std::string& name) {
  return (testing::scratch_dir() / name).string();
}

// squeezenet's sequential schedule, edited three ways into what `validate` rejects; `run` (CPU
// and simulated GPU) must reject them too, with the validator's words, never an assertion.
TEST(Cli, RunValidatesTheScheduleBeforeLowering) {
  const std::string sequential = scratch("seq.json");
  auto r = run_command(cli() + " schedule squeezenet --image-size 64 --algo sequential " +
                       "--cost roofline -o " + sequential);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json s = nlohmann::json::parse(std::ifstream(sequential));
  const nlohmann::json units = s["streams"][0]["units"];
  ASSERT_GT(units.size(), 4u);

  nlohmann::json duplicate = s;
  duplicate["streams"][0]["units"].push_back(units[0]);
  nlohmann::json reversed = s;
  reversed.erase("streams");
  reversed["stages"] = nlohmann::json::array();
  for (auto u = units.rbegin(); u != units.rend(); ++u)
    reversed["stages"].push_back({{"device", 0}, {"kind", "concurrent"}, {"groups", {{*u}}}});
  nlohmann::json cycle = s;
  cycle["streams"] = {
      {{"device", 0}, {"stream", 0}, {"units", {units[0], units[1]}}},
      {{"device", 0},
       {"stream", 1},
       {"units", nlohmann::json(std::vector<nlohmann::json>(units.begin() + 2, units.end()))}}};
  cycle["syncs"] = {{{"from", units[1]}, {"to", units[2]}}, {{"from", units[3]}, {"to", units[0]}}};

  for (const auto& [name, schedule, expected] :
       {std::tuple{"duplicate", duplicate, "is scheduled 2 times"},
        std::tuple{"reversed", reversed, "goes backwards"},
        std::tuple{"cycle", cycle, "form a cycle"}}) {
    const std::string path = scratch(std::string(name) + ".json");
    std::ofstream(path) << schedule.dump();
    auto v = run_command(cli() + " validate squeezenet --image-size 64 " + path);
    EXPECT_EQ(v.exit_code, 2) << name;
    EXPECT_NE(v.err.find(expected), std::string::npos) << name << ": " << v.err;
    for (const char* device : {"cpu", "sim:v100"}) {
      auto run = run_command(cli() + " run squeezenet --image-size 64 --iters 1 --warmup 0 " +
                             "--device " + device + " --schedule " + path);
      EXPECT_EQ(run.exit_code, 2) << name << " on " << device << ": " << run.err;
      EXPECT_NE(run.err.find(expected), std::string::npos) << name << ": " << run.err;
      EXPECT_EQ(run.err.find("assertion"), std::string::npos) << run.err;
    }
  }
}

// validate --json answers in JSON on stdout whatever the failure, a malformed file included.
TEST(Cli, ValidateJsonAlwaysPrintsJson) {
  const std::string malformed = scratch("malformed.json");
  std::ofstream(malformed) << "{\"format\": \"braid.schedule/1\", ";
  for (const std::string& model : {golden("diamond.dag.json"), std::string("no_such_model")}) {
    auto r = run_command(cli() + " validate " + model + " " + malformed + " --json");
    EXPECT_EQ(r.exit_code, 2) << r.err;
    nlohmann::json j;
    ASSERT_NO_THROW(j = nlohmann::json::parse(r.out)) << "stdout: " << r.out;
    EXPECT_EQ(j["valid"], false);
    ASSERT_EQ(j["errors"].size(), 1u);
    EXPECT_FALSE(j["errors"][0].get<std::string>().empty());
  }
}

struct RangeCase {
  const char* args;
  const char* expected;  // part of the sentence on stderr
};

void PrintTo(const RangeCase& c, std::ostream* os) {
  *os << "braid " << c.args;
}

class CliRangeErrors : public ::testing::TestWithParam<RangeCase> {};

// Each is refused at once with exit 2 and a sentence naming the flag and its limit (they once
// printed a 300-digit range, a negative GFLOP count, std::bad_alloc or ran for minutes).
TEST_P(CliRangeErrors, ExitTwoWithASentenceNamingTheLimit) {
  const auto begin = std::chrono::steady_clock::now();
  auto r = run_command(cli() + " " + GetParam().args);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find(GetParam().expected), std::string::npos) << r.err;
  EXPECT_LT(r.err.size(), 400u) << r.err;
  EXPECT_EQ(r.err.find("bad_alloc"), std::string::npos) << r.err;
  EXPECT_LT(std::chrono::steady_clock::now() - begin, std::chrono::seconds(20));
}

INSTANTIATE_TEST_SUITE_P(
    Flags, CliRangeErrors,
    ::testing::Values(
        RangeCase{"inspect squeezenet --batch 0",
                  "--batch: 0 is out of range: the batch size must be from 1 to 65536"},
        RangeCase{"inspect squeezenet --batch 99999999999999999999",
                  "99999999999999999999 is out of range: the batch size must be from 1 to 65536"},
        RangeCase{"run squeezenet --batch 2147483647", "the batch size must be from 1 to 65536"},
        RangeCase{"inspect squeezenet --batch x", "'x' is not a whole number"},
        RangeCase{"run squeezenet --image-size 100000", "the image size must be from 0 to 16384"},
        RangeCase{"inspect bert --layers 100000", "bert's layer count must be from 1 to 128"},
        RangeCase{"run squeezenet --iters 0", "--iters: 0 is out of range"},
        RangeCase{"bench squeezenet --batch 0", "the batch size must be from 1 to 65536"},
        // Within the flags' ranges but beyond the tensor limit: refused before any allocation.
        RangeCase{
            "run inception_v3 --batch 65536",
            "elements, which exceeds the limit of 2147483648 (raise with --max-tensor-elements)"},
        RangeCase{"run squeezenet --image-size 16384", "--max-tensor-elements"},
        RangeCase{"inspect bert --seq-len 8192 --batch 64", "the limit"}),
    [](const auto& info) { return "case" + std::to_string(info.index); });

// A 100000x100000 ONNX input: refused when the model loads, naming the tensor and the flag.
TEST(Cli, HugeOnnxTensorIsRefusedNotAllocated) {
  const auto python = testing::venv_python();
  if (python.empty()) GTEST_SKIP() << "no .venv with onnx (make deps)";
  const std::string onnx = scratch("huge.onnx");
  auto r = run_command(
      python.string() + " -c \"import onnx; from onnx import helper as h, TensorProto as T; " +
      "v = lambda n: h.make_tensor_value_info(n, T.FLOAT, [100000, 100000]); " +
      "g = h.make_graph([h.make_node('Relu', ['x'], ['y'])], 'g', [v('x')], [v('y')]); " +
      "onnx.save(h.make_model(g, opset_imports=[h.make_opsetid('', 13)]), '" + onnx + "')\"");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const std::string& args :
       {"inspect " + onnx, "run " + onnx + " --algo sequential --cost roofline"}) {
    r = run_command(cli() + " " + args);
    EXPECT_EQ(r.exit_code, 2) << args << ": " << r.err;
    EXPECT_NE(r.err.find("'x' has more than 2147483648 elements"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("--max-tensor-elements"), std::string::npos) << r.err;
  }
}

// Exported ONNX files have a static batch of 1: --batch 2 cannot apply and says so.
TEST(Cli, BatchOnAStaticBatchOnnxIsAnError) {
  const std::string onnx = scratch("static_batch.onnx");
  ASSERT_EQ(run_command(cli() + " export squeezenet --image-size 64 -o " + onnx).exit_code, 0);
  auto r = run_command(cli() + " inspect " + onnx + " --batch 2");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--batch 2 cannot apply"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("static batch dimension (input [1,3,64,64])"), std::string::npos) << r.err;
  // An explicit --batch 1 on a static batch of 2 is the same mistake; the file's own batch fits.
  const std::string two = scratch("static_batch2.onnx");
  ASSERT_EQ(run_command(cli() + " export squeezenet --image-size 64 --batch 2 -o " + two).exit_code,
            0);
  r = run_command(cli() + " inspect " + two + " --batch 1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--batch 1 cannot apply"), std::string::npos) << r.err;
  EXPECT_EQ(run_command(cli() + " inspect " + two + " --batch 2").exit_code, 0);
  EXPECT_EQ(run_command(cli() + " inspect " + two).exit_code, 0);
}

// A model is named after its file (exporters all call the graph "torch_jit"), or --name.
TEST(Cli, ModelNameComesFromTheFileNameOrName) {
  const std::string onnx = scratch("my_net.onnx");
  ASSERT_EQ(run_command(cli() + " export squeezenet --image-size 64 -o " + onnx).exit_code, 0);
  EXPECT_EQ(inspect_json(onnx)["name"], "my_net");
  EXPECT_EQ(inspect_json(onnx + " --name other")["name"], "other");
  EXPECT_EQ(inspect_json("squeezenet")["name"], "squeezenet");
  auto r = run_command(cli() + " schedule " + onnx + " --algo sequential --cost roofline --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["model"], "my_net");
}

// On a terminal (a pty from util-linux `script`) long work shows progress; --quiet hides it.
TEST(Cli, ProgressOnATerminalUnlessQuiet) {
  if (run_command("command -v script").exit_code != 0) GTEST_SKIP() << "no `script` for a pty";
  const std::string profile = cli() + " profile squeezenet --image-size 32 --runs 1 --number 1 " +
                              "--warmup 0 --no-cache --json";
  auto r = run_command("script -qec '" + profile + "' /dev/null");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("profiling squeezenet (units): 49/50"), std::string::npos) << r.out;
  r = run_command("script -qec '" + profile + " --quiet' /dev/null");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("profiling squeezenet"), std::string::npos) << r.out;
}

TEST(Cli, VersionNamesTheRelease) {
  auto r = run_command(cli() + " --version");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out.starts_with("braid 0.")) << r.out;
}

// Progress goes to stderr only on a terminal: under a pipe (here) stderr stays empty.
TEST(Cli, NoProgressWhenStderrIsNotATerminal) {
  auto r = run_command(cli() + " schedule squeezenet --algo ios --cost roofline --image-size 64");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  // --quiet is accepted after the command too.
  EXPECT_EQ(run_command(cli() + " inspect squeezenet --quiet").exit_code, 0);
}

// The acceptance test of --input/--output-dir: numpy makes an input, ONNX Runtime runs the
// exported model on it, `braid run --input ... --output-dir ...` under sequential and ios
// writes .npy outputs, and numpy compares them element-wise: |braid - ort| <= atol + rtol*|ort|.
TEST(Cli, RunWithNpyInputsAgreesWithOnnxRuntime) {
  const auto python = testing::venv_python();
  if (python.empty()) GTEST_SKIP() << "no .venv with numpy and onnxruntime (make deps)";
  const std::string onnx = scratch("squeeze64.onnx"), x = scratch("x.npy");
  ASSERT_EQ(run_command(cli() + " export squeezenet --image-size 64 -o " + onnx).exit_code, 0);
  const std::string script = scratch("ort.py");
  std::ofstream(script) << R"(
import sys, numpy as np, onnxruntime as ort
mode, onnx, x = sys.argv[1:4]
if mode == 'input':
    np.save(x, np.random.default_rng(7).uniform(-1, 1, (1, 3, 64, 64)).astype(np.float32))
    sys.exit(0)
out_dir, atol, rtol = sys.argv[4], 1e-3, 1e-4  # outputs reach ~450: atol is 2e-6 of that
options = ort.SessionOptions()
options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
s = ort.InferenceSession(onnx, options, providers=['CPUExecutionProvider'])
expected = s.run(None, {s.get_inputs()[0].name: np.load(x)})
for info, want in zip(s.get_outputs(), expected):
    got = np.load(f'{out_dir}/{info.name}.npy')
    assert got.dtype == np.float32 and got.shape == want.shape, (got.dtype, got.shape, want.shape)
    bad = np.abs(got - want) > atol + rtol * np.abs(want)
    print(f'{info.name} {list(got.shape)} max |ort| {np.abs(want).max():.4g} max_abs_error '
          f'{np.abs(got - want).max():.3g} violations {int(bad.sum())}')
    assert not bad.any()
)";
  auto r = run_command(python.string() + " " + script + " input " + onnx + " " + x);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* algo : {"sequential", "ios"}) {
    const std::string out = scratch(std::string("out_") + algo);
    r = run_command(cli() + " run " + onnx + " --algo " + algo + " --cost roofline --iters 1 " +
                    "--warmup 0 --input input=" + x + " --output-dir " + out);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("output avgpool [1,1000,1,1] -> " + out + "/avgpool.npy"),
              std::string::npos)
        << r.out;
    auto cmp =
        run_command(python.string() + " " + script + " compare " + onnx + " " + x + " " + out);
    EXPECT_EQ(cmp.exit_code, 0) << algo << ": " << cmp.out << cmp.err;
    std::cout << algo << ": " << cmp.out;
  }
}

// --input errors name the input, what it expects and what the file holds; exit 2.
TEST(Cli, RunInputErrorsNameTheInput) {
  const auto python = testing::venv_python();
  if (python.empty()) GTEST_SKIP() << "no .venv with numpy (make deps)";
  const std::string f64 = scratch("f64.npy"), wrong_shape = scratch("wrong_shape.npy");
  auto r = run_command(python.string() + " -c \"import numpy as np; " + "np.save('" + f64 +
                       "', np.zeros((1, 3, 64, 64))); " + "np.save('" + wrong_shape +
                       "', np.zeros((1, 3, 32, 32), np.float32))\"");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string run = cli() + " run squeezenet --image-size 64 --algo sequential " +
                          "--cost roofline --iters 1 --warmup 0 ";
  for (const auto& [args, expected] : std::vector<std::pair<std::string, std::string>>{
           std::pair{"--input input=" + wrong_shape,
                     "--input input: expected float32 [1,3,64,64], " + wrong_shape +
                         " holds float32 [1,3,32,32]"},
           std::pair{"--input input=" + f64,
                     "holds float64 [1,3,64,64] (numpy: a.astype(np.float32))"},
           std::pair{"--input image=" + f64,
                     "the model has no input 'image' (its inputs: input "
                     "float32 [1,3,64,64])"},
           std::pair{"--input " + f64, "expected NAME=FILE.npy"},
           std::pair{std::string("--input input=/nonexistent.npy"),
                     "cannot read '/nonexistent.npy'"},
           std::pair{"--input input=" + golden("diamond.dag.json"), "not a .npy file"}}) {
    r = run_command(run + args);
    EXPECT_EQ(r.exit_code, 2) << args;
    EXPECT_NE(r.err.find(expected), std::string::npos) << args << ": " << r.err;
  }
}

// braid top: a scenario runs under several policies, writes its report, and bad input exits 2
// naming what is wrong.
TEST(Cli, TopRunsAScenarioAndRejectsBadInput) {
  const auto json = testing::scratch_dir() / "top.json";
  auto r = run_command(cli() +
                       " top -m squeezenet:200 -m resnet50:100:stages --image-size 64"
                       " --scheduler sequential --device sim:a100_40gb --policy sync,top-heuristic"
                       " --duration 0.2 --json " +
                       json.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("resnet50: 56 units in 5 blocks (stages)"), std::string::npos) << r.out;
  std::ifstream in(json);
  const nlohmann::json report = nlohmann::json::parse(in);
  ASSERT_EQ(report.at("runs").size(), 2u);
  EXPECT_EQ(report.at("runs")[1].at("policy"), "top-heuristic");
  EXPECT_GT(report.at("runs")[1].at("throughput_fps").get<double>(), 0);
  std::filesystem::remove(json);

  // The docs' scenario file, its duration overridden by the flag.
  r = run_command(cli() + " top --scenario " +
                  (testing::source_dir() / "docs/top/multi_a100.json").string() +
                  " --duration 0.05 --policy sync --image-size 96 --scheduler sequential");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("0.05 s of virtual time"), std::string::npos) << r.out;
  // In FP16 on the simulated A100 (its tensor-core peak prices the models' plans and stages).
  r = run_command(cli() + " top --scenario " +
                  (testing::source_dir() / "docs/top/multi_a100.json").string() +
                  " --duration 0.05 --policy sync --image-size 96 --scheduler sequential"
                  " --precision fp16");
  ASSERT_EQ(r.exit_code, 0) << r.err;

  struct Bad {
    std::string args, says;
  };
  const Bad bad[] = {
      {"top -m squeezenet:fast", "'fast' is not a number (the rate (FPS))"},
      {"top -m squeezenet:10:deep", "ir or stages"},
      {"top -m squeezenet:10 --policy pos", "unknown policy 'pos'"},
      {"top -m squeezenet:10 --device gpu0", "cpu, cuda:N or sim:NAME"},
      {"top -m squeezenet:10 --device cuda:7", "no CUDA device"},
      {"top -m squeezenet:10 --device cpu --precision fp16", "fp16 needs a GPU device"},
      {"top -m squeezenet:10 --precision fp8", "fp8"},
      {"top -m nosuchnet:10", "nosuchnet"},
      {"top", "--model"},
      {"top --scenario /nonexistent/s.json", "cannot open"},
  };
  for (const Bad& b : bad) {
    auto e = run_command(cli() + " " + b.args);
    EXPECT_EQ(e.exit_code, 2) << b.args << ": " << e.err;
    EXPECT_NE(e.err.find(b.says), std::string::npos) << b.args << ": " << e.err;
  }
  const auto scenario = testing::scratch_dir() / "top_bad.json";
  std::ofstream(scenario) << R"({"format": "braid.top/1", "models": [{"model": "squeezenet"}],
                                "duration": 3})";
  auto e = run_command(cli() + " top --scenario " + scenario.string());
  EXPECT_EQ(e.exit_code, 2) << e.err;
  EXPECT_NE(e.err.find("unknown field \"duration\""), std::string::npos) << e.err;
  // A field's text that its parser refuses: the scenario and the field are named, then why.
  for (auto [field, says] : {std::pair{"cost", "unknown cost model 'bogus'"},
                             {"device", "device 'bogus'"},
                             {"precision", "bogus"}}) {
    std::ofstream(scenario) << R"({"format": "braid.top/1", "models": [{"model": "squeezenet"}], ")"
                            << field << R"(": "bogus"})";
    e = run_command(cli() + " top --scenario " + scenario.string());
    EXPECT_EQ(e.exit_code, 2) << e.err;
    const std::string named = std::string("field \"") + field + "\": ";
    EXPECT_NE(e.err.find(scenario.string() + ": " + named), std::string::npos) << e.err;
    EXPECT_NE(e.err.find(says), std::string::npos) << e.err;
  }
  std::filesystem::remove(scenario);
}

// Issue 28: one planning pipeline. `braid run`, `braid schedule`, a Session, tune::bench and the
// runtime plan
// squeezenet with ios under the roofline on the CPU, and each gets the same schedule.
TEST(FrontEnds, SamePlanForTheSameModelDeviceAndOptions) {
  models::LoadOptions load;
  load.zoo.image_size = 64;
  const models::LoadedModel m = models::load_model("squeezenet", load);
  auto json_of = [&](const sched::Schedule& s) { return sched::to_json(s, m.units); };

  const auto path = testing::scratch_dir() / "front_ends_ios.json";
  auto run = run_command(cli() + " run squeezenet --image-size 64 --algo ios --cost roofline " +
                         "--iters 1 --warmup 0 --save-schedule " + path.string());
  ASSERT_EQ(run.exit_code, 0) << run.err;
  std::ifstream in(path);
  const nlohmann::json from_run = nlohmann::json::parse(in);
  EXPECT_EQ(from_run["algorithm"], "ios");

  // Assigned one by one: GCC 12 sees a designated initializer's Device string as maybe
  // uninitialized (-Wmaybe-uninitialized, fatal under BRAID_WERROR).
  session::SessionOptions so;
  so.scheduler = "ios";
  so.cost = tune::parse_cost_name("roofline");
  so.load = load;
  const nlohmann::json from_session = session::Session::open("squeezenet", so).schedule_json();
  EXPECT_EQ(from_session, from_run);

  const std::vector<std::string> models = {"squeezenet"};
  tune::BenchOptions bench_options;
  bench_options.algorithms = {"ios"};
  bench_options.cost.model = tune::parse_cost_name("roofline");
  bench_options.load = load;
  bench_options.run = false;
  const std::vector<tune::BenchRow> rows = tune::bench(models, bench_options);
  ASSERT_EQ(rows.size(), 1u);
  ASSERT_TRUE(rows[0].schedule.has_value()) << rows[0].error.value_or("");
  EXPECT_EQ(json_of(*rows[0].schedule), from_run);

  runtime::ScenarioRunner runner({.models = {{.model = "squeezenet", .fps = 1}},
                                  .device = Device::cpu(),
                                  .image_size = 64,
                                  .scheduler = "ios",
                                  .cost = tune::parse_cost_name("roofline")});
  const runtime::RuntimeModel& rm = runner.models().model(0);
  EXPECT_EQ(sched::to_json(rm.schedule, rm.units()), from_run);

  // `braid schedule` writes the same plan (with its search stats and prediction, which the
  // others may lack).
  auto schedule = run_command(cli() + " schedule squeezenet --image-size 64 --algo ios " +
                              "--cost roofline -o " + path.string());
  ASSERT_EQ(schedule.exit_code, 0) << schedule.err;
  std::ifstream written(path);
  nlohmann::json from_schedule = nlohmann::json::parse(written);
  nlohmann::json run_plan = from_run;
  for (const char* key : {"stats", "predicted_ms"}) {
    from_schedule.erase(key);
    run_plan.erase(key);
  }
  EXPECT_EQ(from_schedule, run_plan);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace braid
