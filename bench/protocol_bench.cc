// The inference protocol's cost per request (serve/protocol.h): parsing and validating an
// Inception V3-sized input (1x3x299x299 FP32) sent as JSON or as binary, and encoding a
// 1000-class output both ways. Measures and prints; never asserts.
#include <cstring>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "serve/protocol.h"

namespace {

using braid::serve::DataType;
using nlohmann::json;

const braid::serve::ModelMetadata& model() {
  static const braid::serve::ModelMetadata m{"inception_v3",
                                             {"1"},
                                             "braid",
                                             {{"x", DataType::kFp32, {-1, 3, 299, 299}}},
                                             {{"y", DataType::kFp32, {-1, 1000}}}};
  return m;
}

constexpr size_t kInputElements = 3 * 299 * 299;

std::vector<float> ramp(size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i % 977) / 977.0f - 0.5f;
  return v;
}

void BM_ParseJson(benchmark::State& state) {
  const std::vector<float> values = ramp(kInputElements);
  const std::string body =
      json{{"inputs",
            {{{"name", "x"}, {"datatype", "FP32"}, {"shape", {1, 3, 299, 299}}, {"data", values}}}}}
          .dump();
  for (auto _ : state) {
    benchmark::DoNotOptimize(braid::serve::parse_infer_request(body, std::nullopt, model()));
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * body.size()));
  state.counters["body_bytes"] = static_cast<double>(body.size());
}
BENCHMARK(BM_ParseJson)->Unit(benchmark::kMillisecond);

void BM_ParseBinary(benchmark::State& state) {
  const std::vector<float> values = ramp(kInputElements);
  const std::string header =
      json{{"inputs",
            {{{"name", "x"},
              {"datatype", "FP32"},
              {"shape", {1, 3, 299, 299}},
              {"parameters", {{"binary_data_size", values.size() * sizeof(float)}}}}}}}
          .dump();
  std::string body = header;
  body.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
  for (auto _ : state) {
    benchmark::DoNotOptimize(braid::serve::parse_infer_request(body, header.size(), model()));
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * body.size()));
  state.counters["body_bytes"] = static_cast<double>(body.size());
}
BENCHMARK(BM_ParseBinary)->Unit(benchmark::kMillisecond);

void BM_EncodeOutput(benchmark::State& state) {
  braid::serve::InferRequest request;
  request.binary_data_output = state.range(0) != 0;
  const braid::serve::OutputTensor outputs[] = {{"y", DataType::kFp32, {1, 1000}, ramp(1000)}};
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        braid::serve::encode_infer_response("inception_v3", "1", request, outputs));
  }
}
BENCHMARK(BM_EncodeOutput)->Arg(0)->Arg(1)->ArgName("binary")->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
