// ONNX Runtime as the oracle for whole models: a model runs on braid's CPU executor under
// several schedules and on ORT (scripts/ort_run.py) with the same inputs, and every output
// element must agree.
//
//   OrtRun ort = run_onnx_runtime(onnx_path, {"x.npy"}, scratch / "resnet18");
//   for (const OracleSchedule& s : oracle_schedules(model.units))
//     expect_outputs_match(ort, run_cpu_executor(model, s.schedule, ort.inputs), kFp32, s.name);
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "ir/tensor_type.h"
#include "models/loader.h"
#include "sched/schedule.h"

namespace braid::testing {

// Element-wise closeness, numpy's allclose with atol in units of the output's scale:
//   |got - expected| <= atol * scale + rtol * |expected|,   scale = max |expected| of that output.
// A fixed atol would make the test meaningless on some models and too strict on others: with
// random weights, output scales range from 4e-14 (EfficientNet with fresh BatchNorm statistics:
// its activations vanish, and every element would pass a fixed atol) to 1e2 (ResNet-50).
struct Tolerance {
  double atol = 0;  // times the output's scale
  double rtol = 0;
};

// FP32 against FP32 computed in another summation order (oneDNN's kernels vs ORT's MLAS). A dot
// product of K terms differs by about sqrt(K) * 2^-24 relative to its terms' magnitude; K reaches
// ~25,000 here (VGG's first FC) and errors compound with depth. Measured (docs/models.md): the
// largest error is 3e-7 to 1e-4 of the output's scale on the zoo and the 51 exported models that
// pass (1e-4 on the 101-layer ResNets, ResNeXts and Wide ResNet), 5e-4 on ResNet-152, where ORT
// against itself with its optimisations on already differs by 3e-4: random weights make deep
// residual stacks ill-conditioned. atol 1e-4 and rtol 1e-3 leave a margin of 10 or more on most,
// while the bugs this test exists for (a wrong layout, padding or broadcast) give errors of 1e-2 of
// the scale and up: RegNetY in nchw8c was off by 0.095. atol covers elements that cancel to near
// zero, where a relative error means nothing; each test records its worst ratio (|a-b| over the
// bound) to show the margin left.
inline constexpr Tolerance kFp32{.atol = 1e-4, .rtol = 1e-3};

// One input or output as raw bytes in its dtype, graph order.
struct RawTensor {
  ir::DType dtype = ir::DType::kFloat32;
  std::vector<std::byte> bytes;
};

// A raw float32 file (the .bin inputs and outputs test models are written with), and a
// float32 RawTensor, as floats.
std::vector<float> read_float_file(const std::filesystem::path& path);
std::vector<float> as_floats(const RawTensor& tensor);

struct OrtRun {
  std::vector<RawTensor> inputs;            // what ORT was fed, graph input order
  std::vector<std::vector<float>> outputs;  // ORT's outputs as float32, graph output order
};

// Runs `onnx` on ORT (sequential, one thread, graph optimizations off) with inputs given as .npy
// files or raw .bin files (float32, or the input's declared dtype), in the graph's input order.
// Fails the current test (ADD_FAILURE) and returns nothing when ORT fails; callers check
// HasFatalFailure / outputs.empty().
OrtRun run_onnx_runtime(const std::filesystem::path& onnx,
                        const std::vector<std::filesystem::path>& inputs,
                        const std::filesystem::path& scratch);

// Seeded uniform [-1, 1) float32 inputs for every graph input, written as raw .bin files under
// `scratch`; returns their paths (for models whose inputs are all float32: the zoo).
std::vector<std::filesystem::path> write_random_inputs(const ir::Graph& graph, uint64_t seed,
                                                       const std::filesystem::path& scratch);

struct OracleSchedule {
  std::string name;
  sched::Schedule schedule;
};
// sequential, ios (default options, default cost model) and a random valid schedule on 3 streams
// (sched/random_schedule.h): one, two or three lanes that interleave differently on every run.
std::vector<OracleSchedule> oracle_schedules(const ir::UnitGraph& units, uint64_t seed);

// Prepares `model` for `schedule` on the CPU executor (default options), runs it once on `inputs`
// and returns every output. Throws braid::Error as prepare/set_input do (kUnsupported for an op
// or an input dtype the executor cannot take).
std::vector<std::vector<float>> run_cpu_executor(const models::LoadedModel& model,
                                                 const sched::Schedule& schedule,
                                                 const std::vector<RawTensor>& inputs);

// Expects every element of every output to be close and every output's scale to be finite and
// non-zero (an all-zero output would make the comparison vacuous); one failure per output names
// the count of elements outside the tolerance and the worst one. Records "<tag>_scale" (the
// smallest output scale), "<tag>_max_relative_error" (the largest |a-b| / scale) and
// "<tag>_worst_ratio" (the largest |a-b| / bound; <= 1 passes) as test properties.
void expect_outputs_match(const std::vector<std::vector<float>>& expected,
                          const std::vector<std::vector<float>>& got, Tolerance tolerance,
                          const std::string& tag);

}  // namespace braid::testing
