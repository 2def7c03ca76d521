#include "ir/features.h"

#include <cmath>
#include <string>
#include <variant>

#include "base/error.h"

namespace braid::ir {
namespace {

constexpr size_t kInputDims = kNumOpKinds;
constexpr size_t kOutputDims = kInputDims + 4;
constexpr size_t kStride = kOutputDims + 4;
constexpr size_t kKernel = kStride + 2;
constexpr size_t kPads = kKernel + 2;
constexpr size_t kGroups = kPads + 4;
constexpr size_t kActivation = kGroups + 1;
constexpr size_t kPooling = kActivation + 5;
constexpr size_t kWork = kPooling + 3;
static_assert(kWork + 2 == kUnitFeatures);

// log2(1 + x) / scale: sizes, counts and work in about [0, 1.5] (learning wants inputs near 1).
float log_size(double x, double scale) {
  return static_cast<float>(std::log2(1.0 + std::max(0.0, x)) / scale);
}
constexpr double kDimScale = 8;    // a dim of 255 -> 1
constexpr double kWorkScale = 32;  // 4G FLOPs or bytes -> 1
constexpr float kWindowScale = 4;  // strides, kernels and pads: 4 -> 1

// The last four dims of `shape`, right-aligned (a [N, C, H, W] map fills all four).
void put_dims(const Shape& shape, float* out) {
  const size_t n = std::min<size_t>(shape.size(), 4);
  for (size_t i = 0; i < n; ++i)
    out[4 - n + i] = log_size(static_cast<double>(shape[shape.size() - n + i]), kDimScale);
}

template <typename Attrs>
void put_window(const Attrs& a, std::vector<float>& f) {
  for (size_t i = 0; i < 2; ++i) {
    f[kStride + i] = static_cast<float>(a.stride[i]) / kWindowScale;
    f[kKernel + i] = static_cast<float>(a.kernel[i]) / kWindowScale;
  }
  for (size_t i = 0; i < 4; ++i) f[kPads + i] = static_cast<float>(a.pads[i]) / kWindowScale;
}

}  // namespace

std::vector<float> unit_features(const UnitGraph& graph, UnitId unit) {
  BRAID_CHECK(index(unit) < graph.num_units(), ErrorCode::kInvalidArgument, "features: no unit ",
              index(unit), " in '", graph.name(), "'");
  std::vector<float> f(kUnitFeatures, 0.0f);
  const Unit& u = graph.unit(unit);
  f[kWork] = log_size(static_cast<double>(u.flops), kWorkScale);
  f[kWork + 1] = log_size(static_cast<double>(u.bytes), kWorkScale);
  const Graph* ops = graph.graph();
  if (ops == nullptr || u.ops.empty()) return f;
  const Node& first = ops->node(u.ops.front());
  const Node& last = ops->node(u.ops.back());
  if (!first.inputs.empty()) put_dims(ops->value(first.inputs.front()).type.shape, &f[kInputDims]);
  if (!last.outputs.empty()) put_dims(ops->value(last.outputs.front()).type.shape, &f[kOutputDims]);
  bool windowed = false;
  Activation activation = Activation::kNone;
  for (NodeId id : u.ops) {
    const Node& node = ops->node(id);
    f[static_cast<size_t>(node.kind)] = 1.0f;
    if (const auto* conv = std::get_if<ConvAttrs>(&node.attrs)) {
      if (!windowed) {
        put_window(*conv, f);
        f[kGroups] = log_size(static_cast<double>(conv->groups) - 1.0, kDimScale);
      }
      windowed = true;
      if (conv->activation != Activation::kNone) activation = conv->activation;
    } else if (const auto* deconv = std::get_if<ConvTransposeAttrs>(&node.attrs)) {
      if (!windowed) {
        put_window(*deconv, f);
        f[kGroups] = log_size(static_cast<double>(deconv->groups) - 1.0, kDimScale);
      }
      windowed = true;
    } else if (const auto* pool = std::get_if<PoolAttrs>(&node.attrs)) {
      if (!windowed) put_window(*pool, f);
      windowed = true;
    }
    switch (node.kind) {
      case OpKind::Relu:
        activation = Activation::kRelu;
        break;
      case OpKind::Sigmoid:
        activation = Activation::kSigmoid;
        break;
      case OpKind::Tanh:
        activation = Activation::kTanh;
        break;
      case OpKind::Gelu:
        activation = Activation::kGelu;
        break;
      case OpKind::MaxPool:
        f[kPooling] = 1.0f;
        break;
      case OpKind::AveragePool:
        f[kPooling + 1] = 1.0f;
        break;
      case OpKind::GlobalAveragePool:
        f[kPooling + 2] = 1.0f;
        break;
      default:
        break;
    }
  }
  f[kActivation + static_cast<size_t>(activation)] = 1.0f;
  return f;
}

const std::vector<std::string>& unit_feature_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (int k = 0; k < kNumOpKinds; ++k)
      n.push_back("op:" + std::string(to_string(static_cast<OpKind>(k))));
    for (const char* prefix : {"in:", "out:"})
      for (int i = 0; i < 4; ++i) n.push_back(prefix + std::to_string(i));
    for (const char* name : {"stride:0", "stride:1", "kernel:0", "kernel:1", "pad:top", "pad:left",
                             "pad:bottom", "pad:right", "log2_groups"})
      n.push_back(name);
    for (int a = 0; a < 5; ++a)
      n.push_back("activation:" + std::string(to_string(static_cast<Activation>(a))));
    for (const char* name :
         {"pool:max", "pool:average", "pool:global_average", "log2_flops", "log2_bytes"})
      n.push_back(name);
    BRAID_ASSERT(n.size() == kUnitFeatures, "feature names out of step with the layout");
    return n;
  }();
  return names;
}

}  // namespace braid::ir
