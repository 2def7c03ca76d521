// ONNX import/export: round trips of hand-built graphs covering every op kind and of every zoo
// model (checked by onnx.checker and ONNX Runtime through scripts/onnx_check.py), plus the
// rejections a user meets with a bad file, each asserting the code and that the message names
// the culprit.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include "base/error.h"
#include "ir/unit_graph.h"
#include "models/onnx_export.h"
#include "models/onnx_import.h"
#include "models/onnx_test_util.h"
#include "models/zoo.h"
#include "test_env.h"

namespace braid::models {
namespace {

using namespace ir;
namespace fs = std::filesystem;

// ---------------------------------------------------------------------------------------------
// Hand-built graphs that together use every OpKind and every attribute field.

// A CNN: Pad, Conv (bias, groups, stride, dilation, each fused activation but Gelu), BN, pools,
// elementwise ops, Concat, head; plus an IOS-style Relu-Conv unit hint.
Graph cnn_graph() {
  GraphBuilder b("cnn");
  const DType f = DType::kFloat32;
  ValueId x = b.add_input("x", {f, {2, 4, 12, 12}});
  ValueId pad = b.add_op(OpKind::Pad, PadAttrs{{0, 0, 1, 1, 0, 0, 1, 1}, 0.5f}, {x}, "pad");
  ValueId w1 = b.add_parameter("c1.w", {f, {8, 4, 3, 3}}, ParamInit::normal(0.2f));
  ValueId b1 = b.add_parameter("c1.b", {f, {8}}, ParamInit::uniform(-1, 1));
  ValueId c1 = b.add_op(OpKind::Conv, ConvAttrs{.kernel = {3, 3}, .activation = Activation::kRelu},
                        {pad, w1, b1}, "c1");
  NodeId relu = b.add_node(OpKind::Relu, {}, {c1}, "relu");
  ValueId w2 = b.add_parameter("c2.w", {f, {8, 2, 3, 3}}, ParamInit::normal(0.2f));
  ValueId c2 = b.add_op(OpKind::Conv,
                        ConvAttrs{.kernel = {3, 3},
                                  .dilation = {2, 2},
                                  .pads = {2, 2, 2, 2},
                                  .groups = 4,
                                  .activation = Activation::kSigmoid},
                        {c1, w2}, "c2");
  ValueId w3 = b.add_parameter("c3.w", {f, {8, 8, 1, 1}}, ParamInit::normal(0.2f));
  NodeId c3 = b.add_node(
      OpKind::Conv, ConvAttrs{.kernel = {1, 1}, .stride = {2, 2}, .activation = Activation::kTanh},
      {b.output(relu), w3}, "c3");
  std::vector<ValueId> bn_in{c2};
  for (const char* p : {"bn.scale", "bn.bias", "bn.mean"})
    bn_in.push_back(b.add_parameter(p, {f, {8}}, ParamInit::normal(1.0f)));
  bn_in.push_back(b.add_parameter("bn.var", {f, {8}}, ParamInit::uniform(0.5f, 1.5f)));
  ValueId bn = b.add_op(OpKind::BatchNormalization, BatchNormAttrs{1e-3f}, bn_in, "bn");
  ValueId mp =
      b.add_op(OpKind::MaxPool, PoolAttrs{.kernel = {3, 3}, .stride = {2, 2}, .ceil_mode = true},
               {bn}, "maxpool");
  ValueId ap =
      b.add_op(OpKind::AveragePool,
               PoolAttrs{.kernel = {3, 3}, .pads = {1, 1, 1, 1}, .count_include_pad = true},
               {b.output(c3)}, "avgpool");
  ValueId add = b.add_op(OpKind::Add, {}, {mp, ap}, "add");
  ValueId scale = b.add_parameter("scale", {f, {8, 1, 1}}, ParamInit::constant({0.5f}));
  ValueId mul = b.add_op(OpKind::Mul, {}, {add, scale}, "mul");
  ValueId sum = b.add_op(OpKind::Sum, {}, {mp, ap, mul}, "sum");
  ValueId th = b.add_op(OpKind::Tanh, {}, {sum}, "tanh");
  ValueId sg = b.add_op(OpKind::Sigmoid, {}, {th}, "sigmoid");
  ValueId cat = b.add_op(OpKind::Concat, AxisAttrs{1}, {sg, mp}, "concat");
  ValueId gap = b.add_op(OpKind::GlobalAveragePool, {}, {cat}, "gap");
  ValueId flat = b.add_op(OpKind::Flatten, AxisAttrs{1}, {gap}, "flatten");
  ValueId fc_w = b.add_parameter("fc.w", {f, {10, 16}}, ParamInit::normal(0.3f));
  ValueId fc_b = b.add_parameter("fc.b", {f, {10}}, ParamInit::normal(0.3f));
  ValueId fc = b.add_op(OpKind::Gemm, GemmAttrs{0.5f, 2.0f, false, true}, {flat, fc_w, fc_b}, "fc");
  ValueId sm = b.add_op(OpKind::Softmax, AxisAttrs{-1}, {fc}, "softmax");
  b.mark_output(b.add_op(OpKind::Identity, {}, {sm}, "identity"));
  b.mark_output(b.output(relu));
  b.add_unit_hint({relu, c3});
  return std::move(b).build();
}

// A transformer-like block: LayerNorm, MatMul, Reshape (0 and -1), Transpose (given and default
// perm), Split, Gelu (both forms), Gemm with transA, plus a Conv with a fused Gelu (opset 20).
Graph transformer_graph() {
  GraphBuilder b("transformer");
  const DType f = DType::kFloat32;
  ValueId x = b.add_input("tokens", {f, {2, 4, 8}});
  ValueId g = b.add_parameter("ln.g", {f, {8}}, ParamInit::normal(1.0f));
  ValueId be = b.add_parameter("ln.b", {f, {8}}, ParamInit::normal(0.1f));
  ValueId ln = b.add_op(OpKind::LayerNormalization, LayerNormAttrs{-1, 1e-6f}, {x, g, be}, "ln");
  ValueId w = b.add_parameter("proj.w", {f, {8, 16}}, ParamInit::normal(0.3f));
  ValueId mm = b.add_op(OpKind::MatMul, {}, {ln, w}, "proj");
  ValueId bias = b.add_parameter("proj.b", {f, {16}}, ParamInit::normal(0.1f));
  ValueId add = b.add_op(OpKind::Add, {}, {mm, bias}, "proj.add");
  ValueId r = b.add_op(OpKind::Reshape, ReshapeAttrs{{0, 4, 2, 8}}, {add}, "heads");
  ValueId t = b.add_op(OpKind::Transpose, TransposeAttrs{{0, 2, 1, 3}}, {r}, "to_heads");
  NodeId sp = b.add_node(OpKind::Split, SplitAttrs{3, {2, 6}}, {t}, "split", 2);
  ValueId g1 = b.add_op(OpKind::Gelu, GeluAttrs{true}, {b.output(sp, 0)}, "gelu_tanh");
  ValueId g2 = b.add_op(OpKind::Gelu, GeluAttrs{false}, {b.output(sp, 1)}, "gelu");
  ValueId cat = b.add_op(OpKind::Concat, AxisAttrs{-1}, {g1, g2}, "concat");
  ValueId rev = b.add_op(OpKind::Transpose, TransposeAttrs{}, {cat}, "reverse");
  ValueId flat = b.add_op(OpKind::Reshape, ReshapeAttrs{{-1, 16}}, {rev}, "flat");
  ValueId wt = b.add_parameter("head.w", {f, {8, 3}}, ParamInit::normal(0.3f));
  ValueId head = b.add_op(OpKind::Gemm, GemmAttrs{1.0f, 1.0f, true, false}, {flat, wt}, "head");
  b.mark_output(b.add_op(OpKind::Softmax, AxisAttrs{0}, {head}, "softmax"));

  ValueId img = b.add_input("image", {f, {1, 2, 5, 5}});
  ValueId pw = b.add_parameter("pointwise.w", {f, {2, 2, 1, 1}}, ParamInit::normal(0.3f));
  ValueId pb = b.add_parameter("pointwise.b", {f, {2}}, ParamInit::normal(0.3f));
  ValueId pointwise = b.add_op(OpKind::Conv, ConvAttrs{}, {img, pw, pb}, "pointwise");
  ValueId cw = b.add_parameter("conv.w", {f, {3, 2, 2, 2}}, ParamInit::normal(0.3f));
  b.mark_output(b.add_op(OpKind::Conv,
                         ConvAttrs{.kernel = {2, 2},
                                   .stride = {1, 2},
                                   .pads = {0, 1, 1, 0},
                                   .activation = Activation::kGelu},
                         {pointwise, cw}, "conv_gelu"));

  // The transformer ops on int64 and bool values (BERT's ids and masks).
  ValueId ids = b.add_input("ids", {DType::kInt64, {2, 3}});
  ValueId mask = b.add_input("mask", {DType::kBool, {2, 3, 1}});
  ValueId table = b.add_parameter("embedding", {f, {10, 8}}, ParamInit::normal(0.3f));
  ValueId emb = b.add_op(OpKind::Gather, GatherAttrs{}, {table, ids}, "embed");
  ValueId erf = b.add_op(OpKind::Erf, {}, {emb}, "erf");
  // Sqrt of a square, then a positive exponent and divisor: ONNX Runtime's run stays finite.
  ValueId sq =
      b.add_op(OpKind::Sqrt, {}, {b.add_op(OpKind::Mul, {}, {erf, erf}, "square")}, "sqrt");
  const ParamInit positive = ParamInit::uniform(0.5f, 1.5f);
  ValueId pow = b.add_op(OpKind::Pow, {}, {sq, b.add_parameter("pow.e", {f, {}}, positive)}, "pow");
  ValueId sub =
      b.add_op(OpKind::Sub, {}, {pow, b.add_parameter("sub.b", {f, {8}}, positive)}, "sub");
  ValueId div =
      b.add_op(OpKind::Div, {}, {sub, b.add_parameter("div.b", {f, {1}}, positive)}, "div");
  ValueId ex = b.add_op(OpKind::Expand, ExpandAttrs{{2, 1, 1}}, {div}, "expand");
  ValueId wh =
      b.add_op(OpKind::Where, {}, {mask, ex, b.add_parameter("fill", {f, {8}}, positive)}, "where");
  ValueId sl = b.add_op(OpKind::Slice, SliceAttrs{{0}, {2}, {1}, {1}}, {wh}, "slice");
  b.mark_output(b.add_op(OpKind::Gather, GatherAttrs{.axis = 1, .indices = {1}}, {sl}, "first"));
  ValueId eq = b.add_op(OpKind::Equal, {}, {ids, ids}, "same");
  b.mark_output(b.add_op(OpKind::Cast, CastAttrs{DType::kFloat32}, {eq}, "same.f"));
  ValueId differ = b.add_op(OpKind::Not, {}, {eq}, "differ");
  b.mark_output(b.add_op(OpKind::Cast, CastAttrs{DType::kFloat32}, {differ}, "differ.f"));
  return std::move(b).build();
}

// The CNN ops of MobileNetV2/V3, MNASNet and the ONNX zoo's AlexNet: Clip (both bounds, one,
// none), HardSigmoid, HardSwish, ReduceMean (keepdims or not), LRN. With `gelu` a Gelu joins,
// so the export is at opset 20 where ReduceMean's axes are an input, not an attribute.
Graph cnn_ops_graph(bool gelu) {
  GraphBuilder b(gelu ? "cnn_ops_opset20" : "cnn_ops");
  const DType f = DType::kFloat32;
  ValueId x = b.add_input("image", {f, {1, 8, 6, 6}});
  ValueId w = b.add_parameter("c.w", {f, {8, 8, 3, 3}}, ParamInit::normal(0.3f));
  ValueId c =
      b.add_op(OpKind::Conv, ConvAttrs{.kernel = {3, 3}, .pads = {1, 1, 1, 1}}, {x, w}, "c");
  ValueId relu6 = b.add_op(OpKind::Clip, ClipAttrs{0.0f, 6.0f}, {c}, "relu6");
  ValueId upper = b.add_op(OpKind::Clip, ClipAttrs{.max = 2.5f}, {relu6}, "upper");
  ValueId lower = b.add_op(OpKind::Clip, ClipAttrs{.min = -0.5f}, {upper}, "lower");
  ValueId none = b.add_op(OpKind::Clip, ClipAttrs{}, {lower}, "unbounded");
  ValueId hs = b.add_op(OpKind::HardSigmoid, HardSigmoidAttrs{0.25f, 0.375f}, {none}, "hsig");
  ValueId hw = b.add_op(OpKind::HardSwish, {}, {hs}, "hswish");
  ValueId lrn = b.add_op(OpKind::LRN, LrnAttrs{5, 2e-4f, 0.5f, 1.5f}, {hw}, "lrn");
  if (gelu) lrn = b.add_op(OpKind::Gelu, GeluAttrs{}, {lrn}, "gelu");
  b.mark_output(b.add_op(OpKind::ReduceMean, ReduceAttrs{{2, 3}, true}, {lrn}, "se_mean"));
  b.mark_output(b.add_op(OpKind::ReduceMean, ReduceAttrs{{1, 3}, false}, {lrn}, "mean"));
  // A decoder: a grouped, strided ConvTranspose with output_padding, a Resize back by sizes; a
  // nearest Resize by scales. (An output_shape past the natural size, which ONNX's reference
  // runs and ONNX Runtime refuses, is covered by the ONNX node test convtranspose_output_shape.)
  ValueId wt = b.add_parameter("ct.w", {f, {8, 2, 3, 3}}, ParamInit::normal(0.3f));
  ValueId bt = b.add_parameter("ct.b", {f, {8}}, ParamInit::uniform(-1, 1));
  ValueId ct = b.add_op(OpKind::ConvTranspose,
                        ConvTransposeAttrs{.kernel = {3, 3},
                                           .stride = {2, 2},
                                           .pads = {1, 1, 0, 0},
                                           .output_padding = {1, 1},
                                           .groups = 4},
                        {hw, wt, bt}, "ct");
  b.mark_output(b.add_op(
      OpKind::Resize,
      ResizeAttrs{
          .mode = ResizeMode::kCubic, .sizes = {1, 8, 6, 6}, .scales = {1, 1, 6.0 / 13, 6.0 / 13}},
      {ct}, "shrink"));
  b.mark_output(b.add_op(OpKind::Resize,
                         ResizeAttrs{.mode = ResizeMode::kNearest,
                                     .coordinates = ResizeCoordinates::kAsymmetric,
                                     .nearest = NearestRounding::kFloor,
                                     .sizes = {1, 8, 12, 9},
                                     .scales = {1, 1, 2, 1.5}},
                         {hw}, "grow"));
  return std::move(b).build();
}

// ---------------------------------------------------------------------------------------------
// Structural comparison.

std::vector<std::string> names_of(const Graph& g, std::span<const ValueId> ids) {
  std::vector<std::string> out;
  for (ValueId v : ids) out.push_back(g.value(v).name);
  return out;
}

std::set<std::vector<std::string>> hint_names(const Graph& g) {
  std::set<std::vector<std::string>> out;
  for (const auto& hint : g.unit_hints()) {
    std::vector<std::string> names;
    for (NodeId n : hint) names.push_back(g.node(n).name);
    std::sort(names.begin(), names.end());
    out.insert(names);
  }
  return out;
}

// Same ops (kind, attrs, names, edges by value name), same inputs/outputs/parameters with
// bit-identical data, same unit hints, same unit graph.
void expect_same_model(const Graph& a, const Weights& wa, const std::shared_ptr<const Graph>& pb,
                       const Weights& wb) {
  const Graph& b = *pb;
  ASSERT_EQ(a.num_nodes(), b.num_nodes());
  for (size_t i = 0; i < a.num_nodes(); ++i) {
    const Node& na = a.nodes()[i];
    const Node& nb = b.nodes()[i];
    SCOPED_TRACE("node " + na.name);
    EXPECT_EQ(na.name, nb.name);
    EXPECT_EQ(na.kind, nb.kind);
    EXPECT_TRUE(na.attrs == nb.attrs);
    EXPECT_EQ(names_of(a, na.inputs), names_of(b, nb.inputs));
    ASSERT_EQ(na.outputs.size(), nb.outputs.size());
    for (size_t k = 0; k < na.outputs.size(); ++k) {
      EXPECT_EQ(a.value(na.outputs[k]).name, b.value(nb.outputs[k]).name);
      EXPECT_EQ(a.value(na.outputs[k]).type, b.value(nb.outputs[k]).type);
    }
  }
  EXPECT_EQ(names_of(a, a.inputs()), names_of(b, b.inputs()));
  for (size_t k = 0; k < a.inputs().size() && k < b.inputs().size(); ++k)
    EXPECT_EQ(a.value(a.inputs()[k]).type, b.value(b.inputs()[k]).type);
  EXPECT_EQ(names_of(a, a.outputs()), names_of(b, b.outputs()));
  ASSERT_EQ(a.parameters().size(), b.parameters().size());
  for (ValueId p : a.parameters()) {
    const Value& va = a.value(p);
    SCOPED_TRACE("parameter " + va.name);
    std::optional<ValueId> q = b.find_value(va.name);
    ASSERT_TRUE(q.has_value());
    EXPECT_EQ(b.value(*q).kind, ValueKind::kParameter);
    EXPECT_EQ(va.type, b.value(*q).type);
    std::span<const float> da = wa.data(p), db = wb.data(*q);
    ASSERT_EQ(da.size(), db.size());
    EXPECT_EQ(std::memcmp(da.data(), db.data(), da.size_bytes()), 0) << "data differs";
  }
  EXPECT_EQ(hint_names(a), hint_names(b));
  UnitGraph ua = fuse(std::make_shared<const Graph>(a));
  UnitGraph ub = fuse(pb);
  EXPECT_EQ(ua.num_units(), ub.num_units());
  EXPECT_EQ(ua.num_edge_references(), ub.num_edge_references());
  EXPECT_EQ(ua.num_distinct_edges(), ub.num_distinct_edges());
  for (size_t u = 0; u < std::min(ua.num_units(), ub.num_units()); ++u)
    EXPECT_EQ(ua.signature(make_id<UnitId>(u)), ub.signature(make_id<UnitId>(u)));
}

void round_trip(const Graph& g) {
  Weights w = Weights::generate(g, 7);
  std::string bytes = export_onnx_bytes(g, w);
  ImportedModel m = import_onnx_bytes(bytes, g.name() + ".onnx");
  expect_same_model(g, w, m.graph, m.weights);
}

TEST(OnnxRoundTrip, HandBuiltGraphsCoverEveryOpKind) {
  std::set<OpKind> kinds;
  std::set<Activation> activations;
  for (const Graph& g : {cnn_graph(), transformer_graph(), cnn_ops_graph(false)})
    for (const Node& n : g.nodes()) {
      kinds.insert(n.kind);
      if (auto* c = std::get_if<ConvAttrs>(&n.attrs)) activations.insert(c->activation);
    }
  EXPECT_EQ(kinds.size(), static_cast<size_t>(kNumOpKinds));
  EXPECT_EQ(activations.size(), 5u);  // none, relu, sigmoid, tanh, gelu
}

TEST(OnnxRoundTrip, Cnn) {
  round_trip(cnn_graph());
}
TEST(OnnxRoundTrip, Transformer) {
  round_trip(transformer_graph());
}

TEST(OnnxRoundTrip, CnnOps) {
  round_trip(cnn_ops_graph(false));
  round_trip(cnn_ops_graph(true));
}

TEST(OnnxRoundTrip, OpsetFollowsGelu) {
  auto opset_of = [](const Graph& g) {
    onnx::ModelProto m;
    EXPECT_TRUE(m.ParseFromString(export_onnx_bytes(g, Weights::generate(g, 1))));
    return std::pair(m.ir_version(), m.opset_import(0).version());
  };
  using Versions = std::pair<int64_t, int64_t>;  // ir_version, opset
  EXPECT_EQ(opset_of(cnn_graph()), Versions(8, 17));
  EXPECT_EQ(opset_of(transformer_graph()), Versions(9, 20));
}

TEST(OnnxRoundTrip, ExportNeedsEveryWeight) {
  Graph g = cnn_graph();
  try {
    export_onnx_bytes(g, Weights(g.num_values()));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
    EXPECT_NE(std::string(e.what()).find("c1.w"), std::string::npos) << e.what();
  }
}

std::string run_onnx_check(const fs::path& file) {
  auto r = testing::run_command(testing::venv_python().string() + " " +
                                (testing::source_dir() / "scripts" / "onnx_check.py").string() +
                                " " + file.string());
  return r.exit_code == 0 ? "" : "exit " + std::to_string(r.exit_code) + ": " + r.out + r.err;
}

TEST(OnnxRoundTrip, HandBuiltGraphsPassOnnxCheckerAndRuntime) {
  if (testing::venv_python().empty()) GTEST_SKIP() << "no .venv/bin/python (make deps)";
  for (const Graph& g :
       {cnn_graph(), transformer_graph(), cnn_ops_graph(false), cnn_ops_graph(true)}) {
    fs::path file = testing::scratch_dir() / (g.name() + ".onnx");
    export_onnx_file(g, Weights::generate(g, 3), file.string());
    EXPECT_EQ(run_onnx_check(file), "") << g.name();
    fs::remove(file);
  }
}

// ---------------------------------------------------------------------------------------------
// Every zoo model: export, check with onnx + ONNX Runtime, re-import, compare.

class OnnxZoo : public ::testing::TestWithParam<std::string> {};

TEST_P(OnnxZoo, ExportCheckReimport) {
  const ZooEntry* entry = find_zoo_entry(GetParam());
  ASSERT_NE(entry, nullptr);
  using Builder = Graph (*)(const ZooOptions&);
  for (const ZooEntry& e : zoo()) {
    if (e.name == entry->name) break;
    const Builder* p = e.build.target<Builder>();
    const Builder* q = entry->build.target<Builder>();
    if (p && q && *p == *q) GTEST_SKIP() << "alias of " << e.name << ", tested there";
  }
  std::optional<Graph> built;
  try {
    built = entry->build(ZooOptions{.batch = 1});
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kUnsupported)
      GTEST_SKIP() << "builder not written yet: " << e.what();
    throw;
  }
  const Graph& g = *built;
  Weights w = Weights::generate(g, 42);
  fs::path file = testing::scratch_dir() / (GetParam() + ".onnx");
  export_onnx_file(g, w, file.string());
  if (testing::venv_python().empty()) {
    std::cout << "[ SKIPPED  ] onnx_check.py: no .venv/bin/python\n";
  } else {
    EXPECT_EQ(run_onnx_check(file), "");
  }
  ImportedModel m = import_onnx_file(file.string());
  fs::remove(file);
  expect_same_model(g, w, m.graph, m.weights);
}

std::vector<std::string> zoo_names() {
  std::vector<std::string> names;
  for (const ZooEntry& e : zoo()) names.emplace_back(e.name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(OnnxZoo, OnnxZoo, ::testing::ValuesIn(zoo_names()),
                         [](const auto& info) { return info.param; });

// ---------------------------------------------------------------------------------------------
// Hand-written ModelProtos for the importer's own cases and rejections.

// A Conv + Relu model, the base of most cases below.
ModelMaker conv_model(int64_t in_channels = 4) {
  ModelMaker mm;
  mm.input("x", {1, in_channels, 8, 8});
  mm.init("conv.w", {8, 4, 3, 3});
  auto* conv = mm.node("Conv", "conv", {"x", "conv.w"}, {"y"});
  ModelMaker::ints(conv, "kernel_shape", {3, 3});
  mm.node("Relu", "relu", {"y"}, {"z"});
  mm.output("z", {1, 8, 6, 6});
  return mm;
}

TEST(OnnxImport, NodesInAnyOrderAreSorted) {
  ModelMaker mm = conv_model();
  mm.g->mutable_node()->SwapElements(0, 1);
  ImportedModel m = mm.import();
  ASSERT_EQ(m.graph->num_nodes(), 2u);
  EXPECT_EQ(m.graph->nodes()[0].name, "conv");
  EXPECT_EQ(m.graph->nodes()[1].name, "relu");
  // A foreign Conv + Relu stays two ops: only braid's metadata re-fuses an activation.
  EXPECT_EQ(std::get<ConvAttrs>(m.graph->nodes()[0].attrs).activation, Activation::kNone);
  EXPECT_EQ(m.weights.data(*m.graph->find_value("conv.w"))[1], 0.51f);
}

TEST(OnnxImport, SymbolicBatchTakesTheOption) {
  ModelMaker mm;
  mm.input("x", {-1, 3, 4, 4});
  mm.node("Relu", "relu", {"x"}, {"y"});
  mm.output("y", {-1, 3, 4, 4});
  ImportedModel m = mm.import({.batch = 5});
  EXPECT_EQ(m.graph->value(m.graph->inputs()[0]).type.shape, (Shape{5, 3, 4, 4}));
  EXPECT_EQ(m.graph->value(m.graph->outputs()[0]).type.shape, (Shape{5, 3, 4, 4}));
}

TEST(OnnxImport, OtherDynamicDimsAreRejected) {
  ModelMaker mm;
  mm.input("ids", {1, -1});
  mm.node("Relu", "relu", {"ids"}, {"y"});
  mm.output("y", {1, -1});
  expect_error([&] { mm.import(); }, ErrorCode::kUnsupported,
               {"graph input 'ids'", "dim 1", "'N'"});
}

TEST(OnnxImport, ConstantsDropoutAndIdentityBecomeParametersOrAliases) {
  ModelMaker mm;
  mm.input("x", {2, 6});
  auto* c = mm.node("Constant", "shape_const", {}, {"shape"});
  ModelMaker::ints(c, "value_ints", {3, 4});
  auto* v = mm.node("Constant", "bias_const", {}, {"bias"});
  auto* a = v->add_attribute();
  a->set_name("value_floats");
  a->set_type(onnx::AttributeProto::FLOATS);
  for (float f : {1.f, 2.f, 3.f, 4.f}) a->add_floats(f);
  mm.node("Dropout", "drop", {"x"}, {"xd"});
  mm.node("Reshape", "reshape", {"xd", "shape"}, {"r"});
  mm.init("w", {4});
  mm.node("Identity", "w_alias", {"w"}, {"w2"});
  mm.node("Add", "add", {"r", "w2"}, {"s"});
  mm.node("Add", "add_bias", {"s", "bias"}, {"t"});
  mm.node("Identity", "copy", {"t"}, {"u"});
  mm.output("u", {3, 4});
  ImportedModel m = mm.import();
  const Graph& g = *m.graph;
  ASSERT_EQ(g.num_nodes(), 4u);  // reshape, add, add_bias, copy
  EXPECT_EQ(g.nodes()[0].kind, OpKind::Reshape);
  EXPECT_EQ(std::get<ReshapeAttrs>(g.nodes()[0].attrs).shape, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(g.value(g.nodes()[0].inputs[0]).name, "x");  // Dropout removed
  EXPECT_EQ(g.value(g.nodes()[1].inputs[1]).name, "w");  // Identity of an initializer
  EXPECT_EQ(g.value(g.nodes()[2].inputs[1]).name, "bias");
  EXPECT_EQ(g.nodes()[3].kind, OpKind::Identity);
  EXPECT_EQ(g.parameters().size(), 2u);
  EXPECT_EQ(m.weights.data(*g.find_value("bias"))[3], 4.0f);
}

TEST(OnnxImport, SplitAndPadAcrossOpsets) {
  for (int64_t opset : {11, 13, 18}) {
    SCOPED_TRACE("opset " + std::to_string(opset));
    ModelMaker mm(opset);
    mm.input("x", {1, 6, 3});
    auto* s = mm.node("Split", "split", {"x"}, {"a", "b", "c"});
    ModelMaker::integer(s, "axis", 1);
    auto* p = mm.node("Pad", "pad", {"a"}, {"pa"});
    if (opset >= 18) {  // Pad the last axis only, through the axes input
      mm.init64("pads", {1, 2});
      mm.init64("axes", {-1});
      p->add_input("pads");
      p->add_input("");
      p->add_input("axes");
    } else {
      mm.init64("pads", {0, 0, 1, 0, 0, 2});
      p->add_input("pads");
    }
    mm.output("pa", {1, 2, 6});
    mm.output("b", {1, 2, 3});
    mm.output("c", {1, 2, 3});
    ImportedModel m = mm.import();
    EXPECT_EQ(std::get<SplitAttrs>(m.graph->nodes()[0].attrs).sizes,
              (std::vector<int64_t>{2, 2, 2}));
    EXPECT_EQ(std::get<PadAttrs>(m.graph->nodes()[1].attrs).pads,
              (std::vector<int64_t>{0, 0, 1, 0, 0, 2}));
  }
}

TEST(OnnxImport, ClipBoundsAcrossOpsets) {
  {  // opset 6: attributes
    ModelMaker mm(6);
    mm.input("x", {1, 4});
    auto* c = mm.node("Clip", "relu6", {"x"}, {"y"});
    auto* a = c->add_attribute();
    a->set_name("max");
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(6.0f);
    mm.output("y", {1, 4});
    const ImportedModel m = mm.import();
    const auto& clip = std::get<ClipAttrs>(m.graph->nodes()[0].attrs);
    EXPECT_EQ(clip.min, ClipAttrs{}.min);  // no min: unbounded below
    EXPECT_EQ(clip.max, 6.0f);
  }
  {  // opset 13: constant inputs, min omitted
    ModelMaker mm(13);
    mm.input("x", {1, 4});
    mm.init("hi", {}, 6.0f);
    mm.node("Clip", "relu6", {"x", "", "hi"}, {"y"});
    mm.output("y", {1, 4});
    const ImportedModel m = mm.import();
    const auto& clip = std::get<ClipAttrs>(m.graph->nodes()[0].attrs);
    EXPECT_EQ(clip.max, 6.0f);
    EXPECT_EQ(m.graph->parameters().size(), 0u);  // the bound is an attribute, not a parameter
  }
  // A bound computed at run time cannot become an attribute.
  ModelMaker mm(13);
  mm.input("x", {1, 4});
  mm.input("lo", {});
  mm.node("Clip", "clip", {"x", "lo"}, {"y"});
  mm.output("y", {1, 4});
  expect_error([&] { mm.import(); }, ErrorCode::kUnsupported, {"node 'clip'", "min", "constant"});
}

TEST(OnnxImport, ReduceMeanAxesAcrossOpsets) {
  for (int64_t opset : {13, 18}) {
    SCOPED_TRACE("opset " + std::to_string(opset));
    ModelMaker mm(opset);
    mm.input("x", {2, 3, 4, 5});
    auto* r = mm.node("ReduceMean", "mean", {"x"}, {"y"});
    if (opset >= 18) {
      mm.init64("axes", {-1, 2});
      r->add_input("axes");
    } else {
      ModelMaker::ints(r, "axes", {-1, 2});
    }
    ModelMaker::integer(r, "keepdims", 0);
    mm.output("y", {2, 3});
    const ImportedModel m = mm.import();
    const auto& a = std::get<ReduceAttrs>(m.graph->nodes()[0].attrs);
    EXPECT_EQ(a.axes, (std::vector<int64_t>{2, 3}));  // normalized and sorted
    EXPECT_FALSE(a.keepdims);
  }
  {  // no axes: every axis
    ModelMaker mm(13);
    mm.input("x", {2, 3});
    mm.node("ReduceMean", "mean", {"x"}, {"y"});
    mm.output("y", {1, 1});
    EXPECT_EQ(std::get<ReduceAttrs>(mm.import().graph->nodes()[0].attrs).axes,
              (std::vector<int64_t>{0, 1}));
  }
  {  // opset 18's noop_with_empty_axes is an identity braid has no op for
    ModelMaker mm(18);
    mm.input("x", {2, 3});
    ModelMaker::integer(mm.node("ReduceMean", "mean", {"x"}, {"y"}), "noop_with_empty_axes", 1);
    mm.output("y", {2, 3});
    expect_error([&] { mm.import(); }, ErrorCode::kUnsupported,
                 {"node 'mean'", "noop_with_empty_axes"});
  }
  // The same axis twice (-1 is 1 here) is malformed.
  ModelMaker mm(13);
  mm.input("x", {2, 3});
  ModelMaker::ints(mm.node("ReduceMean", "mean", {"x"}, {"y"}), "axes", {1, -1});
  mm.output("y", {2, 1});
  expect_error([&] { mm.import(); }, ErrorCode::kInvalidModel, {"node 'mean'", "twice"});
}

TEST(OnnxImport, LrnNeedsItsSize) {
  ModelMaker mm(13);
  mm.input("x", {1, 4, 2, 2});
  auto* n = mm.node("LRN", "norm", {"x"}, {"y"});
  mm.output("y", {1, 4, 2, 2});
  expect_error([&] { mm.import(); }, ErrorCode::kInvalidModel, {"node 'norm'", "size"});
  ModelMaker::integer(n, "size", 3);
  EXPECT_EQ(std::get<LrnAttrs>(mm.import().graph->nodes()[0].attrs),
            (LrnAttrs{3, 1e-4f, 0.75f, 1.0f}));  // ONNX's defaults for the rest
}

TEST(OnnxImport, AutoPadSame) {
  ModelMaker mm = conv_model();
  ModelMaker::text(mm.g->mutable_node(0), "auto_pad", "SAME_LOWER");
  ModelMaker::ints(mm.g->mutable_node(0), "strides", {2, 2});
  mm.g->mutable_output(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(2)
      ->set_dim_value(4);
  mm.g->mutable_output(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(3)
      ->set_dim_value(4);
  ImportedModel m = mm.import();
  // in 8, stride 2 -> out 4; total pad (4-1)*2+3-8 = 1, put at the beginning for SAME_LOWER.
  EXPECT_EQ(std::get<ConvAttrs>(m.graph->nodes()[0].attrs).pads,
            (std::array<int64_t, 4>{1, 1, 0, 0}));
}

TEST(OnnxImport, OldSoftmaxCoercesTo2D) {
  ModelMaker mm(11);
  mm.input("x", {2, 3, 4});
  mm.node("Softmax", "sm", {"x"}, {"y"});  // opset 11 default axis 1: over the flattened [3, 4]
  mm.output("y", {2, 3, 4});
  ImportedModel m = mm.import();
  ASSERT_EQ(m.graph->num_nodes(), 3u);  // Reshape [2, 12], Softmax over dim 1, Reshape back
  const auto& nodes = m.graph->nodes();
  EXPECT_EQ(std::get<ReshapeAttrs>(nodes[0].attrs).shape, (std::vector<int64_t>{2, -1}));
  EXPECT_EQ(nodes[1].name, "sm");
  EXPECT_EQ(std::get<AxisAttrs>(nodes[1].attrs).axis, 1);
  EXPECT_EQ(m.graph->value(nodes[1].outputs[0]).type.shape, (Shape{2, 12}));
  EXPECT_EQ(m.graph->value(nodes[2].outputs[0]).name, "y");
  EXPECT_EQ(m.graph->value(nodes[2].outputs[0]).type.shape, (Shape{2, 3, 4}));
  ModelMaker::integer(mm.g->mutable_node(0), "axis", 2);  // the last axis: one plain Softmax
  m = mm.import();
  ASSERT_EQ(m.graph->num_nodes(), 1u);
  EXPECT_EQ(std::get<AxisAttrs>(m.graph->nodes()[0].attrs).axis, 2);
}

TEST(OnnxImport, CeilModePoolFollowsOnnxRuntimeNotOnnxShapeInference) {
  // in 5, kernel 2, stride 2, pads 1, ceil: ONNX's shape inference says 4, but the 4th window
  // would start in the end padding; ONNX Runtime and PyTorch drop it and give 3, as braid does.
  ModelMaker mm;
  mm.input("x", {1, 1, 5, 5});
  auto* p = mm.node("MaxPool", "pool", {"x"}, {"y"});
  ModelMaker::ints(p, "kernel_shape", {2, 2});
  ModelMaker::ints(p, "strides", {2, 2});
  ModelMaker::ints(p, "pads", {1, 1, 1, 1});
  ModelMaker::integer(p, "ceil_mode", 1);
  mm.node("Relu", "relu", {"y"}, {"z"});
  mm.g->add_output()->set_name("z");
  ImportedModel m = mm.import();
  EXPECT_EQ(m.graph->value(m.graph->outputs()[0]).type.shape, (Shape{1, 1, 3, 3}));
}

TEST(OnnxImport, BadMetadataIsIgnored) {
  ModelMaker mm = conv_model();
  mm.metadata("braid.unit_hints", R"([["conv", "no_such_node"]])");
  mm.metadata("braid.fused_activations", "[not json");
  ImportedModel m = mm.import();
  EXPECT_TRUE(m.graph->unit_hints().empty());
  EXPECT_EQ(m.graph->num_nodes(), 2u);
  ModelMaker good = conv_model();
  good.metadata("braid.unit_hints", R"([["conv", "relu"]])");
  good.metadata("braid.fused_activations", R"(["relu"])");
  m = good.import();
  ASSERT_EQ(m.graph->num_nodes(), 1u);  // relu fused back into conv
  EXPECT_EQ(std::get<ConvAttrs>(m.graph->nodes()[0].attrs).activation, Activation::kRelu);
  EXPECT_EQ(m.graph->value(m.graph->outputs()[0]).name, "z");
  EXPECT_TRUE(m.graph->unit_hints().empty());  // names 'relu', which is no op any more
}

// ---- rejections ----

TEST(OnnxImportErrors, Truncated) {
  Graph g = cnn_graph();
  std::string bytes = export_onnx_bytes(g, Weights::generate(g, 1));
  expect_error([&] { import_onnx_bytes(bytes.substr(0, bytes.size() / 2), "half.onnx"); },
               ErrorCode::kInvalidModel, {"half.onnx: not a valid ONNX model"});
}

TEST(OnnxImportErrors, NotOnnx) {
  std::mt19937 rng(1);
  std::string noise(1000, '\0');
  for (char& c : noise) c = static_cast<char>(rng());
  expect_error([&] { import_onnx_bytes(noise, "noise.bin"); }, ErrorCode::kInvalidModel,
               {"noise.bin: not a valid ONNX model"});
  fs::path text = testing::scratch_dir() / "notes.onnx";
  std::ofstream(text) << "this is not an ONNX model\n";
  expect_error([&] { import_onnx_file(text.string()); }, ErrorCode::kInvalidModel,
               {text.string() + ": not a valid ONNX model"});
  expect_error([&] { import_onnx_bytes("", "empty.onnx"); }, ErrorCode::kInvalidModel,
               {"empty.onnx: not a valid ONNX model"});
}

TEST(OnnxImportErrors, MissingFile) {
  expect_error([] { import_onnx_file("/nonexistent/model.onnx"); }, ErrorCode::kNotFound,
               {"/nonexistent/model.onnx"});
}

TEST(OnnxImportErrors, UnsupportedOp) {
  for (const char* op : {"LSTM", "Foo"}) {
    ModelMaker mm = conv_model();
    mm.node(op, "my_op", {"z"}, {"w"});
    mm.g->mutable_output(0)->set_name("w");
    expect_error([&] { mm.import(); }, ErrorCode::kUnsupported,
                 {"node 'my_op': unsupported op type '" + std::string(op) + "'"});
  }
  ModelMaker mm = conv_model();  // an attribute braid does not know could change the semantics
  ModelMaker::integer(mm.g->mutable_node(1), "fancy", 1);
  expect_error([&] { mm.import(); }, ErrorCode::kUnsupported, {"node 'relu'", "'fancy'"});
}

// The transformer ops' inputs that braid needs at import time, and values it cannot run.
TEST(OnnxImportErrors, TransformerOpRejections) {
  auto one_op = [](const std::string& op, std::vector<std::string> in) {
    ModelMaker mm;
    mm.input("x", {2, 3});
    mm.node(op, "op", std::move(in), {"y"});
    mm.output("y", {});
    return mm;
  };
  {  // Slice bounds from a graph input: braid plans shapes at import, it has no runtime shapes.
    ModelMaker mm = one_op("Slice", {"x", "s", "e"});
    for (const char* name : {"s", "e"}) {
      auto* vi = mm.g->add_input();
      vi->set_name(name);
      vi->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::INT64);
      vi->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(1);
    }
    expect_error([&] { mm.import(); }, ErrorCode::kUnsupported,
                 {"node 'op'", "starts input 's' must be a constant"});
  }
  {  // A float input to Gather's indices would be read as int64 bits.
    ModelMaker mm = one_op("Gather", {"x", "x"});
    expect_error([&] { mm.import(); }, ErrorCode::kInvalidModel, {"indices are float32"});
  }
  {  // A step of 0 would never advance.
    ModelMaker mm = one_op("Slice", {"x", "s", "e", "a", "st"});
    mm.init64("s", {0});
    mm.init64("e", {2});
    mm.init64("a", {1});
    mm.init64("st", {0});
    expect_error([&] { mm.import(); }, ErrorCode::kInvalidModel, {"step 0"});
  }
  {  // Cast to a type braid has no kernels for.
    ModelMaker mm = one_op("Cast", {"x"});
    ModelMaker::integer(mm.g->mutable_node(0), "to", onnx::TensorProto::DOUBLE);
    expect_error([&] { mm.import(); }, ErrorCode::kUnsupported, {"Cast to DOUBLE"});
  }
  {  // Squeezing a dim that is not 1 would change the element count.
    ModelMaker mm = one_op("Squeeze", {"x", "axes"});
    mm.init64("axes", {0});
    expect_error([&] { mm.import(); }, ErrorCode::kInvalidModel,
                 {"cannot squeeze dim 0 of size 2"});
  }
  {  // Where's condition must be bool: a float would be read byte by byte.
    ModelMaker mm = one_op("Where", {"x", "x", "x"});
    expect_error([&] { mm.import(); }, ErrorCode::kInvalidModel, {"condition is float32"});
  }
  {  // Not on a float: its bytes are not bools, and ONNX defines Not on bool only.
    ModelMaker mm = one_op("Not", {"x"});
    expect_error([&] { mm.import(); }, ErrorCode::kInvalidModel,
                 {"node 'op' (Not)", "input is float32, must be bool"});
  }
}

// PyTorch writes GELU's sqrt(2), 1 and 0.5 as Constant nodes as often as initializers; the
// pattern is planned before the walk reads those, so both forms must be recognized.
TEST(OnnxImport, ErfGeluWithConstantNodeScalarsBecomesOneGelu) {
  ModelMaker mm(13);
  mm.input("x", {2, 4});
  auto scalar = [&](const std::string& name, float v, bool as_tensor) {
    onnx::AttributeProto* a = mm.node("Constant", name, {}, {name})->add_attribute();
    if (as_tensor) {
      a->set_name("value");
      a->set_type(onnx::AttributeProto::TENSOR);
      a->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
      a->mutable_t()->add_float_data(v);
    } else {
      a->set_name("value_float");
      a->set_type(onnx::AttributeProto::FLOAT);
      a->set_f(v);
    }
  };
  scalar("sqrt2", 1.41421356f, true);
  scalar("one", 1.0f, false);
  scalar("half", 0.5f, true);
  mm.node("Div", "div", {"x", "sqrt2"}, {"d"});
  mm.node("Erf", "erf", {"d"}, {"e"});
  mm.node("Add", "add", {"e", "one"}, {"a"});
  mm.node("Mul", "mul", {"x", "a"}, {"m"});
  mm.node("Mul", "half_mul", {"m", "half"}, {"y"});
  mm.output("y", {2, 4});
  ImportedModel m = mm.import();
  ASSERT_EQ(m.graph->num_nodes(), 1u);
  const ir::Node& gelu = m.graph->nodes()[0];
  EXPECT_EQ(gelu.kind, OpKind::Gelu);
  EXPECT_FALSE(std::get<GeluAttrs>(gelu.attrs).tanh_approximation);
  // A different constant (not 1) is no GELU: the five nodes stay.
  mm.g->mutable_node(1)->mutable_attribute(0)->set_f(2.0f);
  EXPECT_EQ(mm.import().graph->num_nodes(), 5u);
}

TEST(OnnxImportErrors, Cycle) {
  ModelMaker mm;
  mm.input("x", {1, 4});
  mm.node("Add", "add1", {"x", "r"}, {"a"});
  mm.node("Relu", "relu1", {"a"}, {"r"});
  mm.node("Relu", "after", {"a"}, {"b"});  // downstream of the cycle, not on it
  mm.output("b", {1, 4});
  expect_error([&] { mm.import(); }, ErrorCode::kInvalidModel, {"cycle", "'add1'", "'relu1'"});
}

TEST(OnnxImportErrors, ShapeMismatch) {
  // Weights made for 4 input channels, input with 3: braid's own shape inference says so.
  expect_error([] { conv_model(3).import(); }, ErrorCode::kInvalidModel,
               {"node 'conv'", "input channels"});
  // A value_info that contradicts the shapes: the model is inconsistent.
  ModelMaker mm = conv_model();
  mm.value_info("y", {1, 8, 7, 7});
  expect_error([&] { mm.import(); }, ErrorCode::kInvalidModel,
               {"node 'conv'", "shape mismatch", "'y'", "[1,8,7,7]"});
  // So does a declared graph output shape.
  ModelMaker out = conv_model();
  out.g->mutable_output(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(1)
      ->set_dim_value(9);
  expect_error([&] { out.import(); }, ErrorCode::kInvalidModel, {"node 'relu'", "shape mismatch"});
}

TEST(OnnxImportErrors, MissingInitializer) {
  ModelMaker mm = conv_model();
  mm.g->clear_initializer();
  expect_error([&] { mm.import(); }, ErrorCode::kInvalidModel,
               {"node 'conv'", "'conv.w'", "not defined"});
}

TEST(OnnxImportErrors, NodeWithoutOutput) {  // found by the fuzzer
  ModelMaker mm = conv_model();
  mm.node("Relu", "dangling", {"z"}, {});
  expect_error([&] { mm.import(); }, ErrorCode::kInvalidModel, {"node 'dangling'", "output"});
}

TEST(OnnxImportErrors, ExternalData) {
  ModelMaker mm = conv_model();
  onnx::TensorProto* w = mm.g->mutable_initializer(0);
  w->clear_float_data();
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  expect_error([&] { mm.import(); }, ErrorCode::kUnsupported, {"initializer 'conv.w'", "external"});
}

TEST(OnnxImportErrors, BadFilesFromScript) {
  if (testing::venv_python().empty()) GTEST_SKIP() << "no .venv/bin/python (make deps)";
  fs::path dir = testing::scratch_dir() / "bad_onnx";
  auto r = testing::run_command(testing::venv_python().string() + " " +
                                (testing::source_dir() / "scripts" / "make_bad_onnx.py").string() +
                                " " + dir.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::tuple<std::string, ErrorCode, std::string>> cases = {
      {"truncated.onnx", ErrorCode::kInvalidModel, "not a valid ONNX model"},
      {"not_onnx.onnx", ErrorCode::kInvalidModel, "not a valid ONNX model"},
      {"unsupported_op.onnx", ErrorCode::kUnsupported, "node 'lstm': unsupported op type 'LSTM'"},
      {"cycle.onnx", ErrorCode::kInvalidModel, "cycle through node"},
      {"shape_mismatch.onnx", ErrorCode::kInvalidModel, "node 'conv' (Conv)"},
      {"missing_initializer.onnx", ErrorCode::kInvalidModel,
       "node 'conv': input 'conv.w' is not defined"},
  };
  for (const auto& [file, code, needle] : cases) {
    SCOPED_TRACE(file);
    const std::string path = (dir / file).string();
    expect_error([&] { import_onnx_file(path); }, code, {path + ": ", needle});
  }
}

}  // namespace
}  // namespace braid::models
