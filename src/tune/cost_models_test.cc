// The cost-model factory: every name builds its model; unknown names and impossible pairings
// (a measured cost for a weighted DAG) are refused with the known names.
#include "tune/cost_models.h"

#include <gtest/gtest.h>

#include <string>

#include "base/error.h"
#include "models/loader.h"

namespace braid::tune {
namespace {

CostSpec named(const char* name) {
  return {.model = parse_cost_name(name)};
}

TEST(CostModels, EveryNameBuildsItsModel) {
  models::LoadOptions load;
  load.zoo.image_size = 64;
  const models::LoadedModel m = models::load_model("squeezenet", load);
  auto weights = std::make_shared<const ir::Weights>(m.weights);
  for (const char* name : {"roofline", "sim:v100"}) {  // hios: weighted DAGs only
    auto cost = make_cost_model(named(name), m.units, weights);
    ASSERT_NE(cost, nullptr) << name;
    EXPECT_GT(cost->unit_latency(UnitId(0)).count(), 0) << name;
  }
  EXPECT_EQ(cost_model_names().front(), "dag");
  EXPECT_TRUE(cost_needs_weights(named("cpu"), "squeezenet"));
  EXPECT_TRUE(cost_needs_weights(named("cuda:0"), "squeezenet"));
  EXPECT_FALSE(cost_needs_weights(named("sim:v100"), "squeezenet"));
  EXPECT_FALSE(cost_needs_weights({}, "g.dag.json"));
}

TEST(CostModels, UnknownNamesListTheKnownOnes) {
  for (const char* name : {"gpu", "cuda:x"}) {
    try {
      parse_cost_name(name);
      FAIL() << name << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
      if (std::string(name) == "gpu") {
        EXPECT_NE(std::string(e.what()).find("known: dag, roofline, hios, cpu, cuda:N, sim:NAME"),
                  std::string::npos)
            << e.what();
      }
    }
  }
}

// A name is parsed once into its kind and device, and reads back as written.
TEST(CostModels, NamesParseIntoTheirKindAndReadBack) {
  using Kind = CostName::Kind;
  const std::pair<const char*, Kind> cases[] = {
      {"dag", Kind::kDag},      {"roofline", Kind::kRoofline},
      {"hios", Kind::kHios},    {"hios:start=code", Kind::kHios},
      {"cpu", Kind::kCpu},      {"cuda:3", Kind::kCuda},
      {"sim:a40x2", Kind::kSim}};
  for (const auto& [text, kind] : cases) {
    const CostName name = parse_cost_name(text);
    EXPECT_EQ(name.kind, kind) << text;
    EXPECT_EQ(to_string(name), text);
  }
  EXPECT_EQ(parse_cost_name("cuda:3").device, Device::cuda(3));
  EXPECT_EQ(parse_cost_name("sim:a40x2").device, Device::simulated("a40x2"));
  // An option left empty is the planner's default, as `--cost ""` always was.
  EXPECT_FALSE(parse_cost_option("").has_value());
  EXPECT_EQ(parse_cost_option("cuda:3"), parse_cost_name("cuda:3"));
  for (const char* bad : {"", "cpu:0", "rooflin", "sim:", "cuda:"}) {
    EXPECT_THROW(parse_cost_name(bad), Error) << bad;
  }
}

// --cost hios:start=paper|code: the start rule parsed into its enum; bad options are refused
// with the known ones.
TEST(CostModels, HiosStartRule) {
  const ir::UnitGraph g = ir::UnitGraph::from_dag("one", {{.name = "u", .latency = Millis(1.0)}},
                                                  std::vector<ir::UnitEdge>{});
  EXPECT_EQ(make_cost_model(named("hios"), g, nullptr)->start_rule(),
            cost::StartRule::kProducerFinish);
  EXPECT_EQ(make_cost_model(named("hios:start=paper"), g, nullptr)->start_rule(),
            cost::StartRule::kProducerFinish);
  EXPECT_EQ(make_cost_model(named("hios:start=code"), g, nullptr)->start_rule(),
            cost::StartRule::kProducerDevice);
  EXPECT_FALSE(cost_needs_weights(named("hios:start=code"), "g.dag.json"));
  for (auto [name, known] : {std::pair{"hios:start=sim", "known: paper, code"},
                             {"hios:begin=code", "known: start=paper, start=code"}}) {
    try {
      parse_cost_name(name);
      FAIL() << name << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
      EXPECT_NE(std::string(e.what()).find(known), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace braid::tune
