#include "cost/subgraph.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

#include "base/error.h"
#include "exec/cpu/cpu_executor.h"
#include "exec/ref/ref_executor.h"
#include "models/zoo.h"
#include "sched/lower.h"
#include "sched/registry.h"
#include "sched/validate.h"

namespace braid::cost {
namespace {

struct Model {
  std::shared_ptr<const ir::Graph> graph;
  std::shared_ptr<const ir::Weights> weights;
  ir::UnitGraph units;
};

Model make_model(const std::string& name, int64_t image_size) {
  Model m;
  m.graph =
      std::make_shared<const ir::Graph>(models::build_zoo_model(name, {.image_size = image_size}));
  m.weights = std::make_shared<const ir::Weights>(ir::Weights::generate(*m.graph, 7));
  m.units = ir::fuse(m.graph);
  return m;
}

using Tensors = std::map<std::string, std::vector<float>>;  // by value name

std::vector<float> noise(const ir::TensorType& type, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> x(type.elements());
  for (float& f : x) f = dist(rng);
  return x;
}

// Runs `s` on the CPU executor; inputs come from `given` by name. Returns the outputs by name.
Tensors run_cpu(const ExtractedStage& s, const sched::Schedule& schedule, const Tensors& given) {
  sched::validate_or_throw(s.units, schedule);
  sched::ExecutionPlan plan = sched::lower(s.units, schedule);
  auto model = exec::make_cpu_executor()->prepare({s.graph, s.weights, &s.units, &plan});
  auto request = model->new_request();
  for (size_t i = 0; i < s.graph->inputs().size(); ++i)
    model->set_input(*request, i, given.at(s.graph->value(s.graph->inputs()[i]).name));
  model->run(*request);
  Tensors out;
  for (size_t i = 0; i < s.graph->outputs().size(); ++i) {
    auto o = model->output(*request, i);
    out[s.graph->value(s.graph->outputs()[i]).name].assign(o.begin(), o.end());
  }
  return out;
}

Tensors run_reference(const ExtractedStage& s, const Tensors& given) {
  std::vector<std::vector<float>> inputs;
  for (ValueId v : s.graph->inputs()) inputs.push_back(given.at(s.graph->value(v).name));
  auto outs = exec::ref::run_reference(*s.graph, *s.weights, inputs);
  Tensors out;
  for (size_t i = 0; i < outs.size(); ++i)
    out[s.graph->value(s.graph->outputs()[i]).name] = outs[i];
  return out;
}

void expect_close(const std::vector<float>& a, const std::vector<float>& b, double rtol,
                  const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  double scale = 0, err = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    scale = std::max(scale, std::abs(double(b[i])));
    err = std::max(err, std::abs(double(a[i]) - double(b[i])));
  }
  EXPECT_LE(err, rtol * std::max(scale, 1e-30))
      << what << ": max error " << err << ", scale " << scale;
}

std::vector<std::string> op_names(const ir::Graph& g, const ir::Unit& u) {
  std::vector<std::string> names;
  for (NodeId n : u.ops) names.push_back(g.node(n).name);
  return names;
}

// The fusion of the extracted graph gives back each stage unit, op for op.
void expect_same_units(const Model& m, const ExtractedStage& s, std::span<const UnitId> stage) {
  ASSERT_EQ(s.units.num_units(), stage.size());
  for (size_t i = 0; i < stage.size(); ++i) {
    EXPECT_EQ(op_names(*s.graph, s.units.unit(s.unit_of[i])),
              op_names(*m.graph, m.units.unit(stage[i])));
    EXPECT_EQ(s.units.signature(s.unit_of[i]), m.units.signature(stage[i]));
    EXPECT_EQ(s.units.unit(s.unit_of[i]).flops, m.units.unit(stage[i]).flops);
  }
}

std::vector<UnitId> all_units(const ir::UnitGraph& units) {
  std::vector<UnitId> all;
  for (size_t i = 0; i < units.num_units(); ++i) all.push_back(make_id<UnitId>(i));
  return all;
}

// Extracting every unit gives the model back: same ops, inputs, outputs and results.
TEST(Extract, WholeModelIsTheModel) {
  for (const char* name : {"squeezenet", "nasnet"}) {
    SCOPED_TRACE(name);
    Model m = make_model(name, name == std::string("nasnet") ? 96 : 64);
    std::vector<UnitId> all = all_units(m.units);
    ExtractedStage s = extract(*m.graph, m.units, all, m.weights.get());
    ASSERT_EQ(s.graph->num_nodes(), m.graph->num_nodes());
    for (size_t i = 0; i < m.graph->num_nodes(); ++i)
      EXPECT_EQ(s.graph->nodes()[i].name, m.graph->nodes()[i].name);
    EXPECT_EQ(s.inputs, std::vector<ValueId>(m.graph->inputs().begin(), m.graph->inputs().end()));
    std::vector<ValueId> outputs(m.graph->outputs().begin(), m.graph->outputs().end());
    std::sort(outputs.begin(), outputs.end());
    EXPECT_EQ(s.outputs, outputs);
    EXPECT_EQ(s.graph->unit_hints().size(), m.units.num_units());
    expect_same_units(m, s, all);
    EXPECT_EQ(s.units.num_distinct_edges(), m.units.num_distinct_edges());

    Tensors given;
    for (ValueId v : m.graph->inputs())
      given[m.graph->value(v).name] = noise(m.graph->value(v).type, 3);
    auto schedule = sched::make_scheduler("sequential")->schedule(s.units);
    Tensors got = run_cpu(s, schedule, given);
    ExtractedStage whole{m.graph, m.weights, ir::fuse(m.graph), {}, {}, {}};
    Tensors expected =
        run_cpu(whole, sched::make_scheduler("sequential")->schedule(whole.units), given);
    EXPECT_EQ(got, expected);
  }
}

std::vector<UnitId> units_named(const ir::UnitGraph& units, const std::string& prefix) {
  std::vector<UnitId> found;
  for (size_t i = 0; i < units.num_units(); ++i)
    if (units.unit(make_id<UnitId>(i)).name.rfind(prefix, 0) == 0)
      found.push_back(make_id<UnitId>(i));
  return found;
}

// Inception-C block mixed_6c, cut out and run as one concurrent stage (one branch per stream),
// computes what the full model computes for it: its input comes from the model's prefix, its
// output is compared with the reference executor running prefix and block together.
TEST(Extract, InceptionBlockComputesWhatTheModelComputes) {
  Model m = make_model("inception_v3", 107);
  std::vector<UnitId> block = units_named(m.units, "mixed_6c/");
  ASSERT_EQ(block.size(), 12u);
  std::vector<UnitId> prefix;
  for (size_t i = 0; i < index(block.front()); ++i) prefix.push_back(make_id<UnitId>(i));

  ExtractedStage stage = extract(*m.graph, m.units, block, m.weights.get());
  expect_same_units(m, stage, block);
  ASSERT_EQ(stage.inputs.size(), 1u);
  EXPECT_EQ(m.graph->value(stage.inputs[0]).name, "mixed_6b/concat");
  ASSERT_EQ(stage.outputs.size(), 1u);
  EXPECT_EQ(m.graph->value(stage.outputs[0]).name, "mixed_6c/concat");
  // Parameters keep their data.
  for (ValueId p : stage.graph->parameters()) {
    auto original = m.weights->data(*m.graph->find_value(stage.graph->value(p).name));
    auto copied = stage.weights->data(p);
    EXPECT_TRUE(std::equal(original.begin(), original.end(), copied.begin(), copied.end()));
  }

  Tensors given;
  for (ValueId v : m.graph->inputs())
    given[m.graph->value(v).name] = noise(m.graph->value(v).type, 5);
  ExtractedStage head = extract(*m.graph, m.units, prefix, m.weights.get());
  Tensors head_out =
      run_cpu(head, sched::make_scheduler("sequential")->schedule(head.units), given);
  ASSERT_TRUE(head_out.count("mixed_6b/concat"));

  // The block's branches as the groups of one stage: each group is a chain of the block.
  sched::Schedule concurrent;
  std::vector<std::vector<UnitId>> groups;
  for (const char* branch : {"mixed_6c/branch1x1", "mixed_6c/branch7x7_", "mixed_6c/branch7x7dbl_",
                             "mixed_6c/avgpool"}) {
    std::vector<UnitId> group;
    for (size_t i = 0; i < block.size(); ++i)
      if (m.units.unit(block[i]).name.rfind(branch, 0) == 0) group.push_back(stage.unit_of[i]);
    groups.push_back(group);
  }
  groups.back().push_back(*stage.units.find_unit("mixed_6c/branch_pool"));
  concurrent.stages.push_back({.groups = groups});
  concurrent.stages.push_back({.groups = {{*stage.units.find_unit("mixed_6c/concat")}}});
  Tensors got = run_cpu(stage, concurrent, head_out);

  std::vector<UnitId> both = prefix;
  both.insert(both.end(), block.begin(), block.end());
  Tensors expected = run_reference(extract(*m.graph, m.units, both, m.weights.get()), given);
  expect_close(got.at("mixed_6c/concat"), expected.at("mixed_6c/concat"), 1e-4, "mixed_6c/concat");
}

// Two chained units: the first one's output stays inside unless someone outside reads it.
TEST(Extract, TwoUnitChainAgainstReference) {
  Model m = make_model("squeezenet", 64);
  // A fire module: squeeze -> expand1x1; the squeeze output also feeds expand3x3 (outside).
  UnitId squeeze{}, expand{};
  bool found = false;
  for (const ir::UnitEdge& e : m.units.edges()) {
    if (m.units.successors(e.from).size() == 2 &&
        m.units.signature(e.to).find("Conv") != std::string::npos &&
        m.units.signature(e.from).find("Conv") != std::string::npos) {
      squeeze = e.from;
      expand = e.to;
      found = true;
      break;
    }
  }
  ASSERT_TRUE(found);
  std::vector<UnitId> pair = {squeeze, expand};
  ExtractedStage s = extract(*m.graph, m.units, pair, m.weights.get());
  expect_same_units(m, s, pair);
  EXPECT_EQ(s.inputs.size(), 1u);
  EXPECT_EQ(s.outputs.size(), 2u);  // the squeeze output (read by the other expand) and expand's

  Tensors given;
  for (ValueId v : s.graph->inputs())
    given[s.graph->value(v).name] = noise(s.graph->value(v).type, 9);
  Tensors got = run_cpu(s, sched::make_scheduler("sequential")->schedule(s.units), given);
  Tensors expected = run_reference(s, given);
  ASSERT_EQ(got.size(), expected.size());
  for (const auto& [name, values] : expected) expect_close(got.at(name), values, 1e-4, name);
}

// Bad stages must fail loudly: a silently dropped unit would be measured as free.
TEST(Extract, RejectsBadStages) {
  Model m = make_model("squeezenet", 64);
  std::vector<UnitId> none;
  EXPECT_THROW(extract(*m.graph, m.units, none), Error);
  std::vector<UnitId> twice = {UnitId{1}, UnitId{1}};
  EXPECT_THROW(extract(*m.graph, m.units, twice), Error);
  std::vector<UnitId> outside = {make_id<UnitId>(m.units.num_units())};
  EXPECT_THROW(extract(*m.graph, m.units, outside), Error);
  // Without weights the structure is still extracted.
  std::vector<UnitId> one = {UnitId{0}};
  EXPECT_EQ(extract(*m.graph, m.units, one).weights, nullptr);
}

}  // namespace
}  // namespace braid::cost
