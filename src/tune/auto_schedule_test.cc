#include "tune/auto_schedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>

#include "base/error.h"
#include "cost/dag_cost.h"
#include "cost/roofline.h"
#include "models/loader.h"
#include "models/random_dag.h"
#include "test_env.h"
#include "tune/decision_cache.h"

namespace braid::tune {
namespace {

// A weighted DAG wide enough for every scheduler to differ, and with one block larger than
// `optimal` accepts (OptimalOptions::kDefaultMaxBlockUnits).
ir::UnitGraph wide_dag(uint64_t seed = 3) {
  return models::random_dag({.ops = 24, .layers = 7, .edges = 40, .seed = seed});
}

std::filesystem::path fresh_dir(const std::string& name) {
  auto dir = testing::scratch_dir() / name;
  std::filesystem::remove_all(dir);
  return dir;
}

// Fake latencies by scheduler name, counting the calls.
struct FakeDevice {
  std::map<std::string, double> ms;
  int calls = 0;
  MeasureCandidates measure() {
    return [this](std::span<const sched::Schedule> schedules) {
      ++calls;
      std::vector<Measured> out;
      for (const sched::Schedule& s : schedules) {
        const double t = ms.at(s.algorithm);
        out.push_back({.median_ms = t, .p10_ms = t, .p90_ms = t});
      }
      return out;
    };
  }
};

AutoOptions options_for_tests() {
  return {.measure = {.device = Device::cpu()},
          .max_measured = 8,
          .device_description = "test device",
          .braid_version = "test version"};
}

// The algorithm names schedules carry (a registry name may set another, e.g. ios_dp).
std::map<std::string, std::string> schedule_names(const ir::UnitGraph& units,
                                                  const cost::CostModel& cost) {
  std::map<std::string, std::string> names;
  for (std::string_view c : auto_candidates()) {
    try {
      names[std::string(c)] = sched::make_scheduler(c)->schedule(units, cost).algorithm;
    } catch (const Error&) {
    }
  }
  return names;
}

// The winner is the measured argmin, but for a near tie (kIntraMargin, 5%) with the best
// intra-operator run, which then wins.
void expect_winner_is_measured_argmin(const AutoDecision& d) {
  const AutoCandidate *best = nullptr, *intra = nullptr;
  for (const AutoCandidate& c : d.candidates) {
    if (c.measured && (best == nullptr || c.measured->median_ms < best->measured->median_ms))
      best = &c;
    if (c.measured && c.intra_operator &&
        (intra == nullptr || c.measured->median_ms < intra->measured->median_ms))
      intra = &c;
  }
  ASSERT_NE(best, nullptr);
  ASSERT_NE(intra, nullptr);
  if (best->measured->median_ms > 0.95 * intra->measured->median_ms) best = intra;
  EXPECT_EQ(d.winner, best->algorithm);
  EXPECT_DOUBLE_EQ(d.winner_ms, best->measured->median_ms);
  EXPECT_TRUE(d.candidates.front().measured) << "sequential is always measured";
  EXPECT_DOUBLE_EQ(d.sequential_ms, d.candidates.front().measured->median_ms);
}

TEST(AutoSchedule, PicksTheMeasuredFastestNotThePredictedFastest) {
  const ir::UnitGraph units = wide_dag();
  cost::DagCostModel cost(units);
  const auto names = schedule_names(units, cost);
  FakeDevice device;
  for (const auto& [algo, schedule_name] : names) device.ms[schedule_name] = 10.0;
  // Which candidates are distinct and measured, and what they predict.
  const AutoDecision all_equal = auto_schedule(units, cost, options_for_tests(), device.measure());
  // The measured candidate predicted slowest becomes the fastest on the "device": a choice by
  // prediction would miss it.
  const AutoCandidate* slowest = nullptr;
  for (const AutoCandidate& c : all_equal.candidates)
    if (c.measured && c.algorithm != "sequential" &&
        (slowest == nullptr || *c.predicted_ms > *slowest->predicted_ms))
      slowest = &c;
  ASSERT_NE(slowest, nullptr);
  device.ms[names.at(slowest->algorithm)] = 1.0;
  const AutoDecision d = auto_schedule(units, cost, options_for_tests(), device.measure());
  expect_winner_is_measured_argmin(d);
  EXPECT_EQ(device.calls, 2);
  EXPECT_FALSE(d.cached);
  EXPECT_EQ(d.winner, slowest->algorithm);
  EXPECT_DOUBLE_EQ(d.winner_ms, 1.0);
  EXPECT_EQ(d.schedule.algorithm, names.at(d.winner));
  EXPECT_DOUBLE_EQ(d.speedup_over_sequential(), 10.0);
}

TEST(AutoSchedule, KeepsSequentialWhenEverythingElseIsSlower) {
  const ir::UnitGraph units = wide_dag();
  cost::DagCostModel cost(units);
  FakeDevice device;
  for (const auto& [algo, schedule_name] : schedule_names(units, cost))
    device.ms[schedule_name] = algo == "sequential" ? 5.0 : 6.0;
  const AutoDecision d = auto_schedule(units, cost, options_for_tests(), device.measure());
  EXPECT_EQ(d.winner, "sequential");
  EXPECT_DOUBLE_EQ(d.speedup_over_sequential(), 1.0);
}

TEST(AutoSchedule, ListsEveryCandidateAndWhyItWasNotMeasured) {
  const ir::UnitGraph units = wide_dag();
  cost::DagCostModel cost(units);
  FakeDevice device;
  for (const auto& [algo, schedule_name] : schedule_names(units, cost))
    device.ms[schedule_name] = 3.0;
  AutoOptions options = options_for_tests();
  options.max_measured = 2;
  const AutoDecision d = auto_schedule(units, cost, options, device.measure());
  // The dag cost model prices one thread per unit: no allotment candidates.
  ASSERT_EQ(d.candidates.size(), auto_candidate_labels(1, 1).size());
  size_t measured = 0;
  for (const AutoCandidate& c : d.candidates) {
    measured += c.measured.has_value();
    EXPECT_NE(c.measured.has_value(), !c.skipped.empty()) << c.algorithm << ": " << c.skipped;
  }
  EXPECT_EQ(measured, 2u);
  // The block is larger than optimal accepts: skipped with its error, not a failure.
  auto optimal = std::find_if(d.candidates.begin(), d.candidates.end(),
                              [](const AutoCandidate& c) { return c.algorithm == "optimal"; });
  ASSERT_NE(optimal, d.candidates.end());
  EXPECT_FALSE(optimal->predicted_ms);
  EXPECT_NE(optimal->skipped.find("block"), std::string::npos) << optimal->skipped;
  // The JSON the CLI prints carries the same.
  const nlohmann::json j = to_json(d);
  EXPECT_EQ(j["winner"], d.winner);
  EXPECT_EQ(j["cached"], false);
  EXPECT_EQ(j["candidates"].size(), d.candidates.size());
}

// Where units can take two cores, auto also tries sequential at two threads (intra@2) and the
// allotment schedulers, always measures the intra-operator runs, keeps the measured fastest and
// says by how much it beats the best intra-operator run.
TEST(AutoSchedule, TriesIntraOperatorPlansAndKeepsTheMeasuredFastest) {
  const ir::UnitGraph units = wide_dag();
  const cost::RooflineCostModel cost(units, {.cores = 2});
  EXPECT_EQ(auto_candidate_labels(2, 1),
            (std::vector<std::string>{"sequential", "intra@2", "moldable", "ios-threads",
                                      "optimal-threads", "greedy", "nimble", "lios", "opara",
                                      "heft", "ios", "optimal"}));
  EXPECT_EQ(auto_candidate_labels(3, 2)[1], "intra@1");
  EXPECT_EQ(auto_candidate_labels(3, 2)[2], "intra@3");
  for (const auto& [fastest, fastest_ms] :
       std::vector<std::pair<std::string, double>>{{"intra@2", 4.0}, {"moldable", 3.0}}) {
    std::map<std::string, double> ms = {{"sequential", 10}, {"intra@2", 6}, {"moldable", 5}};
    ms[fastest] = fastest_ms;
    std::vector<std::string> asked;
    MeasureCandidates measure = [&](std::span<const sched::Schedule> schedules) {
      std::vector<Measured> out;
      for (const sched::Schedule& s : schedules) {
        asked.push_back(s.algorithm);
        const double t = ms.count(s.algorithm) ? ms[s.algorithm] : 8.0;
        out.push_back({.median_ms = t, .p10_ms = t, .p90_ms = t});
      }
      return out;
    };
    AutoOptions options = options_for_tests();
    options.max_measured = 1;  // sequential alone, besides the intra-operator runs
    const AutoDecision only_intra = auto_schedule(units, cost, options, measure);
    EXPECT_EQ(asked, (std::vector<std::string>{"sequential", "intra@2"}))
        << "the intra-operator runs are always measured";
    EXPECT_EQ(only_intra.winner, "intra@2");
    asked.clear();
    options.max_measured = 20;  // every distinct candidate
    const AutoDecision d = auto_schedule(units, cost, options, measure);
    ASSERT_GE(asked.size(), 3u);
    EXPECT_EQ(asked[0], "sequential");
    EXPECT_EQ(asked[1], "intra@2");
    EXPECT_NE(std::find(asked.begin(), asked.end(), "moldable"), asked.end());
    expect_winner_is_measured_argmin(d);
    EXPECT_EQ(d.winner, fastest);
    EXPECT_EQ(d.schedule.algorithm, fastest);
    EXPECT_EQ(d.best_intra, "intra@2");
    EXPECT_DOUBLE_EQ(d.best_intra_ms, ms["intra@2"]);
    EXPECT_DOUBLE_EQ(d.speedup_over_intra(), ms["intra@2"] / fastest_ms);
    // Within 5% of the best intra-operator run is a tie, and the intra-operator run keeps it.
    ms["moldable"] = ms["intra@2"] * 0.97;
    const AutoDecision tie = auto_schedule(units, cost, options, measure);
    ms["moldable"] = fastest == "moldable" ? fastest_ms : 5;
    EXPECT_EQ(tie.winner, "intra@2");
    EXPECT_DOUBLE_EQ(tie.speedup_over_intra(), 1.0);
    if (fastest == "intra@2") {
      EXPECT_EQ(d.schedule.cores, 2);
      for (int k : sched::unit_threads(d.schedule, units.num_units(), 0)) EXPECT_EQ(k, 2);
    }
    EXPECT_NE(summary(d).find("over the best intra-operator run, intra@2"), std::string::npos)
        << summary(d);
    const nlohmann::json j = to_json(d);
    EXPECT_EQ(j["best_intra"], "intra@2");
  }
}

// On a GPU every distinct candidate runs: an H100 ran ios fastest on tv_inception_v3 where the
// measured costs put five others ahead of it (docs/gpu.md). Elsewhere sequential and three more.
TEST(AutoSchedule, MeasuresEveryCandidateOnAGpuRealOrSimulatedAndFourOnTheCpu) {
  EXPECT_EQ(default_auto_max_measured(parse_device("cuda:0")),
            static_cast<int>(auto_candidates().size()));
  EXPECT_EQ(default_auto_max_measured(parse_device("cuda:3")),
            static_cast<int>(auto_candidates().size()));
  EXPECT_EQ(default_auto_max_measured(parse_device("cpu")), 4);
  EXPECT_EQ(default_auto_max_measured(parse_device("sim:h100")),
            static_cast<int>(auto_candidates().size()));
}

TEST(AutoSchedule, RejectsMultipleDevices) {
  const ir::UnitGraph units = wide_dag();
  cost::DagCostModel cost(units);
  FakeDevice device;
  AutoOptions options = options_for_tests();
  options.schedule.num_devices = 2;
  EXPECT_THROW(auto_schedule(units, cost, options, device.measure()), Error);
}

TEST(AutoSchedule, UnknownAlgorithmListsAuto) {
  check_algorithm_name("auto");
  check_algorithm_name("lios");
  try {
    check_algorithm_name("nope");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_NE(std::string(e.what()).find("known: auto, sequential"), std::string::npos) << e.what();
  }
}

// The cache: a second call with the same key measures nothing; any part of the key changed
// measures again.
TEST(AutoSchedule, SecondCallReusesTheCachedDecision) {
  const ir::UnitGraph units = wide_dag();
  cost::DagCostModel cost(units);
  FakeDevice device;
  for (const auto& [algo, schedule_name] : schedule_names(units, cost))
    device.ms[schedule_name] = algo == "lios" ? 2.0 : 4.0;
  AutoOptions options = options_for_tests();
  options.cache_dir = fresh_dir("reuse");
  const AutoDecision first = auto_schedule(units, cost, options, device.measure());
  ASSERT_EQ(device.calls, 1);
  const AutoDecision second = auto_schedule(units, cost, options, device.measure());
  EXPECT_EQ(device.calls, 1) << "a cached decision measures nothing";
  EXPECT_TRUE(second.cached);
  EXPECT_EQ(second.winner, first.winner);
  EXPECT_EQ(sched::to_json(second.schedule, units), sched::to_json(first.schedule, units));
  EXPECT_DOUBLE_EQ(second.speedup_over_sequential(), first.speedup_over_sequential());
  EXPECT_EQ(second.candidates.size(), first.candidates.size());

  // The model, not its name: the same DAG from another seed is another model.
  const ir::UnitGraph other = wide_dag(4);
  cost::DagCostModel other_cost(other);
  for (const auto& [algo, schedule_name] : schedule_names(other, other_cost))
    device.ms[schedule_name] = 3.0;
  auto_schedule(other, other_cost, options, device.measure());
  EXPECT_EQ(device.calls, 2);

  int calls = device.calls;
  for (auto change : {+[](AutoOptions& o) { o.batch = 2; },
                      +[](AutoOptions& o) { o.device_description = "another device"; },
                      +[](AutoOptions& o) { o.braid_version = "another version"; },
                      +[](AutoOptions& o) { o.schedule.max_streams = 2; },
                      +[](AutoOptions& o) { o.reuse_cached = false; }}) {
    AutoOptions changed = options;
    change(changed);
    const AutoDecision d = auto_schedule(units, cost, changed, device.measure());
    EXPECT_FALSE(d.cached);
    EXPECT_EQ(device.calls, ++calls);
  }
  // Still there for the original key.
  EXPECT_TRUE(auto_schedule(units, cost, options, device.measure()).cached);
  EXPECT_EQ(device.calls, calls);
}

TEST(AutoSchedule, CorruptCacheFileIsIgnored) {
  const ir::UnitGraph units = wide_dag();
  cost::DagCostModel cost(units);
  FakeDevice device;
  for (const auto& [algo, schedule_name] : schedule_names(units, cost))
    device.ms[schedule_name] = 3.0;
  AutoOptions options = options_for_tests();
  options.cache_dir = fresh_dir("corrupt");
  const auto path = DecisionCache(*options.cache_dir).path();
  std::filesystem::create_directories(*options.cache_dir);
  for (const char* text :
       {"{not json", R"({"format": "something else", "decisions": {}})", "[1, 2, 3]"}) {
    std::ofstream(path) << text;
    const AutoDecision d = auto_schedule(units, cost, options, device.measure());
    EXPECT_FALSE(d.cached) << text;
  }
  // The last call rewrote the file; a decision whose schedule does not fit the model (a unit
  // renamed) is ignored too.
  nlohmann::json j;
  std::ifstream(path) >> j;
  ASSERT_EQ(j["decisions"].size(), 1u);
  for (auto& [digest, decision] : j["decisions"].items())
    decision["schedule"] = {{"format", "braid.schedule/1"}, {"lanes", {{{"units", {"nope"}}}}}};
  std::ofstream(path) << j.dump(1);
  const int calls = device.calls;
  EXPECT_FALSE(auto_schedule(units, cost, options, device.measure()).cached);
  EXPECT_EQ(device.calls, calls + 1);
}

// The real CPU executor on a small zoo model (roofline costs: nothing to profile): the winner
// is the argmin of the medians auto reports, and every candidate computes the same outputs.
TEST(AutoSchedule, OnTheCpuExecutorTheWinnerIsTheArgminOfItsMedians) {
  models::LoadOptions load;
  load.zoo.image_size = 64;
  models::LoadedModel m = models::load_model("squeezenet", load);
  auto weights = std::make_shared<const ir::Weights>(std::move(m.weights));
  cost::RooflineCostModel cost(m.units);
  AutoOptions options;
  options.schedule.max_streams = 2;
  options.measure.iters = 3;
  options.measure.warmup = 1;
  options.cache_dir = fresh_dir("cpu");
  const AutoDecision d = auto_schedule(m.units, weights, cost, options);
  expect_winner_is_measured_argmin(d);
  std::string sha;
  size_t measured = 0;
  for (const AutoCandidate& c : d.candidates) {
    if (!c.measured) continue;
    ++measured;
    EXPECT_GT(c.measured->median_ms, 0) << c.algorithm;
    if (sha.empty()) sha = c.measured->outputs_sha256;
    EXPECT_EQ(c.measured->outputs_sha256, sha) << c.algorithm;
  }
  EXPECT_GE(measured, 2u);
  // Cached under this machine's description.
  EXPECT_TRUE(auto_schedule(m.units, weights, cost, options).cached);
}

}  // namespace
}  // namespace braid::tune
