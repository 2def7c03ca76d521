#include "models/zoo.h"

#include <array>
#include <string>

#include "base/error.h"

namespace braid::models {
namespace {
const std::array<ZooEntry, 11> kZoo = {{
    {"inception_v3", "Inception V3, IOS form (no BN, no head), 299x299", build_inception_v3_ios},
    {"squeezenet", "SqueezeNet complex-bypass, IOS form, 224x224", build_squeezenet_ios},
    {"nasnet", "NASNet-A large, IOS form (cells of Relu-SepConv), 331x331", build_nasnet_ios},
    {"randwire", "RandWire large (WS graphs, C=154), IOS form, 224x224", build_randwire_ios},
    {"googlenet", "GoogLeNet, torchvision form (BN folded, head), 224x224", build_googlenet},
    {"resnet50", "ResNet-50, torchvision form (BN folded, head), 224x224", build_resnet50},
    {"bert", "BERT-base encoder (layers, seq_len, hidden as options)", build_bert},
    {"tv_inception_v3", "Inception V3, torchvision form (BN folded, head), 299x299",
     build_inception_v3_torchvision},
    {"tv_squeezenet1_0", "SqueezeNet 1.0, torchvision form, 224x224", build_squeezenet1_0_torchvision},
    {"tv_googlenet", "alias of googlenet", build_googlenet},
    {"tv_resnet50", "alias of resnet50", build_resnet50},
}};
}  // namespace

std::span<const ZooEntry> zoo() { return kZoo; }

const ZooEntry* find_zoo_entry(std::string_view name) {
  for (const ZooEntry& e : kZoo)
    if (e.name == name) return &e;
  return nullptr;
}

ir::Graph build_zoo_model(std::string_view name, const ZooOptions& options) {
  const ZooEntry* e = find_zoo_entry(name);
  if (e == nullptr) {
    std::string names;
    for (const ZooEntry& z : kZoo) names += (names.empty() ? "" : ", ") + std::string(z.name);
    BRAID_THROW(ErrorCode::kNotFound, "unknown model '", name, "' (zoo: ", names,
                "; or give a .onnx or .dag.json path)");
  }
  BRAID_CHECK(options.batch >= 1, ErrorCode::kInvalidArgument, "batch must be >= 1, got ", options.batch);
  return e->build(options);
}

}  // namespace braid::models
