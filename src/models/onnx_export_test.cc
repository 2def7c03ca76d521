// ONNX export and re-import: round trips of hand-built graphs that together use every op kind
// and attribute field, and of every zoo model, each file checked by onnx.checker and ONNX Runtime
// (scripts/onnx_check.py).
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>
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

}  // namespace
}  // namespace braid::models
