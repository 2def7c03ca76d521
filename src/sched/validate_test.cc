#include "sched/validate.h"

#include <gtest/gtest.h>

#include "base/error.h"
#include "ir/graph.h"
#include "models/dag_json.h"
#include "sched/test_graphs.h"

namespace braid::sched {
namespace {

using testing::diamond;
using testing::first_error;
constexpr UnitId kA{0}, kB{1}, kC{2}, kD{3};

Schedule two_streams() {  // a, b, d on stream 0; c on stream 1
  Schedule s;
  s.lanes = {{.stream = 0, .units = {kA, kB, kD}}, {.stream = 1, .units = {kC}}};
  s.syncs = {{kA, kC}, {kC, kD}};
  return s;
}

TEST(Validate, AcceptsEachForm) {
  ir::UnitGraph g = diamond();
  EXPECT_EQ(first_error(g, two_streams()), "(valid)");
  Schedule stages;
  stages.stages = {{.groups = {{kA}}}, {.groups = {{kB}, {kC}}}, {.groups = {{kD}}}};
  EXPECT_TRUE(check(g, stages).empty());
  EXPECT_NO_THROW(validate_or_throw(g, stages));
}

// A unit no stream runs leaves its consumers reading garbage (or waiting forever).
TEST(Validate, RejectsMissingUnit) {
  ir::UnitGraph g = diamond();
  Schedule s;
  s.stages = {{.groups = {{kA}}}, {.groups = {{kB}}}, {.groups = {{kD}}}};
  EXPECT_EQ(first_error(g, s), "unit 'c' is not scheduled");
  try {
    validate_or_throw(g, s);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidSchedule);
    EXPECT_STREQ(e.what(), "invalid schedule: unit 'c' is not scheduled");
  }
}

// A unit run twice races with itself on its output buffer and doubles its cost.
TEST(Validate, RejectsDuplicateUnit) {
  ir::UnitGraph g = diamond();
  Schedule s;
  s.stages = {{.groups = {{kA}}}, {.groups = {{kB}, {kC}}}, {.groups = {{kD, kB}}}};
  EXPECT_EQ(first_error(g, s),
            "unit 'b' is scheduled 2 times (stages[1].groups[0][0], stages[2].groups[0][1])");
}

// The "missing wait": without a sync, stream 1 may run c before a has written its input.
TEST(Validate, RejectsMissingSync) {
  ir::UnitGraph g = diamond();
  Schedule s = two_streams();
  s.syncs = {{kC, kD}};
  EXPECT_EQ(first_error(g, s), "edge 'a' -> 'c' crosses streams (0:0 -> 0:1) without a sync");
}

// Happens-before is transitive: c waits for b, which follows a on its stream, so a -> c needs
// no sync of its own. Demanding one would force redundant events on every executor.
TEST(Validate, AcceptsTransitiveOrder) {
  ir::UnitGraph g = diamond();
  Schedule s;
  s.lanes = {{.stream = 0, .units = {kA, kB}}, {.stream = 1, .units = {kC, kD}}};
  s.syncs = {{kB, kC}};
  EXPECT_EQ(first_error(g, s), "(valid)");
  EXPECT_TRUE(check(g, s).empty());
}

// Two streams each waiting for the other's later unit never finish: a deadlock, reported with
// the cycle so the faulty syncs can be found.
TEST(Validate, RejectsDeadlockBetweenStreams) {
  ir::UnitGraph g = models::parse_dag_json_text(R"({"format": "braid.dag/1", "name": "chains",
      "nodes": [{"name": "a"}, {"name": "b"}, {"name": "c"}, {"name": "d"}],
      "edges": [{"from": "a", "to": "c"}, {"from": "b", "to": "d"}]})",
                                                "chains");
  ASSERT_EQ(g.unit(UnitId{2}).name, "c");
  Schedule s;  // stream 0 runs c then b; stream 1 runs d then a
  s.lanes = {{.stream = 0, .units = {UnitId{2}, UnitId{1}}},
             {.stream = 1, .units = {UnitId{3}, UnitId{0}}}};
  s.syncs = {{UnitId{0}, UnitId{2}}, {UnitId{1}, UnitId{3}}};
  EXPECT_EQ(first_error(g, s),
            "deadlock: the schedule's waits form a cycle: 'a' -> 'c' -> 'b' -> 'd' -> 'a'");
}

