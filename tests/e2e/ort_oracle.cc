#include "ort_oracle.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>

#include "base/error.h"
#include "exec/cpu/cpu_executor.h"
#include "sched/lower.h"
#include "sched/random_schedule.h"
#include "sched/registry.h"
#include "test_env.h"

namespace braid::testing {

namespace fs = std::filesystem;

namespace {

constexpr int kRandomScheduleStreams = 3;

std::vector<std::byte> read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<std::byte> data(fs::file_size(path));
  in.read(reinterpret_cast<char*>(data.data()), static_cast<std::streamsize>(data.size()));
  return data;
}

std::vector<float> as_floats(const std::vector<std::byte>& bytes) {
  std::vector<float> data(bytes.size() / sizeof(float));
  std::memcpy(data.data(), bytes.data(), data.size() * sizeof(float));
  return data;
}

}  // namespace

std::vector<float> read_float_file(const fs::path& path) {
  return as_floats(read_bytes(path));
}

std::vector<float> as_floats(const RawTensor& tensor) {
  return as_floats(tensor.bytes);
}

OrtRun run_onnx_runtime(const fs::path& onnx, const std::vector<fs::path>& inputs,
                        const fs::path& scratch) {
  OrtRun run;
  fs::path python = venv_python();
  if (python.empty()) {
    ADD_FAILURE() << "no .venv with onnxruntime (run make deps)";
    return run;
  }
  fs::remove_all(scratch);  // never read a previous run's outputs
  fs::create_directories(scratch);
  std::string command = python.string() + " " + (source_dir() / "scripts/ort_run.py").string() +
                        " " + onnx.string() + " " + scratch.string();
  for (const fs::path& in : inputs) command += " " + in.string();
  CommandResult r = run_command(command);
  if (r.exit_code != 0) {
    ADD_FAILURE() << "ONNX Runtime failed on " << onnx << ":\n" << r.err;
    return run;
  }
  // ort_run.py writes back the inputs it fed (raw, declared dtype) and every output as float32.
  for (size_t i = 0; i < inputs.size(); ++i) {
    fs::path raw = scratch / ("input_" + std::to_string(i) + ".bin");
    std::string dtype;
    std::ifstream(scratch / ("input_" + std::to_string(i) + ".dtype")) >> dtype;
    RawTensor t{.bytes = read_bytes(raw)};
    if (dtype == "int64") {
      t.dtype = ir::DType::kInt64;
    } else if (dtype != "float32") {
      ADD_FAILURE() << onnx << ": input " << i << " is " << dtype
                    << ", which braid has no DType for";
      return {};
    }
    run.inputs.push_back(std::move(t));
  }
  for (size_t i = 0; fs::exists(scratch / ("output_" + std::to_string(i) + ".bin")); ++i)
    run.outputs.push_back(
        as_floats(read_bytes(scratch / ("output_" + std::to_string(i) + ".bin"))));
  return run;
}

std::vector<fs::path> write_random_inputs(const ir::Graph& graph, uint64_t seed,
                                          const fs::path& scratch) {
  fs::create_directories(scratch);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<fs::path> paths;
  for (size_t i = 0; i < graph.inputs().size(); ++i) {
    std::vector<float> x(graph.value(graph.inputs()[i]).type.elements());
    for (float& v : x) v = dist(rng);
    fs::path path = scratch / ("random_input_" + std::to_string(i) + ".bin");
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(x.data()),
               static_cast<std::streamsize>(x.size() * sizeof(float)));
    paths.push_back(path);
  }
  return paths;
}

std::vector<OracleSchedule> oracle_schedules(const ir::UnitGraph& units, uint64_t seed) {
  std::vector<OracleSchedule> schedules;
  for (const char* algo : {"sequential", "ios"})
    schedules.push_back({algo, sched::make_scheduler(algo)->schedule(units)});
  schedules.push_back(
      {"random" + std::to_string(kRandomScheduleStreams) + "x" + std::to_string(seed),
       sched::random_stream_schedule(units, kRandomScheduleStreams, seed)});
  return schedules;
}

