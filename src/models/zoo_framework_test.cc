// The framework-form zoo models (torchvision GoogLeNet, ResNet-50, Inception V3, SqueezeNet 1.0
// and a BERT-base encoder): shapes, parameter counts against torchvision's, FLOPs against the
// published figures, unit and edge counts, and, where `make models` has exported the real
// torchvision models to models/*.onnx, the same units and edges as the imported files.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <utility>

#include "base/error.h"
#include "ir/unit_graph.h"
#include "ir/weights.h"
#include "models/onnx_import.h"
#include "models/zoo.h"
#include "test_env.h"

namespace braid::models {
namespace {

using SignatureCounts = std::map<std::string, int>;

ir::UnitGraph fused(ir::Graph g) {
  return ir::fuse(std::make_shared<const ir::Graph>(std::move(g)));
}

const ir::TensorType& output_type(const ir::Graph& g) {
  return g.value(g.outputs().front()).type;
}

double total_gflops(const ir::UnitGraph& units) {
  double flops = 0;
  for (const ir::Unit& u : units.units()) flops += static_cast<double>(u.flops);
  return flops / 1e9;
}

// How many units of each signature ("Conv-Relu", "Pad-AveragePool", ...).
SignatureCounts unit_signatures(const ir::UnitGraph& units) {
  SignatureCounts counts;
  for (size_t i = 0; i < units.num_units(); ++i) ++counts[units.signature(make_id<UnitId>(i))];
  return counts;
}

// Edge references by the signatures of their ends ("Conv-Relu -> Concat"): a structural
// fingerprint that does not depend on op names or on the order of independent branches.
SignatureCounts edge_signatures(const ir::UnitGraph& units) {
  SignatureCounts counts;
  for (const ir::UnitEdge& e : units.edges())
    counts[units.signature(e.from) + " -> " + units.signature(e.to)] += e.references;
  return counts;
}

// ---------------------------------------------------------------------------------------------
// The four torchvision CNNs

struct CnnCase {
  std::string_view name;       // zoo name
  std::string_view onnx_file;  // what scripts/export_torchvision.py writes under models/
  int64_t image_size;
  size_t units;
  size_t edge_references;
  size_t distinct_edges;
  // sum(p.numel() for p in model.parameters()) of torchvision 0.14 with weights=None (aux heads
  // off), and the channels of its BatchNorm2d layers (sum of num_features). Eval-mode export
  // folds each BatchNorm into the conv before it: its weight and bias (2 x C parameters) go and
  // the conv, built with bias=False, gains a bias of C. The folded model has `torchvision_params`
  // - `bn_channels` parameters.
  int64_t torchvision_params;
  int64_t bn_channels;
  // Published multiply-accumulates (torchvision's model docs, ptflops), x2 for FLOPs, +-10%
  // for the pooling, ReLU, Add and Concat arithmetic braid counts as well.
  double published_gmacs;
  SignatureCounts signatures;
};

// gtest prints a failing case by its name instead of its bytes.
void PrintTo(const CnnCase& c, std::ostream* os) {
  *os << c.name;
}

class FrameworkCnn : public ::testing::TestWithParam<CnnCase> {};

TEST_P(FrameworkCnn, InputAndOutputShapes) {
  const CnnCase& c = GetParam();
  for (int64_t batch : {1, 3}) {
    ir::Graph g = build_zoo_model(c.name, {.batch = batch});
    ASSERT_EQ(g.inputs().size(), 1u);
    const ir::Value& in = g.value(g.inputs()[0]);
    EXPECT_EQ(in.name, "input");
    EXPECT_EQ(in.type,
              (ir::TensorType{ir::DType::kFloat32, {batch, 3, c.image_size, c.image_size}}));
    ASSERT_EQ(g.outputs().size(), 1u);
    EXPECT_EQ(output_type(g).shape, (ir::Shape{batch, 1000}));
  }
}

TEST_P(FrameworkCnn, ParameterCountIsTorchvisionsWithBatchNormFolded) {
  const CnnCase& c = GetParam();
  ir::Graph g = build_zoo_model(c.name, {});
  EXPECT_EQ(g.num_parameter_elements(), c.torchvision_params - c.bn_channels);
  // The folded biases are exactly the BatchNorm channels (SqueezeNet has no BatchNorm and its
  // convs keep torch's own biases, so nothing is folded there).
  if (c.bn_channels > 0) {
    int64_t conv_bias = 0;
    for (const ir::Node& n : g.nodes())
      if (n.kind == ir::OpKind::Conv) conv_bias += g.value(n.inputs.at(2)).type.elements();
    EXPECT_EQ(conv_bias, c.bn_channels);
  }
}

TEST_P(FrameworkCnn, UnitsAndEdges) {
  const CnnCase& c = GetParam();
  ir::UnitGraph units = fused(build_zoo_model(c.name, {}));
  EXPECT_EQ(units.num_units(), c.units);
  EXPECT_EQ(units.num_edge_references(), c.edge_references);
  EXPECT_EQ(units.num_distinct_edges(), c.distinct_edges);
  EXPECT_EQ(unit_signatures(units), c.signatures);
}

TEST_P(FrameworkCnn, FlopsNearPublishedAndLinearInBatch) {
  const CnnCase& c = GetParam();
  const double gflops = total_gflops(fused(build_zoo_model(c.name, {})));
  EXPECT_GT(gflops, 2 * c.published_gmacs * 0.9);
  EXPECT_LT(gflops, 2 * c.published_gmacs * 1.1);
  const double gflops4 = total_gflops(fused(build_zoo_model(c.name, {.batch = 4})));
  EXPECT_NEAR(gflops4 / gflops, 4.0, 1e-9);
}

// What the exporter leaves out must be absent here too: BatchNorm (folded), Dropout (eval),
// Identity (aliases of initializers, which carry no work). Weights are complete and He-scaled.
TEST_P(FrameworkCnn, EvalModeOpsAndWeights) {
  const CnnCase& c = GetParam();
  ir::Graph g = build_zoo_model(c.name, {});
  for (const ir::Node& n : g.nodes()) {
    EXPECT_NE(n.kind, ir::OpKind::BatchNormalization) << n.name;
    EXPECT_NE(n.kind, ir::OpKind::Identity) << n.name;
    if (n.kind == ir::OpKind::Conv) {
      const ir::Value& w = g.value(n.inputs.at(1));
      EXPECT_EQ(w.name, n.name + ".weight");
      const ir::Shape& s = w.type.shape;
      // ResNet's last conv of each bottleneck starts at a tenth (zero_init_residual's spirit).
      const bool residual = c.name == "resnet50" && n.name.ends_with(".conv3");
      const double he = std::sqrt(2.0 / static_cast<double>(s[1] * s[2] * s[3]));
      EXPECT_NEAR(w.init.a, residual ? 0.1 * he : he, 1e-6) << n.name;
    }
    if (n.kind == ir::OpKind::Gemm) {
      EXPECT_TRUE(std::get<ir::GemmAttrs>(n.attrs).trans_b) << "nn.Linear exports transB=1";
    }
  }
  ir::Weights w = ir::Weights::generate(g, 7);
  EXPECT_NO_THROW(w.check_complete(g));
}

// The acceptance test of the framework forms: the real torchvision model, exported by torch and
// imported by braid, fuses to the same units and edges as the builder's graph.
TEST_P(FrameworkCnn, SameUnitsAndEdgesAsTheTorchExport) {
  const CnnCase& c = GetParam();
  const std::filesystem::path path =
      braid::testing::source_dir() / "models" / (std::string(c.onnx_file) + ".onnx");
  if (!std::filesystem::exists(path))
    GTEST_SKIP() << "run `make models` to export " << path.filename() << " (needs torch)";
  ImportedModel imported = import_onnx_file(path.string(), {});
  ir::UnitGraph from_file = ir::fuse(imported.graph);
  ir::UnitGraph built = fused(build_zoo_model(c.name, {}));
  EXPECT_EQ(from_file.num_units(), built.num_units());
  EXPECT_EQ(from_file.num_edge_references(), built.num_edge_references());
  EXPECT_EQ(from_file.num_distinct_edges(), built.num_distinct_edges());
  EXPECT_EQ(unit_signatures(from_file), unit_signatures(built));
  EXPECT_EQ(edge_signatures(from_file), edge_signatures(built));
  // Same layer shapes: the total arithmetic matches to the flop.
  EXPECT_EQ(total_gflops(from_file), total_gflops(built));
  EXPECT_EQ(output_type(*imported.graph).shape, (ir::Shape{1, 1000}));
  // The counts of this test's expectations hold for the file as well.
  EXPECT_EQ(from_file.num_units(), c.units);
  EXPECT_EQ(from_file.num_edge_references(), c.edge_references);
}

INSTANTIATE_TEST_SUITE_P(
    Framework, FrameworkCnn,
    ::testing::Values(
        // 57 Conv-Relu (BasicConv2d), 13 MaxPool, 9 Concat, the head.
        CnnCase{"googlenet",
                "googlenet",
                224,
                81,
                107,
                107,
                6'624'904,
                7'280,
                1.50,
                {{"Conv-Relu", 57},
                 {"MaxPool", 13},
                 {"Concat", 9},
                 {"GlobalAveragePool-Flatten", 1},
                 {"Gemm", 1}}},
        // 33 Conv-Relu, 4 Conv (the downsamples), 16 Conv-Add-Relu (conv3 of each bottleneck
        // with its residual Add).
        CnnCase{"resnet50",
                "resnet50",
                224,
                56,
                71,
                71,
                25'557'032,
                26'560,
                4.09,
                {{"Conv-Relu", 33},
                 {"Conv", 4},
                 {"Conv-Add-Relu", 16},
                 {"MaxPool", 1},
                 {"GlobalAveragePool-Flatten", 1},
                 {"Gemm", 1}}},
        // The avg_pool2d(count_include_pad) of 9 branch_pool paths is Pad-AveragePool.
        CnnCase{"tv_inception_v3",
                "inception_v3",
                299,
                120,
                154,
                154,
                23'834'568,
                17'216,
                5.71,
                {{"Conv-Relu", 94},
                 {"Pad-AveragePool", 9},
                 {"MaxPool", 4},
                 {"Concat", 11},
                 {"GlobalAveragePool-Flatten", 1},
                 {"Gemm", 1}}},
        // No BatchNorm, no Linear: the classifier is a 1x1 conv, then the global pool.
        CnnCase{
            "tv_squeezenet1_0",
            "squeezenet1_0",
            224,
            38,
            45,
            45,
            1'248'424,
            0,
            0.82,
            {{"Conv-Relu", 26}, {"MaxPool", 3}, {"Concat", 8}, {"GlobalAveragePool-Flatten", 1}}}),
    [](const ::testing::TestParamInfo<CnnCase>& info) { return std::string(info.param.name); });

TEST(FrameworkZoo, AliasesBuildTheSameGraph) {
  for (auto [alias, name] : {std::pair{"tv_googlenet", "googlenet"}, {"tv_resnet50", "resnet50"}}) {
    ir::UnitGraph a = fused(build_zoo_model(alias, {}));
    ir::UnitGraph b = fused(build_zoo_model(name, {}));
    EXPECT_EQ(a.num_units(), b.num_units()) << alias;
    EXPECT_EQ(a.num_edge_references(), b.num_edge_references()) << alias;
  }
}

TEST(FrameworkZoo, TorchvisionPoolingDetails) {
  // GoogLeNet and SqueezeNet pool with ceil_mode=True, ResNet and Inception do not; this is what
  // makes GoogLeNet's maps 56 -> 28 -> 14 -> 7 from 112.
  auto ceil_modes = [](std::string_view model) {
    std::map<bool, int> counts;
    ir::Graph g = build_zoo_model(model, {});
    for (const ir::Node& n : g.nodes())
      if (n.kind == ir::OpKind::MaxPool) ++counts[std::get<ir::PoolAttrs>(n.attrs).ceil_mode];
    return counts;
  };
  EXPECT_EQ(ceil_modes("googlenet"), (std::map<bool, int>{{true, 13}}));
  EXPECT_EQ(ceil_modes("tv_squeezenet1_0"), (std::map<bool, int>{{true, 3}}));
  EXPECT_EQ(ceil_modes("resnet50"), (std::map<bool, int>{{false, 1}}));
  EXPECT_EQ(ceil_modes("tv_inception_v3"), (std::map<bool, int>{{false, 4}}));

  // Inception's padded average pool: a zero Pad of H and W by 1, then a 3x3 window with no pads.
  ir::Graph g = build_zoo_model("tv_inception_v3", {});
  int pairs = 0;
  for (const ir::Node& n : g.nodes()) {
    if (n.kind != ir::OpKind::AveragePool) continue;
    const ir::Node& pad = g.node(g.value(n.inputs[0]).producer);
    ASSERT_EQ(pad.kind, ir::OpKind::Pad) << n.name;
    EXPECT_EQ(std::get<ir::PadAttrs>(pad.attrs).pads,
              (std::vector<int64_t>{0, 0, 1, 1, 0, 0, 1, 1}));
    const auto& pool = std::get<ir::PoolAttrs>(n.attrs);
    EXPECT_EQ(pool.kernel, (std::array<int64_t, 2>{3, 3}));
    EXPECT_EQ(pool.pads, (std::array<int64_t, 4>{0, 0, 0, 0}));
    ++pairs;
  }
  EXPECT_EQ(pairs, 9);
}

TEST(FrameworkZoo, ImageSizeOptionAndBadSizes) {
  ir::Graph g = build_zoo_model("resnet50", {.image_size = 160});
  EXPECT_EQ(g.value(g.inputs()[0]).type.shape, (ir::Shape{1, 3, 160, 160}));
  EXPECT_EQ(output_type(g).shape, (ir::Shape{1, 1000}));
  // A negative size would otherwise reach shape inference as a meaningless dim.
  EXPECT_THROW(build_zoo_model("googlenet", {.image_size = -1}), Error);
  // Too small for Inception's stem: shape inference rejects it rather than building empty maps.
  EXPECT_THROW(build_zoo_model("tv_inception_v3", {.image_size = 32}), Error);
}

// ---------------------------------------------------------------------------------------------
// BERT-base encoder

// Parameters of one layer at hidden size H: Q, K, V and the attention output (4 x (H^2 + H)),
// the FFN (H x 4H + 4H, 4H x H + H) and two LayerNorms (2 x 2H): 12 H^2 + 13 H. The one-element
// 1/sqrt(64) constant of each layer comes on top.
int64_t bert_layer_params(int64_t h) {
  return 12 * h * h + 13 * h;
}

TEST(FrameworkBert, BaseLayerHasBertBaseParameters) {
  EXPECT_EQ(bert_layer_params(768), 7'087'872);
  for (int64_t layers : {1, 2, 12}) {
    ir::Graph g = build_zoo_model("bert", {.layers = layers, .seq_len = 16});
    EXPECT_EQ(g.num_parameter_elements(), layers * (7'087'872 + 1)) << layers << " layers";
  }
  ir::Graph small = build_zoo_model("bert", {.layers = 3, .seq_len = 8, .hidden = 256});
  EXPECT_EQ(small.num_parameter_elements(), 3 * (bert_layer_params(256) + 1));
}

TEST(FrameworkBert, Shapes) {
  ir::Graph g = build_zoo_model("bert", {.batch = 2, .layers = 2, .seq_len = 32});
  ASSERT_EQ(g.inputs().size(), 1u);
  EXPECT_EQ(g.value(g.inputs()[0]).name, "input");
  EXPECT_EQ(g.value(g.inputs()[0]).type, (ir::TensorType{ir::DType::kFloat32, {2, 32, 768}}));
  EXPECT_EQ(output_type(g).shape, (ir::Shape{2, 32, 768}));
  EXPECT_EQ(g.node(g.value(g.outputs()[0]).producer).kind, ir::OpKind::LayerNormalization);
  // Attention scores are [B, heads, S, S] with heads = hidden / 64.
  const ir::Value& probs =
      g.value(g.node(g.find_node("encoder.layer.0.attention.self/softmax").value()).outputs[0]);
  EXPECT_EQ(probs.type.shape, (ir::Shape{2, 12, 32, 32}));
  ir::Graph wide = build_zoo_model("bert", {.layers = 1, .seq_len = 8, .hidden = 1024});
  const ir::Value& wide_probs = wide.value(
      wide.node(wide.find_node("encoder.layer.0.attention.self/softmax").value()).outputs[0]);
  EXPECT_EQ(wide_probs.type.shape, (ir::Shape{1, 16, 8, 8}));
}

TEST(FrameworkBert, UnitsPerLayer) {
  for (int64_t layers : {1, 4, 12}) {
    ir::UnitGraph units = fused(build_zoo_model("bert", {.layers = layers, .seq_len = 16}));
    // 13 units and 17 edge references a layer; the first layer's 4 reads of the graph input
    // (Q, K, V, residual) are no edges.
    EXPECT_EQ(units.num_units(), static_cast<size_t>(13 * layers));
    EXPECT_EQ(units.num_edge_references(), static_cast<size_t>(17 * layers - 4));
    EXPECT_EQ(units.num_distinct_edges(), static_cast<size_t>(17 * layers - 4));
    SignatureCounts expected = {{"MatMul-Add-Reshape-Transpose", 3 * layers},
                                {"MatMul-Mul", layers},
                                {"Softmax", layers},
                                {"MatMul-Transpose-Reshape", layers},
                                {"MatMul-Add", 2 * layers},
                                {"MatMul-Add-Gelu", layers},
                                {"Add", 2 * layers},
                                {"LayerNormalization", 2 * layers}};
    EXPECT_EQ(unit_signatures(units), expected);
  }
}

TEST(FrameworkBert, FlopsNearPublished) {
  // BERT-base at sequence length 128: ~11.2 GMACs for the encoder (2 x 128 x 768^2 x 12 per
  // layer for the dense layers, 2 x 128^2 x 768 for attention), i.e. ~22.4 GFLOPs.
  const double gflops = total_gflops(fused(build_zoo_model("bert", {})));
  EXPECT_GT(gflops, 21.0);
  EXPECT_LT(gflops, 24.0);
}

TEST(FrameworkBert, WeightsAndScale) {
  ir::Graph g = build_zoo_model("bert", {.layers = 1, .seq_len = 8});
  ir::Weights w = ir::Weights::generate(g, 3);
  EXPECT_NO_THROW(w.check_complete(g));
  auto scale = w.data(g.find_value("encoder.layer.0.attention.self.scale").value());
  ASSERT_EQ(scale.size(), 1u);
  EXPECT_FLOAT_EQ(scale[0], 0.125f);
  auto gamma = w.data(g.find_value("encoder.layer.0.output.LayerNorm.weight").value());
  ASSERT_EQ(gamma.size(), 768u);
  EXPECT_FLOAT_EQ(gamma[0], 1.0f);
  EXPECT_FLOAT_EQ(gamma[767], 1.0f);
}

TEST(FrameworkBert, RejectsBadOptions) {
  // Heads are 64 wide: any other hidden size would need a head count the model does not define.
  EXPECT_THROW(build_zoo_model("bert", {.hidden = 100}), Error);
  EXPECT_THROW(build_zoo_model("bert", {.hidden = 0}), Error);
  EXPECT_THROW(build_zoo_model("bert", {.layers = 0}), Error);
  EXPECT_THROW(build_zoo_model("bert", {.seq_len = 0}), Error);
}

}  // namespace
}  // namespace braid::models