// Data on one device is invisible to another until copied: a missing transfer reads garbage.
TEST(Validate, RejectsCrossDeviceEdgeWithoutTransfer) {
  ir::UnitGraph g = diamond();
  Schedule s;
  s.num_devices = 2;
  s.stages = {{.device = 0, .groups = {{kA}}},
              {.device = 1, .groups = {{kC}}},
              {.device = 0, .groups = {{kB}}},
              {.device = 0, .groups = {{kD}}}};
  s.transfers = {{kA, kC, 0, 1}};
  EXPECT_EQ(first_error(g, s), "edge 'c' -> 'd' crosses devices (1 -> 0) without a transfer");
  s.transfers.push_back({kC, kD, 1, 0});
  EXPECT_EQ(first_error(g, s), "(valid)");
  s.transfers[1].src_device = 0;  // a transfer must name where the data really is
  EXPECT_EQ(first_error(g, s), "transfers[1]: 'c' runs on device 1, not src_device 0");
  s.transfers[1] = {kC, kD, 1, 0};
  // Listing c's stage after d's would make d wait on a copy not yet issued.
  std::swap(s.stages[1], s.stages[3]);
  EXPECT_EQ(first_error(g, s),
            "transfers[1]: 'c' runs in stages[3], listed after stages[1] where 'd' receives it");
  std::swap(s.stages[1], s.stages[3]);
  s.stages[1].device = 2;  // devices must exist
  EXPECT_EQ(first_error(g, s),
            "stages[1].device: device 2 is out of range (the schedule has 2 devices)");
}

// One host thread issues every launch in launch order: launching a consumer before its
// producer, or a wait before the event it waits on is recorded, breaks the ordering (CUDA
// treats a wait on an unrecorded event as already satisfied).
TEST(Validate, RejectsBadLaunchOrder) {
  ir::UnitGraph g = diamond();
  Schedule s = two_streams();
  s.launch_order = {kA, kC, kB, kD};
  EXPECT_EQ(first_error(g, s), "(valid)");
  s.launch_order = {kA, kB, kD, kC};
  EXPECT_EQ(first_error(g, s), "launch_order: 'd' is launched before its producer 'c'");
  s.launch_order = {kA, kB, kC};
  EXPECT_EQ(first_error(g, s), "launch_order: has 3 entries for 4 units");
  s.launch_order = {kA, kB, kC, kC};
  EXPECT_EQ(first_error(g, s), "launch_order[3]: 'c' is launched twice (also launch_order[2])");
  // Topological, but against the order of stream 0 (c then b).
  s.lanes = {{.stream = 0, .units = {kA, kC, kB, kD}}};
  s.syncs.clear();
  s.launch_order = {kA, kB, kC, kD};
  EXPECT_EQ(first_error(g, s),
            "launch_order: 'b' is launched before 'c', which precedes it on stream 0:0");
}

// Concurrent groups of one stage have no order between them: an edge across them races.
TEST(Validate, RejectsEdgesInsideAStage) {
  ir::UnitGraph g = diamond();
  Schedule s;
  s.stages = {{.groups = {{kA}, {kB}}}, {.groups = {{kC}}}, {.groups = {{kD}}}};
  EXPECT_EQ(first_error(g, s),
            "edge 'a' -> 'b' joins groups 0 and 1 of stages[0], which run concurrently");
  s.stages = {{.groups = {{kA}}}, {.groups = {{kD}}}, {.groups = {{kB, kC}}}};
  EXPECT_EQ(first_error(g, s),
            "edge 'b' -> 'd' goes backwards: 'd' runs in stages[1], before 'b' in stages[2]");
  s.stages = {{.groups = {{kA, kC, kB}}}, {.groups = {{kD}}}};
  EXPECT_EQ(first_error(g, s), "(valid)");
  s.stages = {{.groups = {{kB, kA}}}, {.groups = {{kC}}}, {.groups = {{kD}}}};
  EXPECT_EQ(first_error(g, s), "edge 'a' -> 'b' goes backwards in stages[0].groups[0]");
}

// Structural mistakes are reported before anything that depends on them.
TEST(Validate, RejectsMalformedStructure) {
  ir::UnitGraph g = diamond();
  Schedule empty;
  EXPECT_EQ(first_error(g, empty), "the schedule is empty: it has no stages and no streams");
  Schedule s = two_streams();
  s.lanes[1].stream = 0;
  EXPECT_EQ(first_error(g, s), "streams[1]: stream 0:0 is listed twice (also streams[0])");
  s = two_streams();
  s.lanes[0].units.push_back(UnitId{9});
  EXPECT_EQ(first_error(g, s),
            "streams[0].units[3]: unit id 9 is out of range (graph 'diamond' has 4 units)");
  Schedule st;
  st.stages = {{.groups = {{kA}, {}}}, {.groups = {{kB, kC, kD}}}};
  EXPECT_EQ(first_error(g, st), "stages[0].groups[1]: a group needs at least one unit");
  st.stages = {{.groups = {{kA}}}, {.groups = {{kB, kC, kD}}}};
  st.syncs = {{kA, kB}};
  EXPECT_EQ(first_error(g, st),
            "syncs: syncs belong to stream-based schedules; stages are ordered by barriers");
}

