// The IOS benchmark models (peers.md §2): unit and edge counts as IOS's graphs have them, shapes,
// batch scaling, block sizes, names; the Watts–Strogatz generator and parser; the embedded
// RandWire graphs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "base/error.h"
#include "ir/analysis.h"
#include "ir/unit_graph.h"
#include "models/zoo.h"
#include "models/zoo/watts_strogatz.h"
#include "test_env.h"

namespace braid::models {
namespace {

ir::UnitGraph fused(std::string_view model, const ZooOptions& options = {}) {
  return ir::fuse(std::make_shared<const ir::Graph>(build_zoo_model(model, options)));
}

const ir::TensorType& output_type(const ir::Graph& g) {
  return g.value(g.outputs().front()).type;
}

// IOS's op class of a unit, from its op kinds with the input prologue (Sum ops) stripped:
// "conv", "relu_sep_conv", "relu_conv", "max_pool", "avg_pool", "global_avg_pool", "relu",
// "identity" (a Sum-only or Concat unit).
std::string ios_class(const ir::UnitGraph& units, UnitId u) {
  std::string sig = units.signature(u);
  while (sig.rfind("Sum-", 0) == 0) sig = sig.substr(4);
  static const std::map<std::string, std::string> kClasses = {
      {"Conv", "conv"},
      {"Relu-Conv-Conv", "relu_sep_conv"},
      {"Relu-Conv", "relu_conv"},
      {"MaxPool", "max_pool"},
      {"AveragePool", "avg_pool"},
      {"GlobalAveragePool", "global_avg_pool"},
      {"Relu", "relu"},
      {"Sum", "identity"},
      {"Concat", "identity"}};
  auto it = kClasses.find(sig);
  return it == kClasses.end() ? "other:" + units.signature(u) : it->second;
}

std::map<std::string, int> class_counts(const ir::UnitGraph& units) {
  std::map<std::string, int> counts;
  for (size_t i = 0; i < units.num_units(); ++i) ++counts[ios_class(units, make_id<UnitId>(i))];
  return counts;
}

std::vector<size_t> block_sizes(const ir::UnitGraph& units) {
  std::vector<size_t> sizes;
  for (const ir::Block& b : ir::block_partition(units)) sizes.push_back(b.units.size());
  return sizes;
}

double total_gflops(const ir::UnitGraph& units) {
  double flops = 0;
  for (const ir::Unit& u : units.units()) flops += static_cast<double>(u.flops);
  return flops / 1e9;
}

// ---------------------------------------------------------------------------------------------
// Counts, shapes, batch

struct IosModelCase {
  std::string_view name;
  size_t units;
  size_t edge_references;
  size_t distinct_edges;
  ir::Shape output;  // at batch 1
  int64_t image_size;
};

class IosZooModel : public ::testing::TestWithParam<IosModelCase> {};

// The counts of IOS's own graphs (peers.md §2.1): one unit per IOS op, one edge reference per
// value an op reads from another op (the placeholder excluded).
TEST_P(IosZooModel, UnitAndEdgeCountsMatchIos) {
  const IosModelCase& c = GetParam();
  ir::UnitGraph units = fused(c.name);
  EXPECT_EQ(units.num_units(), c.units);
  EXPECT_EQ(units.num_edge_references(), c.edge_references);
  EXPECT_EQ(units.num_distinct_edges(), c.distinct_edges);
}

TEST_P(IosZooModel, InputAndOutputShapes) {
  const IosModelCase& c = GetParam();
  ir::Graph g = build_zoo_model(c.name, {});
  ASSERT_EQ(g.inputs().size(), 1u);
  const ir::Value& in = g.value(g.inputs()[0]);
  EXPECT_EQ(in.name, "input");
  EXPECT_EQ(in.type, (ir::TensorType{ir::DType::kFloat32, {1, 3, c.image_size, c.image_size}}));
  ASSERT_EQ(g.outputs().size(), 1u);
  EXPECT_EQ(output_type(g).shape, c.output);
  EXPECT_EQ(g.node(g.value(g.outputs()[0]).producer).kind, ir::OpKind::GlobalAveragePool);
}

TEST_P(IosZooModel, BatchScalesInputAndOutputOnly) {
  const IosModelCase& c = GetParam();
  ir::Graph g1 = build_zoo_model(c.name, {.batch = 1});
  ir::Graph g2 = build_zoo_model(c.name, {.batch = 2});
  EXPECT_EQ(g2.value(g2.inputs()[0]).type.shape[0], 2);
  ir::Shape out = c.output;
  out[0] = 2;
  EXPECT_EQ(output_type(g2).shape, out);
  // Same structure and weights; only activations grow.
  EXPECT_EQ(g1.num_nodes(), g2.num_nodes());
  EXPECT_EQ(g1.num_parameter_elements(), g2.num_parameter_elements());
  ir::UnitGraph u2 = ir::fuse(std::make_shared<const ir::Graph>(std::move(g2)));
  EXPECT_EQ(u2.num_units(), c.units);
  EXPECT_EQ(u2.num_edge_references(), c.edge_references);
}

// Every conv has a bias and He-scaled weights; every parameter has a readable, unique name.
TEST_P(IosZooModel, ConvsHaveBiasAndHeInit) {
  ir::Graph g = build_zoo_model(GetParam().name, {});
  for (const ir::Node& n : g.nodes()) {
    if (n.kind != ir::OpKind::Conv) continue;
    ASSERT_EQ(n.inputs.size(), 3u) << n.name;
    const ir::Value& w = g.value(n.inputs[1]);
    const ir::Value& b = g.value(n.inputs[2]);
    EXPECT_EQ(w.name, n.name + ".weight");
    EXPECT_EQ(b.name, n.name + ".bias");
    const ir::Shape& ws = w.type.shape;
    const double fan_in = static_cast<double>(ws[1] * ws[2] * ws[3]);
    EXPECT_EQ(w.init.kind, ir::ParamInit::Kind::kNormal) << n.name;
    EXPECT_NEAR(w.init.a, std::sqrt(2.0 / fan_in), 1e-6) << n.name;
    EXPECT_EQ(b.init.kind, ir::ParamInit::Kind::kNormal) << n.name;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Ios, IosZooModel,
    ::testing::Values(IosModelCase{"squeezenet", 50, 65, 65, {1, 1000, 1, 1}, 224},
                      IosModelCase{"inception_v3", 119, 153, 153, {1, 2048, 1, 1}, 299},
                      IosModelCase{"randwire", 120, 260, 260, {1, 1280, 1, 1}, 224},
                      IosModelCase{"nasnet", 374, 576, 572, {1, 3360, 1, 1}, 331}),
    [](const ::testing::TestParamInfo<IosModelCase>& info) {
      return std::string(info.param.name);
    });

// ---------------------------------------------------------------------------------------------
// Op mix and blocks, per model (peers.md §2.1)

TEST(IosZoo, InceptionV3OpMixAndBlocks) {
  ir::UnitGraph units = fused("inception_v3");
  std::map<std::string, int> expected = {
      {"conv", 94}, {"max_pool", 4}, {"avg_pool", 9}, {"identity", 11}, {"global_avg_pool", 1}};
  EXPECT_EQ(class_counts(units), expected);
  // IOS's 13 blocks (stem, 3 A, B, 4 C, D, 2 E, logits) are exactly the cut-point blocks.
  EXPECT_EQ(block_sizes(units), (std::vector<size_t>{7, 9, 9, 9, 6, 12, 12, 12, 12, 8, 11, 11, 1}));
}

TEST(IosZoo, SqueezeNetOpMix) {
  ir::UnitGraph units = fused("squeezenet");
  std::map<std::string, int> expected = {
      {"conv", 30}, {"max_pool", 3}, {"identity", 16}, {"global_avg_pool", 1}};
  EXPECT_EQ(class_counts(units), expected);
  // The bypass keeps every unit of a fire module but its closing sum off the cut set, so the
  // cut-point blocks are IOS's 12: front, 8 fire modules, 2 maxpools, tail.
  EXPECT_EQ(block_sizes(units), (std::vector<size_t>{2, 6, 5, 6, 1, 5, 6, 5, 6, 1, 5, 2}));
}

TEST(IosZoo, RandWireOpMixAndBlocks) {
  ir::UnitGraph units = fused("randwire");
  std::map<std::string, int> expected = {
      {"conv", 2}, {"relu_sep_conv", 112}, {"identity", 4}, {"relu", 1}, {"global_avg_pool", 1}};
  EXPECT_EQ(class_counts(units), expected);
  // IOS: 1,17,33,33,33,3. Stage 1's graph has a single sink, which is then a cut point of its
  // own, so the cut-point partition closes stage 1 at that sink and the stage's output sum
  // becomes a one-unit chain block.
  EXPECT_EQ(block_sizes(units), (std::vector<size_t>{1, 16, 1, 33, 33, 33, 3}));
}

TEST(IosZoo, NasNetOpMix) {
  ir::UnitGraph units = fused("nasnet");
  std::map<std::string, int> expected = {
      {"conv", 1},      {"relu_conv", 47},     {"relu_sep_conv", 220},
      {"identity", 34}, {"max_pool", 8},       {"avg_pool", 62},
      {"relu", 1},      {"global_avg_pool", 1}};
  EXPECT_EQ(class_counts(units), expected);
}

// IOS's Node.flops() (ios/ir.py), recomputed on our graph: conv out*(1 + kh*kw*Cin/groups), pool
// in*kh*kw (global: in), relu 4*in, identity 0, each plus its input term sizes (every value of
// every term). An input prologue (Sum/Concat inside the reader's unit) is IOS's term list, so it
// is looked through. Every channel count and spatial size enters, so matching IOS's totals
// (peers.md §2.1, 3 significant digits) checks the whole network's dimensions.
double ios_gflops(const ir::UnitGraph& units) {
  const ir::Graph& g = *units.graph();
  auto per_image = [&](ValueId v) {
    const ir::Shape& s = g.value(v).type.shape;
    return static_cast<double>(s[1] * s[2] * s[3]);
  };
  auto is_prologue = [&](NodeId n) {
    const ir::Node& node = g.node(n);
    if (node.kind != ir::OpKind::Sum && node.kind != ir::OpKind::Concat) return false;
    const ir::Value& out = g.value(node.outputs[0]);
    return !g.is_output(node.outputs[0]) && out.consumers.size() == 1 &&
           units.unit_of(out.consumers[0]) == units.unit_of(n);
  };
  // IOS's input_flops(): the sizes of the values in the op's terms.
  std::function<double(NodeId)> input_size = [&](NodeId n) {
    double total = 0;
    for (ValueId v : g.node(n).inputs) {
      const ir::Value& value = g.value(v);
      if (value.kind == ir::ValueKind::kParameter) continue;
      if (value.kind == ir::ValueKind::kActivation && is_prologue(value.producer))
        total += input_size(value.producer);
      else
        total += per_image(v);
    }
    return total;
  };
  double flops = 0;
  for (size_t i = 0; i < g.num_nodes(); ++i) {
    const NodeId n = make_id<NodeId>(i);
    if (is_prologue(n)) continue;
    const ir::Node& node = g.node(n);
    const double in = input_size(n);
    const double src = node.kind == ir::OpKind::Sum || node.kind == ir::OpKind::Concat
                           ? 0
                           : per_image(node.inputs[0]);
    switch (node.kind) {
      case ir::OpKind::Conv: {
        const ir::Shape& w = g.value(node.inputs[1]).type.shape;
        flops += per_image(node.outputs[0]) * static_cast<double>(1 + w[1] * w[2] * w[3]) + in;
        break;
      }
      case ir::OpKind::MaxPool:
      case ir::OpKind::AveragePool: {
        const auto& a = std::get<ir::PoolAttrs>(node.attrs);
        flops += src * static_cast<double>(a.kernel[0] * a.kernel[1]) + in;
        break;
      }
      case ir::OpKind::GlobalAveragePool:
        flops += src + in;
        break;
      case ir::OpKind::Relu:
        flops += 4 * src + in;
        break;
      default:
        flops += in;
        break;  // identity: Sum or Concat
    }
  }
  return flops / 1e9;
}

TEST(IosZoo, FlopsMatchIos) {
  struct Case {
    std::string_view name;
    double gflops;     // IOS's figure, 3 significant digits
    double half_unit;  // half a unit of its last digit
  };
  for (const Case& c : {Case{"inception_v3", 5.79, 0.005}, Case{"squeezenet", 1.23, 0.005},
                        Case{"randwire", 8.07, 0.005}, Case{"nasnet", 23.1, 0.05}}) {
    ir::UnitGraph units = fused(c.name);
    EXPECT_NEAR(ios_gflops(units), c.gflops, c.half_unit) << c.name;
    // braid's own count is 2 flops per MAC plus bias and activation: about twice IOS's.
    EXPECT_NEAR(total_gflops(units) / ios_gflops(units), 2.0, 0.1) << c.name;
  }
}

// Units per module, modules being runs of units whose names share the part before the first
// '/' ("cell_7", "fire2", "stage1"; stem ops have no '/' and count alone). For NASNet these are
// IOS's 25 DP parts (get_parts, one per cell); for SqueezeNet and RandWire, IOS's blocks.
std::vector<std::pair<std::string, size_t>> module_sizes(const ir::UnitGraph& units) {
  std::vector<std::pair<std::string, size_t>> modules;
  for (const ir::Unit& u : units.units()) {
    std::string module = u.name.substr(0, u.name.find('/'));
    if (modules.empty() || modules.back().first != module) modules.push_back({module, 0});
    ++modules.back().second;
  }
  return modules;
}

std::vector<size_t> sizes_of(const std::vector<std::pair<std::string, size_t>>& modules) {
  std::vector<size_t> sizes;
  for (const auto& m : modules) sizes.push_back(m.second);
  return sizes;
}

TEST(IosZoo, NasNetCellsAreIosParts) {
  auto modules = module_sizes(fused("nasnet"));
  EXPECT_EQ(sizes_of(modules),
            (std::vector<size_t>{1,  18, 21, 18, 16, 16, 16, 16, 16, 19, 18, 16, 16,
                                 16, 16, 16, 19, 18, 16, 16, 16, 16, 16, 1,  1}));
  EXPECT_EQ(modules[9].first, "reduction_cell_0");
  EXPECT_EQ(modules[10].first, "cell_6");
}

TEST(IosZoo, SqueezeNetAndRandWireModulesAreIosBlocks) {
  // IOS blocks 2,6,5,6,1,5,6,5,6,1,5,2: conv1 + maxpool1, eight fire modules, two maxpools,
  // conv10 + avgpool.
  EXPECT_EQ(sizes_of(module_sizes(fused("squeezenet"))),
            (std::vector<size_t>{1, 1, 6, 5, 6, 1, 5, 6, 5, 6, 1, 5, 1, 1}));
  // IOS blocks 1,17,33,33,33,3.
  EXPECT_EQ(sizes_of(module_sizes(fused("randwire"))),
            (std::vector<size_t>{1, 17, 33, 33, 33, 1, 1, 1}));
}

// ---------------------------------------------------------------------------------------------
// Names and units

TEST(IosZoo, UnitsAreNamedAfterTheirFirstRealOp) {
  ir::UnitGraph inception = fused("inception_v3");
  auto u = inception.find_unit("mixed_5b/branch3x3dbl_2");
  ASSERT_TRUE(u.has_value());
  EXPECT_EQ(inception.signature(*u), "Conv");
  u = inception.find_unit("mixed_7c/concat");
  ASSERT_TRUE(u.has_value());
  EXPECT_EQ(inception.signature(*u), "Concat");
  EXPECT_EQ(inception.predecessors(*u).size(), 6u);

  ir::UnitGraph nasnet = fused("nasnet");
  u = nasnet.find_unit("cell_7/comb_iter_0_left/sep1");
  ASSERT_TRUE(u.has_value());
  EXPECT_EQ(nasnet.signature(*u), "Relu-Conv-Conv");
  // A normal cell's output: five summed terms folded into its Concat unit.
  u = nasnet.find_unit("cell_7/concat");
  ASSERT_TRUE(u.has_value());
  EXPECT_EQ(nasnet.signature(*u), "Sum-Sum-Sum-Sum-Sum-Concat");
  u = nasnet.find_unit("cell_7/conv_prev_1x1");
  ASSERT_TRUE(u.has_value());
  EXPECT_EQ(nasnet.signature(*u), "Relu-Conv");

  ir::UnitGraph squeezenet = fused("squeezenet");
  u = squeezenet.find_unit("fire2/add");
  ASSERT_TRUE(u.has_value());
  EXPECT_EQ(squeezenet.signature(*u), "Sum");
  EXPECT_EQ(squeezenet.predecessors(*u).size(), 2u);
}

TEST(IosZoo, RandWireNodesSumTheirPredecessorsInsideTheirUnit) {
  ir::UnitGraph units = fused("randwire");
  WsGraph stage1 = parse_ws_graph(randwire_large_graphs()[0].text);
  std::vector<int> in_degree(static_cast<size_t>(stage1.num_nodes), 0);
  for (auto [a, b] : stage1.edges) ++in_degree[static_cast<size_t>(b)];
  for (int64_t v = 0; v < stage1.num_nodes; ++v) {
    auto u = units.find_unit("stage1/node" + std::to_string(v));
    ASSERT_TRUE(u.has_value()) << v;
    const int d = in_degree[static_cast<size_t>(v)];
    EXPECT_EQ(units.signature(*u), d > 1 ? "Sum-Relu-Conv-Conv" : "Relu-Conv-Conv") << v;
    // A source reads the stage input (conv1), strided.
    EXPECT_EQ(units.predecessors(*u).size(), static_cast<size_t>(std::max(d, 1))) << v;
  }
  const ir::Graph& g = *units.graph();
  auto dw = g.find_node("stage1/node0/depthwise");  // node 0 is a source
  ASSERT_TRUE(dw.has_value());
  EXPECT_EQ(std::get<ir::ConvAttrs>(g.node(*dw).attrs).stride, (std::array<int64_t, 2>{2, 2}));
  EXPECT_EQ(std::get<ir::ConvAttrs>(g.node(*dw).attrs).groups, 77);
}

TEST(IosZoo, RandWireFromGeneratedGraphs) {
  ZooOptions options{.randwire_nodes = 32, .randwire_k = 4, .randwire_p = 0.75, .randwire_seed = 7};
  ir::UnitGraph a = fused("randwire", options);
  EXPECT_EQ(a.num_units(), 1u + 4 * (32 + 1) + 3);  // front, 4 x (nodes + output sum), tail
  EXPECT_EQ(output_type(*a.graph()).shape, (ir::Shape{1, 1280, 1, 1}));
  // Stage s uses the graph of seed 7 + s: its edges, one per source (reading the stage input)
  // and one per sink (into the output sum); then relu, conv2 and avgpool read one value each.
  size_t references = 3;
  for (uint64_t s = 0; s < 4; ++s) {
    WsGraph g = watts_strogatz(32, 4, 0.75, 7 + s);
    std::set<int64_t> has_in, has_out;
    for (auto [u, v] : g.edges) has_out.insert(u), has_in.insert(v);
    references += g.edges.size() + (32 - has_in.size()) + (32 - has_out.size());
  }
  EXPECT_EQ(a.num_edge_references(), references);

  ir::UnitGraph b = fused("randwire", options);
  ASSERT_EQ(a.num_distinct_edges(), b.num_distinct_edges());
  for (size_t i = 0; i < a.num_distinct_edges(); ++i) {
    EXPECT_EQ(a.edges()[i].from, b.edges()[i].from);
    EXPECT_EQ(a.edges()[i].to, b.edges()[i].to);
  }
  options.randwire_nodes = -1;
  EXPECT_THROW(build_zoo_model("randwire", options), Error);
  options.randwire_nodes = 8;
  options.randwire_k = 3;  // odd k: no ring lattice
  EXPECT_THROW(build_zoo_model("randwire", options), Error);
}

TEST(IosZoo, ImageSizeOptionAndBadSizes) {
  ir::Graph g = build_zoo_model("inception_v3", {.image_size = 331});
  EXPECT_EQ(g.value(g.inputs()[0]).type.shape, (ir::Shape{1, 3, 331, 331}));
  EXPECT_EQ(output_type(g).shape, (ir::Shape{1, 2048, 1, 1}));
  // Too small an image leaves a window larger than its input: the builder names the op.
  EXPECT_THROW(build_zoo_model("inception_v3", {.image_size = 32}), Error);
  EXPECT_THROW(build_zoo_model("squeezenet", {.image_size = -1}), Error);
}

// ---------------------------------------------------------------------------------------------
// Watts–Strogatz generator and IOS graph files

void expect_well_formed(const WsGraph& g) {
  for (size_t i = 0; i < g.edges.size(); ++i) {
    auto [u, v] = g.edges[i];
    EXPECT_LE(0, u);
    EXPECT_LT(u, v);
    EXPECT_LT(v, g.num_nodes);
    if (i > 0) {
      EXPECT_LT(g.edges[i - 1], g.edges[i]);  // sorted, hence no duplicates
    }
  }
}

TEST(WattsStrogatz, SameSeedSameGraph) {
  EXPECT_EQ(watts_strogatz(32, 4, 0.75, 3), watts_strogatz(32, 4, 0.75, 3));
  EXPECT_NE(watts_strogatz(32, 4, 0.75, 3), watts_strogatz(32, 4, 0.75, 4));
}

TEST(WattsStrogatz, EdgesGoLowToHighAndNumberNkOverTwo) {
  for (auto [n, k] : {std::pair{16, 4}, {32, 4}, {32, 8}, {100, 6}, {7, 6}, {320, 20}}) {
    for (double p : {0.0, 0.3, 0.75, 1.0}) {
      for (uint64_t seed : {0u, 1u, 42u}) {
        WsGraph g = watts_strogatz(n, k, p, seed);
        SCOPED_TRACE(::testing::Message() << "n=" << n << " k=" << k << " p=" << p);
        EXPECT_EQ(g.num_nodes, n);
        EXPECT_EQ(g.edges.size(), static_cast<size_t>(n * k / 2));
        expect_well_formed(g);
      }
    }
  }
}

TEST(WattsStrogatz, NoRewiringGivesTheRingLattice) {
  WsGraph g = watts_strogatz(8, 4, 0.0, 123);
  std::set<std::pair<int64_t, int64_t>> expected;
  for (int64_t i = 0; i < 8; ++i)
    for (int64_t j = 1; j <= 2; ++j) expected.insert(std::minmax(i, (i + j) % 8));
  EXPECT_EQ(std::set(g.edges.begin(), g.edges.end()), expected);
}

// Bad parameters would loop forever looking for free nodes or make a disconnected lattice.
TEST(WattsStrogatz, RejectsBadParameters) {
  EXPECT_THROW(watts_strogatz(32, 3, 0.5, 0), Error);   // odd k
  EXPECT_THROW(watts_strogatz(4, 4, 0.5, 0), Error);    // k >= n
  EXPECT_THROW(watts_strogatz(32, 0, 0.5, 0), Error);   // k = 0
  EXPECT_THROW(watts_strogatz(32, 4, 1.5, 0), Error);   // p > 1
  EXPECT_THROW(watts_strogatz(32, 4, -0.1, 0), Error);  // p < 0
}

TEST(WattsStrogatz, TextRoundTrip) {
  WsGraph g = watts_strogatz(32, 4, 0.75, 9);
  EXPECT_EQ(parse_ws_graph(to_ws_text(g)), g);
  EXPECT_EQ(parse_ws_graph("3 2\n0 1   1 2"), (WsGraph{3, {{0, 1}, {1, 2}}}));
  EXPECT_EQ(parse_ws_graph("1\n0\n"), (WsGraph{1, {}}));
}

// Each malformed file must fail loudly, naming the problem, rather than build a wrong stage.
TEST(WattsStrogatz, ParseErrorsAreBraidErrors) {
  auto expect_error = [](std::string_view text, std::string_view needle) {
    try {
      parse_ws_graph(text, "bad.txt");
      ADD_FAILURE() << "no error for: " << text;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
      EXPECT_NE(std::string(e.what()).find("bad.txt"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error("", "node count");
  expect_error("abc", "not an integer");
  expect_error("0\n0\n", ">= 1");
  expect_error("4\n-1\n", ">= 0");
  expect_error("4\n2\n0 1\n", "edge 2 of 2");      // too few edges
  expect_error("4\n1\n0 1\n2 3\n", "text after");  // too many
  expect_error("4\n1\n0 4\n", "outside");
  expect_error("4\n1\n2 1\n", "lower to the higher");
  expect_error("4\n1\n2 2\n", "lower to the higher");
  expect_error("4\n2\n0 1\n0 1\n", "twice");
  expect_error("4\n1\n0 1.5\n", "not an integer");
}

struct GraphFacts {
  int64_t nodes, edges, sources, sinks, longest_path, max_in_degree;
};

// n and m from shared/data/randwire/README.md; the rest from peers.md §2.4.
TEST(RandWireGraphs, EmbeddedFilesMatchTheReadme) {
  const std::vector<std::pair<std::string_view, GraphFacts>> expected = {
      {"ws-16-4-0.75-2.txt", {16, 32, 6, 1, 6, 6}},
      {"ws-32-4-0.75-3.txt", {32, 64, 4, 5, 12, 8}},
      {"ws-32-4-0.75-4.txt", {32, 64, 5, 2, 12, 5}},
      {"ws-32-4-0.75-5.txt", {32, 64, 6, 4, 8, 5}},
  };
  auto files = randwire_large_graphs();
  ASSERT_EQ(files.size(), expected.size());
  for (size_t i = 0; i < files.size(); ++i) {
    const auto& [name, facts] = expected[i];
    EXPECT_EQ(files[i].file_name, name);
    WsGraph g = parse_ws_graph(files[i].text, files[i].file_name);
    expect_well_formed(g);
    EXPECT_EQ(to_ws_text(g), files[i].text);  // already in canonical form
    const auto n = static_cast<size_t>(g.num_nodes);
    std::vector<int64_t> in(n, 0), out(n, 0), depth(n, 1);
    for (auto [u, v] : g.edges) {  // sorted by u, and u < v: a topological sweep
      ++in[v], ++out[u];
      depth[v] = std::max(depth[v], depth[u] + 1);
    }
    GraphFacts got{g.num_nodes, static_cast<int64_t>(g.edges.size()), 0, 0, 0, 0};
    for (size_t v = 0; v < n; ++v) {
      got.sources += in[v] == 0;
      got.sinks += out[v] == 0;
      got.longest_path = std::max(got.longest_path, depth[v]);
      got.max_in_degree = std::max(got.max_in_degree, in[v]);
    }
    SCOPED_TRACE(name);
    EXPECT_EQ(got.nodes, facts.nodes);
    EXPECT_EQ(got.edges, facts.edges);
    EXPECT_EQ(got.sources, facts.sources);
    EXPECT_EQ(got.sinks, facts.sinks);
    EXPECT_EQ(got.longest_path, facts.longest_path);
    EXPECT_EQ(got.max_in_degree, facts.max_in_degree);
  }
}

// The embedded text is the data file byte for byte (checked when shared/ sits beside the tree).
TEST(RandWireGraphs, EmbeddedFilesEqualSharedData) {
  const char* env = std::getenv("BRAID_SHARED_DIR");
  std::filesystem::path dir =
      env ? std::filesystem::path(env) : braid::testing::source_dir() / ".." / "shared";
  dir /= "data/randwire";
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << dir << " not found";
  for (const EmbeddedWsGraph& f : randwire_large_graphs()) {
    std::ifstream in(dir / f.file_name, std::ios::binary);
    ASSERT_TRUE(in) << f.file_name;
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_EQ(text.str(), f.text) << f.file_name;
  }
}

}  // namespace
}  // namespace braid::models
