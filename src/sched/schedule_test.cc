#include "sched/schedule.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "base/error.h"
#include "models/dag_json.h"
#include "sched/trivial.h"
#include "sched/validate.h"
#include "test_env.h"

namespace braid::sched {
namespace {

using nlohmann::json;

// a -> {b, c} -> d: ids a=0, b=1, c=2, d=3.
ir::UnitGraph diamond() {
  return models::load_dag_json_file(testing::source_dir() / "tests/golden/diamond.dag.json");
}
constexpr UnitId kA{0}, kB{1}, kC{2}, kD{3};

// The golden examples of docs/schedule-format.md, one per form.
Schedule stage_example(const ir::UnitGraph& g) {
  return GreedyScheduler().schedule(g);
}

Schedule stream_example(const ir::UnitGraph& g) {
  Schedule s;
  s.algorithm = "handmade";
  s.model = g.name();
  s.lanes = {
      {.device = 0,
       .stream = 0,
       .units = {kA, kC, kD},
       .start = {Millis(0), Millis(1), Millis(4)},
       .finish = {Millis(1), Millis(4), Millis(5.5)}},
      {.device = 0, .stream = 1, .units = {kB}, .start = {Millis(1)}, .finish = {Millis(3)}}};
  s.syncs = {{kA, kB}, {kB, kD}};
  s.launch_order = {kA, kC, kB, kD};
  s.predicted_latency = Millis(5.5);
  s.stats = {{"note", "LIOS-style plan: c, the longest unit, stays on stream 0"}};
  return s;
}

Schedule two_device_example(const ir::UnitGraph& g) {
  Schedule s;
  s.algorithm = "handmade";
  s.model = g.name();
  s.num_devices = 2;
  s.stages = {{.device = 0, .groups = {{kA}}},
              {.device = 1, .groups = {{kC}}},
              {.device = 0, .groups = {{kB}}},
              {.device = 0, .groups = {{kD}}}};
  s.transfers = {{kA, kC, 0, 1}, {kC, kD, 1, 0}};
  return s;
}

void expect_same(const Schedule& a, const Schedule& b, const ir::UnitGraph& g) {
  EXPECT_EQ(to_json(a, g), to_json(b, g));
  EXPECT_EQ(a.algorithm, b.algorithm);
  EXPECT_EQ(a.num_devices, b.num_devices);
  ASSERT_EQ(a.stages.size(), b.stages.size());
  for (size_t i = 0; i < a.stages.size(); ++i) {
    EXPECT_EQ(a.stages[i].device, b.stages[i].device);
    EXPECT_EQ(a.stages[i].kind, b.stages[i].kind);
    EXPECT_EQ(a.stages[i].groups, b.stages[i].groups);
  }
  ASSERT_EQ(a.lanes.size(), b.lanes.size());
  for (size_t i = 0; i < a.lanes.size(); ++i) {
    EXPECT_EQ(a.lanes[i].units, b.lanes[i].units);
    ASSERT_EQ(a.lanes[i].start.size(), b.lanes[i].start.size());
    for (size_t k = 0; k < a.lanes[i].start.size(); ++k) {
      EXPECT_NEAR(a.lanes[i].start[k].count(), b.lanes[i].start[k].count(), 1e-9);
      EXPECT_NEAR(a.lanes[i].finish[k].count(), b.lanes[i].finish[k].count(), 1e-9);
    }
  }
  EXPECT_EQ(a.syncs, b.syncs);
  EXPECT_EQ(a.transfers, b.transfers);
  EXPECT_EQ(a.launch_order, b.launch_order);
  EXPECT_EQ(a.predicted_latency.has_value(), b.predicted_latency.has_value());
  EXPECT_EQ(a.stats, b.stats);
}

TEST(ScheduleJson, StageFormRoundTrips) {
  ir::UnitGraph g = diamond();
  Schedule s = stage_example(g);
  s.predicted_latency = Millis(6.5);
  json j = to_json(s, g);
  EXPECT_EQ(j["format"], "braid.schedule/1");
  EXPECT_EQ(j["stages"][1]["groups"], json::parse(R"([["b"], ["c"]])"));
  expect_same(schedule_from_json(j, g), s, g);
}

TEST(ScheduleJson, StreamFormRoundTrips) {
  ir::UnitGraph g = diamond();
  Schedule s = stream_example(g);
  json j = to_json(s, g);
  EXPECT_EQ(j["streams"][0]["units"], json::parse(R"(["a", "c", "d"])"));
  EXPECT_EQ(j["syncs"][0], json::parse(R"({"from": "a", "to": "b"})"));
  EXPECT_EQ(j["launch_order"], json::parse(R"(["a", "c", "b", "d"])"));
  expect_same(schedule_from_json(j, g), s, g);
}

TEST(ScheduleJson, MultiDeviceRoundTrips) {
  ir::UnitGraph g = diamond();
  Schedule s = two_device_example(g);
  json j = to_json(s, g);
  EXPECT_EQ(j["devices"], 2);
  EXPECT_EQ(j["transfers"][1],
            json::parse(R"({"from": "c", "to": "d", "src_device": 1, "dst_device": 0})"));
  expect_same(schedule_from_json(j, g), s, g);
}

TEST(ScheduleJson, MergeStageRoundTrips) {
  ir::UnitGraph g = diamond();
  Schedule s;
  s.stages = {
      {.groups = {{kA}}}, {.kind = StageKind::kMerge, .groups = {{kB}, {kC}}}, {.groups = {{kD}}}};
  json j = to_json(s, g);
  EXPECT_EQ(j["stages"][1]["kind"], "merge");
  expect_same(schedule_from_json(j, g), s, g);
}

// The files under tests/golden/ are the examples of docs/schedule-format.md. Regenerate them
// with BRAID_UPDATE_GOLDEN=1 after a deliberate format change.
TEST(ScheduleJson, GoldenExamples) {
  ir::UnitGraph g = diamond();
  const bool update = std::getenv("BRAID_UPDATE_GOLDEN") != nullptr;
  for (auto [file, schedule] :
       {std::pair("diamond.greedy.schedule.json", stage_example(g)),
        std::pair("diamond.streams.schedule.json", stream_example(g)),
        std::pair("diamond.two_devices.schedule.json", two_device_example(g))}) {
    SCOPED_TRACE(file);
    const auto path = testing::source_dir() / "tests/golden" / file;
    EXPECT_TRUE(check(g, schedule).empty()) << to_string(check(g, schedule).front());
    if (update) write_schedule_file(schedule, g, path);
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_EQ(text.str(), to_json_text(schedule, g))
        << "run with BRAID_UPDATE_GOLDEN=1 to regenerate";
    expect_same(read_schedule_file(path, g), schedule, g);
  }
}

TEST(ScheduleJson, TextKeepsShortArraysOnOneLine) {
  ir::UnitGraph g = diamond();
  std::string text = to_json_text(stage_example(g), g);
  EXPECT_NE(text.find(R"({"device":0,"kind":"concurrent","groups":[["b"],["c"]]})"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find(R"("format")"), 4u) << text;  // documented key order, not sorted
  EXPECT_EQ(json::parse(text), to_json(stage_example(g), g));
}

// Parses `text` against the diamond and returns the error it must raise.
std::string parse_error(const std::string& text) {
  ir::UnitGraph g = diamond();
  try {
    schedule_from_json(json::parse(text), g);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidSchedule) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "accepted: " << text;
  return {};
}

constexpr const char* kHead =
    R"("format": "braid.schedule/1", "model": "diamond", "algorithm": "x")";

// A hand-edited schedule with a typo must point at the exact spot, or nobody can fix it.
TEST(ScheduleJson, ErrorsNameTheirJsonPath) {
  auto doc = [](const std::string& rest) { return "{" + std::string(kHead) + ", " + rest + "}"; };
  EXPECT_EQ(parse_error(doc(R"("stages": [{"groups": [["a"]]}, {"groups": [["b"], ["foo"]]}])")),
            "stages[1].groups[1][0]: unknown unit 'foo' (graph 'diamond')");
  EXPECT_EQ(parse_error(doc(R"("stages": [{"kind": "parallel", "groups": [["a"]]}])")),
            "stages[0].kind: expected \"concurrent\" or \"merge\", got 'parallel'");
  EXPECT_EQ(parse_error(doc(R"("streams": [{"stream": "0", "units": ["a"]}])")),
            "streams[0].stream: expected an integer, got \"0\"");
  EXPECT_EQ(parse_error(doc(R"("streams": [{"stream": 0, "units": ["a"], "start_ms": [true]}])")),
            "streams[0].start_ms[0]: expected a number, got boolean");
  EXPECT_EQ(
      parse_error(doc(R"("streams": [{"stream": 0, "units": ["a"]}], "syncs": [{"from": "a"}])")),
      "syncs[0]: missing key 'to'");
  EXPECT_EQ(
      parse_error(doc(R"("stages": [{"groups": [["a"]]}], "transfers": [{"from": "a", "to": "b",
            "src_device": 0, "dst_device": 1.5}])")),
      "transfers[0].dst_device: expected an integer, got 1.5");
  // Past int64 as well as past int: not read back as a negative stream.
  EXPECT_EQ(parse_error(doc(R"("streams": [{"stream": 18446744073709551615, "units": ["a"]}])")),
            "streams[0].stream: integer out of range: 18446744073709551615");
  EXPECT_EQ(parse_error(doc(R"("streams": [{"stream": 4294967296, "units": ["a"]}])")),
            "streams[0].stream: integer out of range: 4294967296");
  EXPECT_EQ(parse_error(doc(R"("stages": [{"groups": [["a"]]}], "launch_order": ["a", 3])")),
            "launch_order[1]: expected a string, got number");
  EXPECT_EQ(parse_error(doc(R"("stages": [{"groups": [["a"]]}], "stage": [])")),
            "unknown key 'stage'");
  EXPECT_EQ(parse_error(doc(R"("stages": [{"groups": [["a"]]}], "num_units": 7)")),
            "num_units: the schedule is for 7 units, graph 'diamond' has 4");
  EXPECT_EQ(parse_error(doc(R"("stages": [], "streams": [])")),
            "expected exactly one of 'stages' (stage-based) and 'streams' (stream-based)");
  EXPECT_EQ(parse_error(doc(R"("stages": [{"groups": [["a"]]}], "stats": [1])")),
            "stats: expected an object, got array");
}

// A schedule written by a newer braid must be refused, not misread.
TEST(ScheduleJson, RejectsOtherFormatsAndVersions) {
  EXPECT_EQ(parse_error(R"({"format": "braid.schedule/2", "stages": []})"),
            "format: unsupported version 'braid.schedule/2' (this build reads braid.schedule/1)");
  EXPECT_EQ(parse_error(R"({"format": "braid.dag/1", "stages": []})"),
            "format: unknown format 'braid.dag/1', expected \"braid.schedule/1\"");
  EXPECT_EQ(parse_error(R"({"stages": []})"), "missing key 'format'");
  EXPECT_EQ(parse_error(R"([1, 2])"), "expected an object, got array");
}

TEST(ScheduleJson, FileErrors) {
  ir::UnitGraph g = diamond();
  try {
    read_schedule_file("/nonexistent/s.json", g);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
  }
  auto path = testing::scratch_dir() / "truncated.schedule.json";
  std::ofstream(path) << R"({"format": "braid.schedule/1", "stages": [)";
  try {
    read_schedule_file(path, g);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidSchedule);
    EXPECT_NE(std::string(e.what()).find("malformed JSON"), std::string::npos) << e.what();
  }
}

// nlohmann reports a number too large for a double as out_of_range, not parse_error: `braid run
// --schedule` must still exit 2 with "malformed JSON", not terminate (found by
// schedule_json_fuzz's sibling, dag_json_fuzz).
TEST(ScheduleJson, NumberOverflowIsMalformedJson) {
  try {
    parse_schedule_text(R"({"format": "braid.schedule/1", "predicted_ms": 1E999999})", diamond(),
                        "big.json");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidSchedule);
    EXPECT_NE(std::string(e.what()).find("big.json: malformed JSON"), std::string::npos)
        << e.what();
  }
}