// Planned times that overlap on one stream describe a plan no stream can run; the predicted
// latency built on them would be fiction.
TEST(Validate, RejectsImpossiblePlannedTimes) {
  ir::UnitGraph g = diamond();
  Schedule s = two_streams();
  s.lanes[0].start = {Millis(0), Millis(1), Millis(2)};
  s.lanes[0].finish = {Millis(1), Millis(3), Millis(4)};
  EXPECT_EQ(first_error(g, s),
            "streams[0]: 'd' starts (2 ms) before 'b' finishes (3 ms) on the same stream");
  s.lanes[0].finish = {Millis(1), Millis(0.5), Millis(4)};
  EXPECT_EQ(first_error(g, s), "streams[0]: 'b' finishes (0.5 ms) before it starts (1 ms)");
  s.lanes[0].finish = {Millis(1)};
  EXPECT_EQ(first_error(g, s), "streams[0].finish_ms: has 1 entries for 3 units");
}

// Warnings flag waste without rejecting the schedule.
TEST(Validate, WarnsAboutRedundantSyncsAndStrayTransfers) {
  ir::UnitGraph g = diamond();
  Schedule s = two_streams();
  s.syncs.push_back({kA, kB});  // same stream: program order already orders them
  s.syncs.push_back({kC, kB});  // not a graph edge, but only adds order: allowed
  std::vector<Diagnostic> d = check(g, s);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].severity, Severity::kWarning);
  EXPECT_EQ(d[0].message,
            "syncs[2]: 'a' and 'b' share stream 0:0, whose order already makes 'b' wait");
  EXPECT_NO_THROW(validate_or_throw(g, s));

  Schedule t;
  t.num_devices = 2;
  t.stages = {{.device = 0, .groups = {{kA}, {kB}}},
              {.device = 1, .groups = {{kC}}},
              {.device = 0, .groups = {{kD}}}};
  t.transfers = {{kA, kC, 0, 1}, {kC, kD, 1, 0}, {kB, kC, 0, 1}};
  d = check(g, t);
  ASSERT_FALSE(d.empty());
  EXPECT_EQ(d[0].message,
            "edge 'a' -> 'b' joins groups 0 and 1 of stages[0], which run concurrently");
  EXPECT_EQ(d.back().severity, Severity::kWarning);
  EXPECT_EQ(d.back().message, "transfers[2]: 'b' -> 'c' is not a graph edge (a wasted copy)");
}

// ---------------------------------------------------------------------------------------------
// Operator merge needs real operators.

// x feeds convs that differ in one property each; `other` reads another tensor.
struct ConvGraph {
  ir::UnitGraph units;
  UnitId find(std::string_view name) const { return *units.find_unit(name); }
};

ConvGraph conv_graph() {
  using namespace ir;
  GraphBuilder b("convs");
  ValueId x = b.add_input("x", {DType::kFloat32, {1, 8, 16, 16}});
  auto conv = [&](ValueId in, std::string name, ConvAttrs attrs, int64_t out_channels = 8) {
    const int64_t ic = b.type(in).shape[1] / attrs.groups;
    ValueId w = b.add_parameter(
        name + ".w", {DType::kFloat32, {out_channels, ic, attrs.kernel[0], attrs.kernel[1]}});
    return b.add_op(OpKind::Conv, attrs, {in, w}, name);
  };
  ValueId one = conv(x, "one", {.activation = Activation::kRelu}, 4);             // 1x1
  ValueId three = conv(x, "three", {.kernel = {3, 3}, .pads = {1, 1, 1, 1}}, 6);  // + Relu op below
  ValueId three_relu = b.add_op(OpKind::Relu, {}, {three}, "three_relu");
  ValueId row =
      conv(x, "row", {.kernel = {1, 3}, .pads = {0, 1, 0, 1}, .activation = Activation::kRelu});
  ValueId strided = conv(x, "strided", {.stride = {2, 2}, .activation = Activation::kRelu});
  ValueId plain = conv(x, "plain", {});
  ValueId depthwise = conv(x, "depthwise", {.groups = 8, .activation = Activation::kRelu});
  ValueId skewed =
      conv(x, "skewed", {.kernel = {3, 3}, .pads = {2, 1, 0, 1}, .activation = Activation::kRelu});
  ValueId pool =
      b.add_op(OpKind::MaxPool, PoolAttrs{.kernel = {3, 3}, .pads = {1, 1, 1, 1}}, {x}, "pool");
  ValueId other = conv(one, "other", {.activation = Activation::kRelu});
  for (ValueId v : {three_relu, row, strided, plain, depthwise, skewed, pool, other})
    b.mark_output(v);
  return {ir::fuse(std::make_shared<const Graph>(std::move(b).build()))};
}

