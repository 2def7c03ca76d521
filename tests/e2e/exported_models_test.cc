// Every model `make models` exports (scripts/export_torchvision.py: torchvision 0.14's 80
// classifiers and BERT-base at opsets 14 and 17, random weights) imports, runs on braid's CPU
// executor under sequential, ios and a random 3-stream schedule, and matches ONNX Runtime on the
// seeded input saved beside it, element-wise within ort_oracle.h's kFp32 (|a-b| <= 1e-4 scale +
// 1e-3 |b|, scale = max |b| of the output). Skips when models/ is absent; docs/models.md is the
// latest table of its results.
//
// Time: each model runs once on ORT and three times on braid; the 41 models up to ResNet-50's size
// took 195 s on 2 shared cores; the large ones (VGG, RegNet-32GF, EfficientNetV2-L) 10 to 20 s
// each. Label `models`: `ctest -LE models` leaves it out.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "base/error.h"
#include "models/loader.h"
#include "ort_oracle.h"
#include "test_env.h"

namespace braid {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kScheduleSeed = 7;

// What `scripts/export_torchvision.py --list` prints; ModelList.CoversEveryExportedFile keeps the
// two in step.
constexpr const char* kModels[] = {
    "alexnet",
    "convnext_base",
    "convnext_large",
    "convnext_small",
    "convnext_tiny",
    "densenet121",
    "densenet161",
    "densenet169",
    "densenet201",
    "efficientnet_b0",
    "efficientnet_b1",
    "efficientnet_b2",
    "efficientnet_b3",
    "efficientnet_b4",
    "efficientnet_b5",
    "efficientnet_b6",
    "efficientnet_b7",
    "efficientnet_v2_l",
    "efficientnet_v2_m",
    "efficientnet_v2_s",
    "googlenet",
    "inception_v3",
    "maxvit_t",
    "mnasnet0_5",
    "mnasnet0_75",
    "mnasnet1_0",
    "mnasnet1_3",
    "mobilenet_v2",
    "mobilenet_v3_large",
    "mobilenet_v3_small",
    "regnet_x_16gf",
    "regnet_x_1_6gf",
    "regnet_x_32gf",
    "regnet_x_3_2gf",
    "regnet_x_400mf",
    "regnet_x_800mf",
    "regnet_x_8gf",
    "regnet_y_128gf",
    "regnet_y_16gf",
    "regnet_y_1_6gf",
    "regnet_y_32gf",
    "regnet_y_3_2gf",
    "regnet_y_400mf",
    "regnet_y_800mf",
    "regnet_y_8gf",
    "resnet101",
    "resnet152",
    "resnet18",
    "resnet34",
    "resnet50",
    "resnext101_32x8d",
    "resnext101_64x4d",
    "resnext50_32x4d",
    "shufflenet_v2_x0_5",
    "shufflenet_v2_x1_0",
    "shufflenet_v2_x1_5",
    "shufflenet_v2_x2_0",
    "squeezenet1_0",
    "squeezenet1_1",
    "swin_b",
    "swin_s",
    "swin_t",
    "swin_v2_b",
    "swin_v2_s",
    "swin_v2_t",
    "vgg11",
    "vgg11_bn",
    "vgg13",
    "vgg13_bn",
    "vgg16",
    "vgg16_bn",
    "vgg19",
    "vgg19_bn",
    "vit_b_16",
    "vit_b_32",
    "vit_h_14",
    "vit_l_16",
    "vit_l_32",
    "wide_resnet101_2",
    "wide_resnet50_2",
    "bert_base",
    "bert_base_opset17",
};

fs::path models_dir() {
  return testing::source_dir() / "models";
}

// The reason make models gave for not writing `name` (models/skipped.txt), or "".
std::string skip_reason(const std::string& name) {
  std::ifstream in(models_dir() / "skipped.txt");
  for (std::string line; std::getline(in, line);)
    if (line.starts_with(name + ": ")) return line.substr(name.size() + 2);
  return {};
}

TEST(ModelList, CoversEveryExportedFile) {
  if (!fs::is_directory(models_dir())) GTEST_SKIP() << models_dir() << " absent: run `make models`";
  for (const auto& entry : fs::directory_iterator(models_dir())) {
    if (entry.path().extension() != ".onnx") continue;
    std::string name = entry.path().stem().string();
    EXPECT_TRUE(std::find(std::begin(kModels), std::end(kModels), name) != std::end(kModels))
        << entry.path() << " is not in kModels: add it, so that it is tested";
  }
}

class ExportedModel : public ::testing::TestWithParam<const char*> {};

TEST_P(ExportedModel, ImportsRunsAndMatchesOnnxRuntime) {
  const std::string name = GetParam();
  fs::path onnx = models_dir() / (name + ".onnx");
  if (std::string reason = skip_reason(name); !reason.empty())
    GTEST_SKIP() << "not exported: " << reason;
  if (!fs::exists(onnx)) GTEST_SKIP() << onnx << " absent: run `make models` to export it";
  if (testing::venv_python().empty()) GTEST_SKIP() << "no .venv with onnxruntime (run make deps)";

  models::LoadedModel m;
  try {
    m = models::load_model(onnx.string());
  } catch (const Error& e) {
    FAIL() << "import: " << e.what();
  }
  std::vector<fs::path> inputs;
  for (ValueId v : m.graph->inputs()) {
    inputs.push_back(models_dir() / (name + "." + m.graph->value(v).name + ".npy"));
    if (!fs::exists(inputs.back()))
      GTEST_SKIP() << inputs.back() << " absent: run `make models` again";
  }
  testing::OrtRun ort = testing::run_onnx_runtime(onnx, inputs, testing::scratch_dir() / name);
  ASSERT_FALSE(ort.outputs.empty()) << "no ORT outputs";
  for (const testing::OracleSchedule& s : testing::oracle_schedules(m.units, kScheduleSeed)) {
    SCOPED_TRACE(name + " under " + s.name);
    std::vector<std::vector<float>> got;
    try {
      got = testing::run_cpu_executor(m, s.schedule, ort.inputs);
    } catch (const Error& e) {
      FAIL() << "run under " << s.name << ": " << e.what();
    }
    testing::expect_outputs_match(ort.outputs, got, testing::kFp32, s.name);
  }
}

INSTANTIATE_TEST_SUITE_P(Models, ExportedModel, ::testing::ValuesIn(kModels),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace braid
