// Every activation layout of the CPU executor (plain, nhwc, nchw8c, nchw16c) on every zoo model,
// on RegNetY-style and residual graphs built here, and on the exported models under models/
// (`make models`; skipped when absent), against the reference executor (exec/ref: naive loops).
// Each runs under the sequential schedule and a random three-lane schedule, which must agree
// bit for bit.
//
// Criterion, element-wise: |cpu - ref| <= atol + rtol * |ref|, with rtol = 1e-4 and
// atol = 1e-5 * max |ref| of that output. The absolute term scales with the output because random
// weights give outputs of any scale, and convolutions and matmuls sum in another order than the
// reference (blocking, Winograd-free direct and GEMM kernels): their rounding error is relative to
// the magnitude of the sums, not to each output element, some of which are near zero.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "base/error.h"
#include "exec/cpu/cpu_executor.h"
#include "exec/cpu/layout.h"
#include "exec/ref/ref_executor.h"
#include "models/loader.h"
#include "models/zoo.h"
#include "sched/lower.h"
#include "sched/random_schedule.h"
#include "sched/registry.h"
#include "test_env.h"

namespace braid::exec {
namespace {

using ir::OpKind;
using ir::ParamInit;

constexpr double kRtol = 1e-4;
constexpr double kAtolOfScale = 1e-5;
constexpr TensorLayout kLayouts[] = {TensorLayout::kPlain, TensorLayout::kNhwc,
                                     TensorLayout::kNChw8c, TensorLayout::kNChw16c};

struct Model {
  std::shared_ptr<const ir::Graph> graph;
  std::shared_ptr<const ir::Weights> weights;
  ir::UnitGraph units;
  std::vector<std::vector<float>> inputs;
};

Model make_model(std::shared_ptr<const ir::Graph> graph,
                 std::shared_ptr<const ir::Weights> weights = nullptr) {
  Model m;
  m.graph = std::move(graph);
  m.weights = weights ? std::move(weights)
                      : std::make_shared<const ir::Weights>(ir::Weights::generate(*m.graph, 7));
  m.units = ir::fuse(m.graph);
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (ValueId v : m.graph->inputs()) {
    m.inputs.emplace_back(m.graph->value(v).type.elements());
    for (float& f : m.inputs.back()) f = dist(rng);
  }
  return m;
}

std::vector<std::vector<float>> run_cpu(const Model& m, const sched::Schedule& s,
                                        TensorLayout layout) {
  const sched::ExecutionPlan plan = sched::lower(m.units, s);
  auto model =
      make_cpu_executor({.layout = layout})->prepare({m.graph, m.weights, &m.units, &plan});
  auto request = model->new_request();
  for (size_t i = 0; i < m.inputs.size(); ++i) model->set_input(*request, i, m.inputs[i]);
  model->run(*request);
  std::vector<std::vector<float>> outs;
  for (size_t i = 0; i < m.graph->outputs().size(); ++i) {
    auto o = model->output(*request, i);
    outs.emplace_back(o.begin(), o.end());
  }
  return outs;
}

// The element-wise criterion above; reports the worst element.
void expect_close(const std::vector<float>& got, const std::vector<float>& want,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double scale = 0;
  for (float w : want) scale = std::max(scale, std::abs(double(w)));
  const double atol = kAtolOfScale * scale;
  size_t bad = 0, worst = 0;
  double worst_excess = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_TRUE(std::isfinite(got[i])) << what << ": element " << i << " is " << got[i];
    const double err = std::abs(double(got[i]) - want[i]);
    const double bound = atol + kRtol * std::abs(double(want[i]));
    if (err > bound) {
      ++bad;
      if (err - bound > worst_excess) worst_excess = err - bound, worst = i;
    }
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << got.size() << " elements off; worst ["
                     << worst << "] got " << got[worst] << " want " << want[worst]
                     << " (max |want| " << scale << ")";
}

void check_all_layouts(const Model& m, const std::string& name) {
  const auto want = ref::run_reference(*m.graph, *m.weights, m.inputs);
  const sched::Schedule sequential = sched::make_scheduler("sequential")->schedule(m.units);
  const sched::Schedule lanes = sched::random_stream_schedule(m.units, 3, 1);
  for (TensorLayout layout : kLayouts) {
    const std::string what = name + " " + std::string(cpu::layout_name(layout));
    const auto got = run_cpu(m, sequential, layout);
    ASSERT_EQ(got.size(), want.size()) << what;
    for (size_t i = 0; i < got.size(); ++i)
      expect_close(got[i], want[i], what + " output " + std::to_string(i));
    EXPECT_EQ(run_cpu(m, lanes, layout), got) << what << ": a three-lane schedule differs";
  }
}

// ---- Graphs built here ------------------------------------------------------------------------

ir::TensorType f32(ir::Shape shape) {
  return {ir::DType::kFloat32, std::move(shape)};
}

// A Conv with He-initialized weights (scaled by `gain`) and a small bias, as a BatchNorm-folded
// export has.
ValueId conv(ir::GraphBuilder& b, const std::string& name, ValueId x, int64_t out_channels,
             ir::ConvAttrs attrs, float gain = 1.0f) {
  const int64_t in_channels = b.type(x).shape[1];
  const int64_t fan_in = in_channels / attrs.groups * attrs.kernel[0] * attrs.kernel[1];
  const float stddev = gain * std::sqrt(2.0f / static_cast<float>(fan_in));
  return b.add_op(OpKind::Conv, attrs,
                  {x,
                   b.add_parameter(name + ".w",
                                   f32({out_channels, in_channels / attrs.groups, attrs.kernel[0],
                                        attrs.kernel[1]}),
                                   ParamInit::normal(stddev)),
                   b.add_parameter(name + ".b", f32({out_channels}), ParamInit::normal(0.01f))},
                  name);
}

ValueId relu(ir::GraphBuilder& b, const std::string& name, ValueId x) {
  return b.add_op(OpKind::Relu, {}, {x}, name);
}

// RegNetY-400MF's shape of network (torchvision regnet.py, ResBottleneckBlock with
// squeeze-excitation) at one block per stage: widths 48, 104, 208, 440 (104 and 440 are an odd
// number of 8-channel blocks, and not multiples of 16), grouped 3x3 convs of 8 channels per
// group, SE blocks (GlobalAveragePool, two 1x1 convs, Sigmoid, a broadcasting Mul).
ir::Graph regnety_like(int64_t image_size) {
  constexpr int64_t kGroupWidth = 8;
  ir::GraphBuilder b("regnety_like");
  ValueId x = b.add_input("input", f32({1, 3, image_size, image_size}));
  x = relu(b, "stem.relu",
           conv(b, "stem", x, 32, {.kernel = {3, 3}, .stride = {2, 2}, .pads = {1, 1, 1, 1}}));
  for (int64_t width : {48, 104, 208, 440}) {
    const std::string m = "s" + std::to_string(width);
    const int64_t in_width = b.type(x).shape[1];
    ValueId y = relu(b, m + ".a.relu", conv(b, m + ".a", x, width, {}));
    y = relu(b, m + ".b.relu",
             conv(b, m + ".b", y, width,
                  {.kernel = {3, 3},
                   .stride = {2, 2},
                   .pads = {1, 1, 1, 1},
                   .groups = width / kGroupWidth}));
    const ValueId pooled = b.add_op(OpKind::GlobalAveragePool, {}, {y}, m + ".se.pool");
    const ValueId squeezed =
        relu(b, m + ".se.relu", conv(b, m + ".se.fc1", pooled, in_width / 4, {}));
    const ValueId scale =
        b.add_op(OpKind::Sigmoid, {}, {conv(b, m + ".se.fc2", squeezed, width, {})}, m + ".se.sig");
    y = b.add_op(OpKind::Mul, {}, {y, scale}, m + ".se.mul");
    y = conv(b, m + ".c", y, width, {}, 0.5f);
    const ValueId shortcut = conv(b, m + ".proj", x, width, {.stride = {2, 2}});
    x = relu(b, m + ".relu", b.add_op(OpKind::Add, {}, {y, shortcut}, m + ".add"));
  }
  x = b.add_op(OpKind::GlobalAveragePool, {}, {x}, "head.pool");
  x = b.add_op(OpKind::Flatten, ir::AxisAttrs{1}, {x}, "head.flatten");
  x = b.add_op(OpKind::Gemm, ir::GemmAttrs{.trans_b = true},
               {x, b.add_parameter("fc.w", f32({100, 440}), ParamInit::normal(0.05f)),
                b.add_parameter("fc.b", f32({100}), ParamInit::normal(0.01f))},
               "fc");
  b.mark_output(x);
  return std::move(b).build();
}

// The chain of issue 15 that corrupted the heap in nchw8c: 24 channels (three 8-blocks),
// Conv1x1 -> Relu -> Conv1x1 -> Add(residual) -> Relu -> Conv1x1.
ir::Graph residual_chain24() {
  ir::GraphBuilder b("chain24");
  const ValueId x = b.add_input("x", f32({1, 24, 16, 16}));
  const ValueId c1 = conv(b, "c1", x, 24, {});
  const ValueId c2 = conv(b, "c2", relu(b, "r1", c1), 24, {});
  const ValueId sum = relu(b, "r2", b.add_op(OpKind::Add, {}, {c2, c1}, "add"));
  b.mark_output(conv(b, "c3", sum, 24, {}));
  return std::move(b).build();
}

TEST(CpuLayoutConformance, ResidualChain24) {
  check_all_layouts(make_model(std::make_shared<const ir::Graph>(residual_chain24())), "chain24");
}

TEST(CpuLayoutConformance, RegNetYLike) {
  check_all_layouts(make_model(std::make_shared<const ir::Graph>(regnety_like(64))),
                    "regnety_like");
}

// ---- The zoo ------------------------------------------------------------------------------------

// Small configurations, so that the reference executor stays fast: 64x64 images (Inception
// needs more for its valid-padded reductions), a one-layer narrow BERT. Channel counts, which
// decide the layouts, do not depend on the image size.
models::ZooOptions small_options(std::string_view name) {
  models::ZooOptions o{.batch = 1, .image_size = 64, .layers = 1, .seq_len = 16, .hidden = 128};
  if (name.find("inception") != std::string_view::npos) o.image_size = 107;
  return o;
}

std::vector<std::string> zoo_names() {
  std::vector<std::string> names;
  for (const models::ZooEntry& e : models::zoo())
    if (!e.description.starts_with("alias of")) names.emplace_back(e.name);
  return names;
}

class CpuLayoutZoo : public ::testing::TestWithParam<std::string> {};

TEST_P(CpuLayoutZoo, EveryLayoutMatchesReference) {
  const std::string& name = GetParam();
  check_all_layouts(make_model(std::make_shared<const ir::Graph>(
                        models::build_zoo_model(name, small_options(name)))),
                    name);
}

INSTANTIATE_TEST_SUITE_P(Zoo, CpuLayoutZoo, ::testing::ValuesIn(zoo_names()),
                         [](const auto& info) { return info.param; });

// ---- Exported models (make models) --------------------------------------------------------------

// models/ of the checkout, or $BRAID_MODELS_DIR. Listed when the test binary is built (ctest's
// test discovery), one test per file, so each gets its own timeout: at 224x224 the reference
// executor takes seconds to minutes per model.
std::filesystem::path exported_dir() {
  const char* dir = std::getenv("BRAID_MODELS_DIR");
  return dir != nullptr ? std::filesystem::path(dir) : testing::source_dir() / "models";
}

std::vector<std::string> exported_models() {
  std::vector<std::string> stems;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(exported_dir(), ec))
    if (e.path().extension() == ".onnx") stems.push_back(e.path().stem().string());
  std::sort(stems.begin(), stems.end());
  if (stems.empty()) stems.emplace_back();  // one case, which skips
  return stems;
}

class CpuLayoutExported : public ::testing::TestWithParam<std::string> {};

TEST_P(CpuLayoutExported, EveryLayoutMatchesReference) {
  if (GetParam().empty())
    GTEST_SKIP() << "no exported models in " << exported_dir() << " (make models)";
  const std::filesystem::path file = exported_dir() / (GetParam() + ".onnx");
  if (!std::filesystem::exists(file)) GTEST_SKIP() << file << " is gone (rebuild to list again)";
  models::LoadedModel loaded = models::load_model(file.string());
  check_all_layouts(
      make_model(loaded.graph, std::make_shared<const ir::Weights>(std::move(loaded.weights))),
      GetParam());
}

INSTANTIATE_TEST_SUITE_P(Exported, CpuLayoutExported, ::testing::ValuesIn(exported_models()),
                         [](const auto& info) {
                           std::string name = info.param.empty() ? "none" : info.param;
                           for (char& ch : name)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return name;
                         });

}  // namespace
}  // namespace braid::exec