std::vector<std::vector<float>> run_cpu_executor(const models::LoadedModel& model,
                                                 const sched::Schedule& schedule,
                                                 const std::vector<RawTensor>& inputs) {
  const ir::Graph& g = *model.graph;
  sched::ExecutionPlan plan = sched::lower(model.units, schedule);
  auto weights = std::make_shared<const ir::Weights>(model.weights);
  auto prepared = exec::make_cpu_executor()->prepare({model.graph, weights, &model.units, &plan});
  auto request = prepared->new_request();
  BRAID_CHECK(inputs.size() == g.inputs().size(), ErrorCode::kInvalidArgument, "the model has ",
              g.inputs().size(), " inputs, ORT was given ", inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ir::Value& v = g.value(g.inputs()[i]);
    // set_input takes float values and converts them to the input's dtype: exact for int64
    // values up to 2^24 (token ids), checked here.
    BRAID_CHECK(v.type.dtype == inputs[i].dtype, ErrorCode::kInvalidArgument, "input '", v.name,
                "' is ", ir::to_string(v.type.dtype), ", ORT was given ",
                ir::to_string(inputs[i].dtype));
    if (inputs[i].dtype == ir::DType::kInt64) {
      std::vector<int64_t> ints(inputs[i].bytes.size() / sizeof(int64_t));
      std::memcpy(ints.data(), inputs[i].bytes.data(), ints.size() * sizeof(int64_t));
      std::vector<float> values;
      for (int64_t x : ints) {
        BRAID_CHECK(x >= -(int64_t{1} << 24) && x <= (int64_t{1} << 24), ErrorCode::kUnsupported,
                    "input '", v.name, "' holds ", x, ", not exact as the float set_input takes");
        values.push_back(static_cast<float>(x));
      }
      prepared->set_input(*request, i, values);
    } else {
      BRAID_CHECK(inputs[i].dtype == ir::DType::kFloat32, ErrorCode::kUnsupported, "input '",
                  v.name, "' is ", ir::to_string(inputs[i].dtype));
      prepared->set_input(*request, i, as_floats(inputs[i].bytes));
    }
  }
  prepared->run(*request);
  std::vector<std::vector<float>> outputs;
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    auto y = prepared->output(*request, i);
    outputs.emplace_back(y.begin(), y.end());
  }
  return outputs;
}

void expect_outputs_match(const std::vector<std::vector<float>>& expected,
                          const std::vector<std::vector<float>>& got, Tolerance tolerance,
                          const std::string& tag) {
  ASSERT_EQ(got.size(), expected.size()) << tag << ": output count";
  double min_scale = std::numeric_limits<double>::infinity(), max_relative_error = 0,
         worst_ratio = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].size(), expected[i].size()) << tag << " output " << i << ": element count";
    double scale = 0;
    for (float b : expected[i]) scale = std::max(scale, std::abs(double(b)));
    EXPECT_TRUE(std::isfinite(scale) && scale > 0)
        << tag << " output " << i << ": ORT's output has scale " << scale << "; nothing to compare";
    min_scale = std::min(min_scale, scale);
    size_t outside = 0, worst = 0;
    double output_worst_ratio = 0;
    for (size_t k = 0; k < got[i].size(); ++k) {
      double a = got[i][k], b = expected[i][k];
      double error = std::abs(a - b);
      double ratio = error / (tolerance.atol * scale + tolerance.rtol * std::abs(b));
      if (std::isnan(ratio)) ratio = std::numeric_limits<double>::infinity();  // NaN: outside
      if (ratio > 1) ++outside;
      if (ratio > output_worst_ratio) output_worst_ratio = ratio, worst = k;
      max_relative_error = std::max(max_relative_error, error / scale);
    }
    worst_ratio = std::max(worst_ratio, output_worst_ratio);
    EXPECT_EQ(outside, 0u) << tag << " output " << i << ": " << outside << " of " << got[i].size()
                           << " elements outside |a-b| <= " << tolerance.atol << " * " << scale
                           << " + " << tolerance.rtol << "|b|; worst at " << worst << ": braid "
                           << got[i][worst] << ", ORT " << expected[i][worst];
  }
  auto sci = [](double x) { return fmt::format("{:.3e}", x); };
  ::testing::Test::RecordProperty(tag + "_scale", sci(min_scale));
  ::testing::Test::RecordProperty(tag + "_max_relative_error", sci(max_relative_error));
  ::testing::Test::RecordProperty(tag + "_worst_ratio", sci(worst_ratio));
}

}  // namespace braid::testing