TEST(Schedule, PlacementsAndStreams) {
  ir::UnitGraph g = diamond();
  Schedule s = stream_example(g);
  auto where = placements(s, g.num_units());
  ASSERT_TRUE(where[index(kD)]);
  EXPECT_EQ(where[index(kD)]->stream, 0);
  EXPECT_EQ(where[index(kD)]->position, 2u);
  EXPECT_EQ(where[index(kB)]->stream, 1);
  EXPECT_EQ(num_streams(s), 2);
  EXPECT_EQ(num_streams(stage_example(g)), 2);
  EXPECT_EQ(num_streams(two_device_example(g)), 1);
  EXPECT_EQ(scheduled_units(stage_example(g)), (std::vector<UnitId>{kA, kB, kC, kD}));
}

TEST(Schedule, DumpsOneLinePerStageOrLane) {
  ir::UnitGraph g = diamond();
  std::string stages = to_string(stage_example(g), g);
  EXPECT_NE(stages.find("stage 1 (dev 0, concurrent): [b] [c]"), std::string::npos) << stages;
  std::string lanes = to_string(stream_example(g), g);
  EXPECT_NE(lanes.find("stream 0:0: a c d"), std::string::npos) << lanes;
  EXPECT_NE(lanes.find("sync b -> d"), std::string::npos) << lanes;
  std::string devices = to_string(two_device_example(g), g);
  EXPECT_NE(devices.find("transfer c -> d (dev 1 -> 0)"), std::string::npos) << devices;
}

}  // namespace
}  // namespace braid::sched
