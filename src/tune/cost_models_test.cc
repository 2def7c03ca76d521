// The cost-model factory: every name builds its model; unknown names and impossible pairings
// (a measured cost for a weighted DAG) are refused with the known names.
#include "tune/cost_models.h"

#include <gtest/gtest.h>

#include <string>

#include "base/error.h"
#include "models/loader.h"

namespace braid::tune {
namespace {

TEST(CostModels, EveryNameBuildsItsModel) {
  models::LoadOptions load;
  load.zoo.image_size = 64;
  const models::LoadedModel m = models::load_model("squeezenet", load);
  auto weights = std::make_shared<const ir::Weights>(m.weights);
  for (const char* name : {"roofline", "sim:v100"}) {  // hios: weighted DAGs only
    auto cost = make_cost_model({.name = name}, m.units, weights);
    ASSERT_NE(cost, nullptr) << name;
    EXPECT_GT(cost->unit_latency(UnitId(0)).count(), 0) << name;
  }
  EXPECT_EQ(cost_model_names().front(), "dag");
  EXPECT_TRUE(cost_needs_weights({.name = "cpu"}, "squeezenet"));
  EXPECT_TRUE(cost_needs_weights({.name = "cuda:0"}, "squeezenet"));
  EXPECT_FALSE(cost_needs_weights({.name = "sim:v100"}, "squeezenet"));
  EXPECT_FALSE(cost_needs_weights({}, "g.dag.json"));
}

TEST(CostModels, UnknownNamesListTheKnownOnes) {
  models::LoadOptions load;
  load.zoo.image_size = 64;
  const models::LoadedModel m = models::load_model("squeezenet", load);
  for (const char* name : {"gpu", "cuda:x"}) {
    try {
      make_cost_model({.name = name}, m.units, nullptr);
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

// --cost hios:start=paper|code: the start rule parsed into its enum; bad options are refused
// with the known ones.
TEST(CostModels, HiosStartRule) {
  const ir::UnitGraph g = ir::UnitGraph::from_dag("one", {{.name = "u", .latency = Millis(1.0)}},
                                                  std::vector<ir::UnitEdge>{});
  EXPECT_EQ(make_cost_model({.name = "hios"}, g, nullptr)->start_rule(),
            cost::StartRule::kProducerFinish);
  EXPECT_EQ(make_cost_model({.name = "hios:start=paper"}, g, nullptr)->start_rule(),
            cost::StartRule::kProducerFinish);
  EXPECT_EQ(make_cost_model({.name = "hios:start=code"}, g, nullptr)->start_rule(),
            cost::StartRule::kProducerDevice);
  EXPECT_FALSE(cost_needs_weights({.name = "hios:start=code"}, "g.dag.json"));
  for (auto [name, known] : {std::pair{"hios:start=sim", "known: paper, code"},
                             {"hios:begin=code", "known: start=paper, start=code"}}) {
    try {
      make_cost_model({.name = name}, g, nullptr);
      FAIL() << name << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
      EXPECT_NE(std::string(e.what()).find(known), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace braid::tune
