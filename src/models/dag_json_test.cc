#include "models/dag_json.h"

#include <gtest/gtest.h>

#include <fstream>

#include "base/error.h"
#include "models/loader.h"
#include "test_env.h"

namespace braid::models {
namespace {

std::filesystem::path diamond_path() {
  return testing::source_dir() / "tests/golden/diamond.dag.json";
}

// Parses `text` and returns the braid::Error it must raise.
Error parse_error(std::string_view text) {
  try {
    parse_dag_json_text(text, "t.dag.json");
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "no error for " << text;
  return Error(ErrorCode::kInternal, "");
}

void expect_error(std::string_view text, std::string_view expected) {
  Error e = parse_error(text);
  EXPECT_EQ(e.code(), ErrorCode::kInvalidModel) << e.what();
  EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
}

TEST(DagJson, LoadsTheDiamond) {
  ir::UnitGraph g = load_dag_json_file(diamond_path());
  EXPECT_EQ(g.name(), "diamond");
  ASSERT_EQ(g.num_units(), 4u);
  ASSERT_EQ(g.edges().size(), 4u);
  EXPECT_EQ(g.graph(), nullptr);
  const ir::Unit& a = g.unit(UnitId{0});
  EXPECT_EQ(a.name, "a");
  EXPECT_DOUBLE_EQ(Millis(*a.latency).count(), 1.0);
  EXPECT_EQ(a.unit_class, ir::UnitClass::kCompute);
  ASSERT_TRUE(a.resources);
  EXPECT_EQ(a.resources->threads, 256);
  EXPECT_EQ(a.resources->shared_memory, 4096);
  EXPECT_EQ(g.unit(UnitId{2}).unit_class, ir::UnitClass::kMemory);
  EXPECT_EQ(g.unit(UnitId{3}).unit_class, ir::UnitClass::kUnknown);
  auto cd = g.find_edge(UnitId{2}, UnitId{3});
  ASSERT_TRUE(cd);
  EXPECT_DOUBLE_EQ(Millis(*g.edges()[*cd].transfer).count(), 0.3);
}

TEST(DagJson, RoundTrips) {
  ir::UnitGraph g = load_dag_json_file(diamond_path());
  nlohmann::json j = to_dag_json(g);
  ir::UnitGraph h = parse_dag_json(j, "round trip");
  EXPECT_EQ(to_dag_json(h), j);
  ASSERT_EQ(h.num_units(), g.num_units());
  for (size_t i = 0; i < g.num_units(); ++i) {
    const ir::Unit &a = g.unit(make_id<UnitId>(i)), &b = h.unit(make_id<UnitId>(i));
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.latency, b.latency);
    EXPECT_EQ(a.unit_class, b.unit_class);
    EXPECT_EQ(a.resources, b.resources);
  }
}

TEST(DagJson, NodesAreRenumberedTopologically) {
  ir::UnitGraph g = parse_dag_json_text(R"({"format": "braid.dag/1", "nodes": [{"name": "late"},
      {"name": "early"}], "edges": [{"from": "early", "to": "late"}]})",
                                        "dir/order.dag.json");
  EXPECT_EQ(g.name(), "order");  // from the file name
  EXPECT_EQ(g.unit(UnitId{0}).name, "early");
  EXPECT_FALSE(g.unit(UnitId{0}).latency);
}

TEST(DagJson, LoaderAcceptsDagFiles) {
  LoadedModel m = load_model(diamond_path().string());
  EXPECT_EQ(m.source, ModelSource::kDag);
  EXPECT_EQ(m.units.num_units(), 4u);
}

// Two nodes with one name would make every schedule that names them ambiguous.
TEST(DagJson, RejectsDuplicateNodeNames) {
  expect_error(R"({"format": "braid.dag/1", "nodes": [{"name": "a"}, {"name": "a"}]})",
               "nodes[1].name: duplicate node name 'a' (also nodes[0])");
}

// An edge to a node that does not exist is a typo that would otherwise drop a dependency.
TEST(DagJson, RejectsUnknownEdgeEndpoint) {
  expect_error(
      R"({"format": "braid.dag/1", "nodes": [{"name": "a"}], "edges": [{"from": "a", "to": "z"}]})",
      "edges[0].to: unknown node 'z'");
}

