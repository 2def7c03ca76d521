// The operator-merge test model (ios.txt §4.2), shared by the CPU and CUDA executors' tests
// (test code only; header-only so that both test binaries share one definition).
//
// x [1, 16, 12, 12] feeds a 1x1 conv (bias, fused ReLU attribute), a 3x3 pad 1 conv followed by
// a Relu op (fused into its unit) and a 5x5 pad 2 conv (bias, ReLU attribute); a Concat joins
// them, and the 5x5 conv is also a graph output. Not merged by the schedules (merge.h refuses
// them) but given to the kernel builders directly: a 3x3 conv with a BatchNormalization and a
// Relu op (folded and fused), and a 5x5 conv with pads (3, 2, 1, 2), which does not center.
#pragma once

#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "ir/unit_graph.h"
#include "ir/weights.h"
#include "sched/schedule.h"

namespace braid::testing {

struct MergeTestModel {
  std::shared_ptr<const ir::Graph> graph;
  std::shared_ptr<const ir::Weights> weights;
  ir::UnitGraph units;
  std::vector<std::vector<float>> inputs;
};

inline MergeTestModel merge_test_model() {
  using namespace ir;
  GraphBuilder b("merge");
  ValueId x = b.add_input("x", {DType::kFloat32, {1, 16, 12, 12}});
  auto param = [&](std::string name, std::vector<int64_t> shape, ParamInit init) {
    return b.add_parameter(std::move(name), {DType::kFloat32, Shape(shape)}, init);
  };
  auto conv = [&](std::string name, ConvAttrs attrs, int64_t oc, bool bias) {
    std::vector<ValueId> in{
        x, param(name + ".w", {oc, 16, attrs.kernel[0], attrs.kernel[1]}, ParamInit::normal(0.2f))};
    if (bias) in.push_back(param(name + ".b", {oc}, ParamInit::normal(0.5f)));
    return b.add_op(OpKind::Conv, attrs, in, name);
  };
  ValueId one = conv("one", {.activation = Activation::kRelu}, 8, true);
  ValueId three = conv("three", {.kernel = {3, 3}, .pads = {1, 1, 1, 1}}, 6, false);
  ValueId three_relu = b.add_op(OpKind::Relu, {}, {three}, "three_relu");
  ValueId five = conv(
      "five", {.kernel = {5, 5}, .pads = {2, 2, 2, 2}, .activation = Activation::kRelu}, 5, true);
  ValueId skewed = conv(
      "skewed", {.kernel = {5, 5}, .pads = {3, 2, 1, 2}, .activation = Activation::kRelu}, 3, true);
  ValueId bn_conv = conv("bn_conv", {.kernel = {3, 3}, .pads = {1, 1, 1, 1}}, 4, true);
  ValueId bn = b.add_op(OpKind::BatchNormalization, BatchNormAttrs{},
                        {bn_conv, param("bn.scale", {4}, ParamInit::uniform(0.5f, 1.5f)),
                         param("bn.shift", {4}, ParamInit::normal(0.5f)),
                         param("bn.mean", {4}, ParamInit::normal(0.5f)),
                         param("bn.var", {4}, ParamInit::uniform(0.5f, 1.5f))},
                        "bn");
  ValueId bn_relu = b.add_op(OpKind::Relu, {}, {bn}, "bn_relu");
  ValueId cat = b.add_op(OpKind::Concat, AxisAttrs{.axis = 1}, {one, three_relu, five}, "cat");
  for (ValueId v : {cat, five, skewed, bn_relu}) b.mark_output(v);
  MergeTestModel m;
  m.graph = std::make_shared<const Graph>(std::move(b).build());
  m.weights = std::make_shared<const Weights>(Weights::generate(*m.graph, 11));
  m.units = fuse(m.graph);
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> in(16 * 12 * 12);
  for (float& f : in) f = dist(rng);
  m.inputs.push_back(std::move(in));
  return m;
}

// Stage 0 merges `names`; stage 1 runs every other unit one after another.
inline sched::Schedule merge_schedule(const ir::UnitGraph& units,
                                      std::vector<std::string_view> names) {
  sched::Schedule s;
  sched::Stage merge{.kind = sched::StageKind::kMerge}, rest;
  std::vector<bool> merged(units.num_units(), false);
  for (std::string_view n : names) {
    merge.groups.push_back({*units.find_unit(n)});
    merged[index(*units.find_unit(n))] = true;
  }
  for (size_t u = 0; u < units.num_units(); ++u)
    if (!merged[u]) rest.groups.push_back({make_id<UnitId>(u)});
  s.stages = {merge, rest};
  return s;
}

}  // namespace braid::testing