std::string merge_error(const ConvGraph& g, std::vector<std::string_view> names) {
  Schedule s;
  Stage merge{.kind = StageKind::kMerge};
  std::vector<bool> merged(g.units.num_units(), false);
  for (std::string_view n : names) {
    merge.groups.push_back({g.find(n)});
    merged[index(g.find(n))] = true;
  }
  Stage before, after;  // everything else, in topological order around the merge
  for (size_t i = 0; i < g.units.num_units(); ++i) {
    if (merged[i]) continue;
    (g.units.unit(make_id<UnitId>(i)).name == "other" ? after : before)
        .groups.push_back({make_id<UnitId>(i)});
  }
  if (!before.groups.empty()) s.stages.push_back(before);
  s.stages.push_back(merge);
  if (!after.groups.empty()) s.stages.push_back(after);
  return first_error(g.units, s);
}

TEST(ValidateMerge, AcceptsConvsOnOneInput) {
  ConvGraph g = conv_graph();
  ASSERT_EQ(g.units.signature(g.find("three")), "Conv-Relu");
  // 1x1, 3x3 p1 and 1x3 p(0,1), all ReLU: one 3x3 kernel holds them all, centered.
  EXPECT_EQ(merge_error(g, {"one", "three", "row"}), "(valid)");
}

// Merging convs that cannot share one kernel would compute the wrong function: each rejection
// names the property that differs (ios.txt §3: same type and input; peers.md §1.4).
TEST(ValidateMerge, RejectsNonMergeableUnits) {
  ConvGraph g = conv_graph();
  EXPECT_EQ(merge_error(g, {"one", "strided"}),
            "stages[1]: cannot merge 'one' and 'strided': different strides (1x1 and 2x2)");
  EXPECT_EQ(merge_error(g, {"one", "plain"}),
            "stages[1]: cannot merge 'one' and 'plain': different activations (Relu and none)");
  EXPECT_EQ(merge_error(g, {"one", "depthwise"}),
            "stages[1]: 'depthwise' cannot be merged: it is a grouped convolution (groups = 8)");
  EXPECT_EQ(
      merge_error(g, {"one", "pool"}),
      "stages[1]: 'pool' cannot be merged: it is MaxPool, not a Conv with an optional activation");
  EXPECT_EQ(merge_error(g, {"one", "skewed"}),
            "stages[1]: 'one' cannot be merged: its 1x1 kernel and pads do not center in the "
            "merged 3x3 kernel");
}

TEST(ValidateMerge, RejectsDifferentInputs) {
  ConvGraph g = conv_graph();
  Schedule s;
  std::vector<std::vector<UnitId>> rest;
  for (size_t i = 0; i < g.units.num_units(); ++i) {
    UnitId u = make_id<UnitId>(i);
    if (u != g.find("one") && u != g.find("other") && u != g.find("three")) rest.push_back({u});
  }
  s.stages = {{.groups = {{g.find("one")}}},
              {.kind = StageKind::kMerge, .groups = {{g.find("three")}, {g.find("other")}}},
              {.groups = rest}};
  EXPECT_EQ(
      first_error(g.units, s),
      "stages[1]: cannot merge 'three' and 'other': they read different inputs ('x' and 'one')");
}

// A weighted DAG has no operators to merge: a merge stage there cannot be executed.
TEST(ValidateMerge, RejectsMergeOnWeightedDag) {
  ir::UnitGraph g = diamond();
  Schedule s;
  s.stages = {
      {.groups = {{kA}}}, {.kind = StageKind::kMerge, .groups = {{kB}, {kC}}}, {.groups = {{kD}}}};
  EXPECT_EQ(first_error(g, s),
            "stages[1]: operator merge needs operators, and 'diamond' is a weighted DAG");
}

}  // namespace
}  // namespace braid::sched