// A negative latency would let a cost model predict schedules faster than physics allows.
TEST(DagJson, RejectsNegativeLatency) {
  expect_error(R"({"format": "braid.dag/1", "nodes": [{"name": "a", "latency_ms": -1}]})",
               "nodes[0].latency_ms: must be >= 0, got -1");
  expect_error(R"({"format": "braid.dag/1", "nodes": [{"name": "a"}, {"name": "b"}],
                  "edges": [{"from": "a", "to": "b", "transfer_ms": -0.5}]})",
               "edges[0].transfer_ms: must be >= 0");
}

// A misspelt kind would silently become "unknown" and change Opara's launch order.
TEST(DagJson, RejectsBadKind) {
  expect_error(R"({"format": "braid.dag/1", "nodes": [{"name": "a", "kind": "gpu"}]})",
               "nodes[0].kind: expected \"compute\", \"memory\" or \"unknown\", got 'gpu'");
}

// nlohmann reports a number too large for a double as out_of_range, not parse_error: it must still
// be a clear "malformed JSON" error, not std::terminate (found by dag_json_fuzz).
TEST(DagJson, RejectsNumberOverflowAsMalformedJson) {
  try {
    parse_dag_json_text(R"({"format": 1E999999, "nodes": []})", "big.dag.json");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
    EXPECT_NE(std::string(e.what()).find("big.dag.json: malformed JSON"), std::string::npos)
        << e.what();
  }
}

// A cycle has no valid schedule: every executor would deadlock on it.
TEST(DagJson, RejectsCycles) {
  expect_error(R"({"format": "braid.dag/1", "nodes": [{"name": "a"}, {"name": "b"}, {"name": "c"}],
                  "edges": [{"from": "a", "to": "b"}, {"from": "b", "to": "c"}, {"from": "c", "to": "b"}]})",
               "cycle");
}

// Self-loops and repeated edges are cycles and double counts in disguise.
TEST(DagJson, RejectsSelfLoopsAndDuplicateEdges) {
  expect_error(
      R"({"format": "braid.dag/1", "nodes": [{"name": "a"}], "edges": [{"from": "a", "to": "a"}]})",
      "edges[0]: self-loop on node 'a'");
  expect_error(R"({"format": "braid.dag/1", "nodes": [{"name": "a"}, {"name": "b"}],
                  "edges": [{"from": "a", "to": "b"}, {"from": "a", "to": "b"}]})",
               "edges[1]: duplicate edge 'a' -> 'b' (also edges[0])");
}

// Truncated files must fail at the byte where they break, not deep inside the scheduler.
TEST(DagJson, RejectsMalformedJson) {
  Error e = parse_error(R"({"format": "braid.dag/1", "nodes": [)");
  EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
  EXPECT_NE(std::string(e.what()).find("t.dag.json: malformed JSON"), std::string::npos)
      << e.what();
  EXPECT_NE(std::string(e.what()).find("column 37"), std::string::npos) << e.what();
}

// A typo in a key ("latency" for "latency_ms") must not silently drop the value.
TEST(DagJson, RejectsUnknownKeysAndWrongTypes) {
  expect_error(R"({"format": "braid.dag/1", "nodes": [{"name": "a", "latency": 3}]})",
               "nodes[0]: unknown key 'latency'");
  expect_error(R"({"format": "braid.dag/1", "nodes": [{"name": 7}]})",
               "nodes[0].name: expected a string");
  expect_error(R"({"format": "braid.dag/1", "nodes": {}})", "nodes: expected an array");
  expect_error(R"({"format": "braid.dag/2", "nodes": []})",
               "format: unsupported format 'braid.dag/2'");
  expect_error(R"({"nodes": [{"name": "a"}]})", "missing key 'format'");
  expect_error(R"({"format": "braid.dag/1", "nodes": []})", "nodes: a DAG needs at least one node");
}

// A missing file is the user's path, not a malformed model: kNotFound, exit code 2.
TEST(DagJson, MissingFileIsNotFound) {
  try {
    load_dag_json_file("/nonexistent/x.dag.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_NE(std::string(e.what()).find("/nonexistent/x.dag.json"), std::string::npos);
  }
}

TEST(DagJson, WritesFiles) {
  ir::UnitGraph g = load_dag_json_file(diamond_path());
  auto path = testing::scratch_dir() / "diamond_copy.dag.json";
  write_dag_json_file(g, path);
  EXPECT_EQ(to_dag_json(load_dag_json_file(path)), to_dag_json(g));
}

}  // namespace
}  // namespace braid::models
