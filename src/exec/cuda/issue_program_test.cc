// The capture-timing rule, checked without a GPU on the command lists the CUDA executor walks
// (issue_program.h): every zoo model x {sequential, ios, lios} x {eager, graph} x block ranges.
// A fake request replays the lists the way cuda_executor.cc does, keeping the graph cache.
#include "exec/cuda/issue_program.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "cost/roofline.h"
#include "models/loader.h"
#include "models/zoo.h"
#include "sched/registry.h"

namespace braid::exec::cuda {
namespace {

using Kind = Command::Kind;

// What a request keeps between runs: the graphs captured so far, by range.
struct FakeRequest {
  std::map<BlockRange, int> captures;  // how many times each range was captured
  int launches = 0;
};

// Runs `p` against `r` and checks every rule of issue_program.h; returns the problems.
std::vector<std::string> walk(const sched::ExecutionPlan& plan, const IssueProgram& p,
                              FakeRequest& r, const IssueOptions& o) {
  std::vector<std::string> problems;
  auto fail = [&](size_t at, const std::string& what) {
    problems.push_back("command " + std::to_string(at) + " (" + to_string(p.commands[at]) +
                       "): " + what);
  };
  bool capturing = false, launched = false;
  std::optional<size_t> start, finish, launch;
  std::set<uint32_t> recorded_in_capture;
  std::vector<size_t> steps_seen(plan.lanes.size(), 0);
  for (size_t i = 0; i < p.commands.size(); ++i) {
    const Command& c = p.commands[i];
    switch (c.kind) {
      case Kind::kBeginCapture:
        if (capturing) fail(i, "capture already begun");
        if (!p.graph) fail(i, "capture in an eager run");
        capturing = true;
        recorded_in_capture.clear();
        break;
      case Kind::kEndCapture:
        if (!capturing) fail(i, "end without begin");
        capturing = false;
        ++r.captures[p.range];
        break;
      case Kind::kRecordStart:
      case Kind::kRecordFinish:
      case Kind::kUnitBegin:
      case Kind::kUnitEnd:
        if (capturing) fail(i, "a timing event recorded inside a capture");
        if (c.kind == Kind::kRecordStart) start = i;
        if (c.kind == Kind::kRecordFinish) finish = i;
        if ((c.kind == Kind::kUnitBegin || c.kind == Kind::kUnitEnd) && p.graph)
          fail(i, "per-unit timing in a replayed run");
        break;
      case Kind::kGraphLaunch:
        if (capturing) fail(i, "graph launched inside a capture");
        if (!r.captures.contains(p.range)) fail(i, "launch of a range never captured");
        launched = true;
        launch = i;
        ++r.launches;
        break;
      case Kind::kStep: {
        if (p.graph && !capturing) fail(i, "a plan step issued outside the capture");
        const sched::Step& step = plan.lanes[c.lane].steps[c.index];
        if (c.index < steps_seen[c.lane]) fail(i, "a lane's steps out of order");
        steps_seen[c.lane] = c.index + 1;
        if (const auto* rec = std::get_if<sched::RecordStep>(&step); rec && capturing)
          recorded_in_capture.insert(rec->event);
        if (const auto* w = std::get_if<sched::WaitStep>(&step);
            w && capturing && !recorded_in_capture.contains(w->event))
          fail(i, "a captured wait on event e" + std::to_string(w->event) +
                      " not recorded earlier in the same capture");
        break;
      }
      case Kind::kCopyIn:
      case Kind::kCopyOut:
        if (capturing) fail(i, "a copy inside the capture");
        if (start && !finish && c.kind == Kind::kCopyIn) fail(i, "copy-in inside the timing");
        if (start && !finish && c.kind == Kind::kCopyOut) fail(i, "copy-out inside the timing");
        break;
      case Kind::kFork:
      case Kind::kJoin:
        break;
    }
  }
  if (capturing) problems.push_back("capture never ended");
  if (!start || !finish || *start > *finish) problems.push_back("no start..finish timing");
  if (p.graph) {
    if (!launched) problems.push_back("a replayed run with no graph launch");
    // The launch is bracketed by the two timing events, nothing else between them.
    if (start && finish && launch && !(*start + 1 == *launch && *launch + 1 == *finish))
      problems.push_back("timing does not bracket the graph launch alone");
  } else if (launched) {
    problems.push_back("an eager run launched a graph");
  }
  // Every launch of the range, exactly once, when the steps are issued (eager or captured).
  const bool issues_steps = !p.graph || !o.captured;
  if (issues_steps)
    for (const sched::IssueSegment& seg : sched::issue_order(plan, p.range.first, p.range.last))
      for (uint32_t s = seg.begin; s < seg.end; ++s)
        if (std::holds_alternative<sched::LaunchStep>(plan.lanes[seg.lane].steps[s]) &&
            std::find(p.commands.begin(), p.commands.end(), Command{Kind::kStep, seg.lane, s}) ==
                p.commands.end())
          problems.push_back("launch lane " + std::to_string(seg.lane) + " #" + std::to_string(s) +
                             " never issued");
  return problems;
}

// One run of blocks [first, last) on `r`, as CudaPrepared::run_blocks makes it.
void run(const sched::ExecutionPlan& plan, FakeRequest& r, size_t first, size_t last, bool graph,
         bool time_units, const std::string& what) {
  IssueOptions o{.num_inputs = 1,
                 .num_outputs = 1,
                 .first_block = first,
                 .last_block = last,
                 .graph = graph,
                 .time_units = time_units};
  o.captured = r.captures.contains(block_range(plan, first, last));
  const IssueProgram p = issue_program(plan, o);
  for (const std::string& problem : walk(plan, p, r, o)) ADD_FAILURE() << what << ": " << problem;
}

TEST(IssueProgram, TimingNeverInsideACaptureOnEveryZooModelAndPlan) {
  for (const models::ZooEntry& entry : models::zoo()) {
    models::LoadOptions load;
    load.with_weights = false;
    if (entry.name == "bert") load.zoo.layers = 2;
    const models::LoadedModel m = models::load_model(std::string(entry.name), load);
    cost::RooflineCostModel roofline(m.units);
    for (const char* algo : {"sequential", "ios", "lios"}) {
      const sched::Schedule s = sched::make_scheduler(algo, {})->schedule(m.units, roofline);
      const sched::ExecutionPlan plan = sched::lower(m.units, s);
      const std::string what = std::string(entry.name) + " " + algo;
      ASSERT_GE(plan.num_blocks, 1u) << what;
      for (bool graph : {false, true}) {
        FakeRequest r;
        const std::string mode = what + (graph ? " graph" : " eager");
        for (int repeat = 0; repeat < 2; ++repeat) {
          run(plan, r, 0, plan.num_blocks, graph, false, mode + " whole");
          for (size_t b = 0; b < plan.num_blocks; ++b)
            run(plan, r, b, b + 1, graph, false, mode + " block " + std::to_string(b));
          if (plan.num_blocks >= 2) run(plan, r, 0, 2, graph, false, mode + " blocks 0..2");
          run(plan, r, 0, SIZE_MAX, graph, true, mode + " observed");
        }
        if (!graph) {
          EXPECT_TRUE(r.captures.empty()) << mode;
          continue;
        }
        // One graph per block range, captured on its first run, replayed on the second.
        std::set<BlockRange> ranges = {{0, plan.num_blocks}};
        for (size_t b = 0; b < plan.num_blocks; ++b) ranges.insert({b, b + 1});
        if (plan.num_blocks >= 2) ranges.insert({0, 2});
        EXPECT_EQ(r.captures.size(), ranges.size()) << mode;
        for (const auto& [range, count] : r.captures)
          EXPECT_EQ(count, 1) << mode << " range " << range.first << ".." << range.last;
      }
    }
  }
}

TEST(IssueProgram, ObservedRunsGoEagerWithEventsAroundEveryUnit) {
  models::LoadOptions load;
  load.with_weights = false;
  const models::LoadedModel m = models::load_model("squeezenet", load);
  cost::RooflineCostModel roofline(m.units);
  const sched::ExecutionPlan plan =
      sched::lower(m.units, sched::make_scheduler("ios", {})->schedule(m.units, roofline));
  const IssueProgram p = issue_program(plan, {.num_inputs = 1,
                                              .num_outputs = 1,
                                              .last_block = plan.num_blocks,
                                              .graph = true,
                                              .time_units = true});
  EXPECT_FALSE(p.graph);
  size_t begins = 0;
  for (const Command& c : p.commands) begins += c.kind == Kind::kUnitBegin;
  EXPECT_EQ(begins, m.units.num_units());
}

TEST(IssueProgram, ReplayIsTheDefaultAndCopiesStayOutsideTheGraph) {
  models::LoadOptions load;
  load.with_weights = false;
  const models::LoadedModel m = models::load_model("squeezenet", load);
  cost::RooflineCostModel roofline(m.units);
  const sched::ExecutionPlan plan =
      sched::lower(m.units, sched::make_scheduler("sequential", {})->schedule(m.units, roofline));
  EXPECT_TRUE(IssueOptions{}.graph);
  const IssueProgram replay = issue_program(
      plan, {.num_inputs = 1, .num_outputs = 1, .last_block = plan.num_blocks, .captured = true});
  const std::vector<Command> expected = {{Kind::kCopyIn},
                                         {Kind::kRecordStart},
                                         {Kind::kGraphLaunch},
                                         {Kind::kRecordFinish},
                                         {Kind::kCopyOut}};
  EXPECT_EQ(replay.commands, expected);
}

}  // namespace
}  // namespace braid::exec::cuda
