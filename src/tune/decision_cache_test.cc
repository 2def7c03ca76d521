#include "tune/decision_cache.h"

#include <gtest/gtest.h>

#include <fstream>

#include "models/loader.h"
#include "test_env.h"

namespace braid::tune {
namespace {

std::filesystem::path fresh_dir(const std::string& name) {
  auto dir = testing::scratch_dir() / name;
  std::filesystem::remove_all(dir);
  return dir;
}

ir::UnitGraph squeezenet(int64_t batch) {
  models::LoadOptions load{.with_weights = false};
  load.zoo.batch = batch;
  load.zoo.image_size = 64;
  return models::load_model("squeezenet", load).units;
}

TEST(ModelFingerprint, SameModelSameFingerprintOtherShapesAnother) {
  EXPECT_EQ(model_fingerprint(squeezenet(1)), model_fingerprint(squeezenet(1)));
  EXPECT_NE(model_fingerprint(squeezenet(1)), model_fingerprint(squeezenet(2)));
  models::LoadOptions load{.with_weights = false};
  load.zoo.image_size = 64;
  EXPECT_NE(model_fingerprint(squeezenet(1)),
            model_fingerprint(models::load_model("googlenet", load).units));
}

TEST(DecisionCache, StoresFindsAndKeepsItOnDisk) {
  const auto dir = fresh_dir("store");
  DecisionKey key{.model = "m", .fingerprint = "f", .device = "d", .braid_version = "v"};
  DecisionKey renamed = key;
  renamed.model = "another name";
  EXPECT_EQ(digest(key), digest(renamed)) << "the name is for people";
  {
    DecisionCache cache(dir);
    EXPECT_FALSE(cache.find(key));
    cache.insert(key, {{"winner", "lios"}, {"schedule", nlohmann::json::object()}});
    EXPECT_EQ((*cache.find(key))["winner"], "lios");
  }
  DecisionCache reread(dir);
  ASSERT_TRUE(reread.find(renamed));
  EXPECT_EQ((*reread.find(key))["key"]["model"], "m");
  EXPECT_TRUE(reread.warnings().empty());
  DecisionKey other = key;
  other.settings = "streams 2";
  EXPECT_FALSE(reread.find(other));
}

TEST(DecisionCache, MalformedEntriesAndFilesAreIgnoredWithAWarning) {
  const auto dir = fresh_dir("malformed");
  std::filesystem::create_directories(dir);
  DecisionKey key{.fingerprint = "f"};
  const auto path = DecisionCache(dir).path();
  std::ofstream(path) << nlohmann::json{
      {"format", kDecisionCacheFormat},
      {"decisions",
       {{digest(key), {{"winner", 3}}}, {"other", {{"winner", "x"}, {"schedule", {}}}}}}};
  DecisionCache cache(dir);
  EXPECT_FALSE(cache.find(key));
  ASSERT_EQ(cache.warnings().size(), 1u);
  EXPECT_NE(cache.warnings()[0].find("malformed"), std::string::npos) << cache.warnings()[0];

  std::ofstream(path) << "\x01garbage";
  DecisionCache garbage(dir);
  EXPECT_FALSE(garbage.find(key));
  ASSERT_EQ(garbage.warnings().size(), 1u);
  EXPECT_NE(garbage.warnings()[0].find("not valid JSON"), std::string::npos);
  garbage.insert(key, {{"winner", "greedy"}, {"schedule", nlohmann::json::object()}});
  EXPECT_TRUE(DecisionCache(dir).find(key)) << "a corrupt file is replaced on the next insert";
}

}  // namespace
}  // namespace braid::tune
