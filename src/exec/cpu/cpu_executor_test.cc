#include "exec/cpu/cpu_executor.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <optional>
#include <random>
#include <thread>

#include "base/error.h"

#include "cost/roofline.h"
#include "exec/cpu/cpu_kernels.h"
#include "exec/merge_test_model.h"
#include "exec/ref/ref_executor.h"
#include "models/zoo.h"
#include "sched/lower.h"
#include "sched/merge.h"
#include "sched/random_schedule.h"
#include "sched/registry.h"
#include "sched/validate.h"

namespace braid::exec {
namespace {

struct Model {
  std::shared_ptr<const ir::Graph> graph;
  std::shared_ptr<const ir::Weights> weights;
  ir::UnitGraph units;
  std::vector<std::vector<float>> inputs;
};

Model make_model(const std::string& name, models::ZooOptions options) {
  Model m;
  m.graph = std::make_shared<const ir::Graph>(models::build_zoo_model(name, options));
  m.weights = std::make_shared<const ir::Weights>(ir::Weights::generate(*m.graph, 7));
  m.units = ir::fuse(m.graph);
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (ValueId v : m.graph->inputs()) {
    std::vector<float> x(m.graph->value(v).type.elements());
    for (float& f : x) f = dist(rng);
    m.inputs.push_back(std::move(x));
  }
  return m;
}

std::vector<std::vector<float>> run_cpu(const Model& m, const sched::Schedule& s,
                                        const CpuExecutorOptions& options = {},
                                        bool block_by_block = false) {
  sched::validate_or_throw(m.units, s);
  sched::ExecutionPlan plan = sched::lower(m.units, s);
  auto model = make_cpu_executor(options)->prepare({m.graph, m.weights, &m.units, &plan});
  auto request = model->new_request();
  for (size_t i = 0; i < m.inputs.size(); ++i) model->set_input(*request, i, m.inputs[i]);
  if (block_by_block) {
    for (size_t b = 0; b < model->num_blocks(); ++b)
      EXPECT_GT(model->run_blocks(*request, b, b + 1).device_time.count(), 0) << "block " << b;
  } else {
    EXPECT_GT(model->run(*request).device_time.count(), 0);  // the wall clock of the run
  }
  std::vector<std::vector<float>> outs;
  for (size_t i = 0; i < m.graph->outputs().size(); ++i) {
    auto o = model->output(*request, i);
    outs.emplace_back(o.begin(), o.end());
  }
  return outs;
}

// Relative closeness: max |a - b| <= rtol * max|b| (random weights make output scales vary).
void expect_close(const std::vector<float>& a, const std::vector<float>& b, double rtol,
                  const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  double scale = 0, err = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    scale = std::max(scale, std::abs(double(b[i])));
    err = std::max(err, std::abs(double(a[i]) - double(b[i])));
    ASSERT_TRUE(std::isfinite(a[i])) << what << " element " << i;
  }
  EXPECT_LE(err, rtol * std::max(scale, 1e-30))
      << what << ": max error " << err << ", scale " << scale;
}

struct Case {
  const char* model;
  int64_t image_size;
};

class CpuExecutorZoo : public ::testing::TestWithParam<Case> {};

// The CPU executor against the reference executor (naive loops), and the outputs of sequential,
// greedy and 20 random schedules against each other: a schedule must never change the result.
TEST_P(CpuExecutorZoo, MatchesReferenceUnderEverySchedule) {
  const Case& c = GetParam();
  Model m;
  try {
    m = make_model(c.model, {.batch = 1, .image_size = c.image_size});
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kUnsupported) GTEST_SKIP() << e.what();
    throw;
  }
  auto expected = ref::run_reference(*m.graph, *m.weights, m.inputs);
  auto sequential = run_cpu(m, sched::make_scheduler("sequential")->schedule(m.units));
  for (size_t i = 0; i < expected.size(); ++i)
    expect_close(sequential[i], expected[i], 1e-4, "sequential vs reference");
  auto greedy = run_cpu(m, sched::make_scheduler("greedy")->schedule(m.units));
  EXPECT_EQ(greedy, sequential) << "greedy";
  EXPECT_EQ(run_cpu(m, sched::make_scheduler("greedy")->schedule(m.units), {}, true), sequential)
      << "greedy, one block at a time";
  for (uint64_t seed = 0; seed < 20; ++seed) {
    auto random = run_cpu(m, sched::random_stream_schedule(m.units, 1 + seed % 4, seed));
    EXPECT_EQ(random, sequential) << "random schedule seed " << seed;
  }
  // Allotments: units widen and narrow (1..2 threads each) within one plan, in both forms.
  for (uint64_t seed = 0; seed < 4; ++seed) {
    const sched::Schedule lanes = sched::with_random_allotment(
        sched::random_stream_schedule(m.units, 1 + seed % 3, seed), 2, seed);
    EXPECT_EQ(run_cpu(m, lanes), sequential) << "random allotment on streams, seed " << seed;
  }
  EXPECT_EQ(run_cpu(m, sched::with_random_allotment(
                           sched::make_scheduler("greedy")->schedule(m.units), 2, 5)),
            sequential)
      << "random allotment on greedy's stages";
  // The allotment schedulers on two cores (roofline costs).
  const cost::RooflineCostModel two_cores(m.units, {.cores = 2});
  for (const char* name : {"intra", "moldable", "ios-threads"})
    EXPECT_EQ(run_cpu(m, sched::make_scheduler(name, {.cores = 2})->schedule(m.units, two_cores)),
              sequential)
        << name;
  // optimal-threads where its blocks are small enough (it refuses larger ones, by design).
  std::optional<sched::Schedule> exact;
  try {
    exact = sched::make_scheduler("optimal-threads", {.cores = 2})->schedule(m.units, two_cores);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
  }
  if (exact) {
    EXPECT_EQ(run_cpu(m, *exact), sequential) << "optimal-threads";
  }
}

INSTANTIATE_TEST_SUITE_P(Models, CpuExecutorZoo,
                         ::testing::Values(Case{"squeezenet", 64}, Case{"inception_v3", 107},
                                           Case{"randwire", 64}, Case{"nasnet", 96},
                                           Case{"googlenet", 64}, Case{"resnet50", 64},
                                           Case{"tv_inception_v3", 107},
                                           Case{"tv_squeezenet1_0", 64}),
                         [](const auto& info) { return std::string(info.param.model); });

TEST(CpuExecutor, TwoThreadsPerStreamMatchesReference) {
  Model m = make_model("squeezenet", {.batch = 2, .image_size = 64});
  auto expected = ref::run_reference(*m.graph, *m.weights, m.inputs);
  auto got =
      run_cpu(m, sched::make_scheduler("greedy")->schedule(m.units), {.threads_per_stream = 2});
  expect_close(got[0], expected[0], 1e-4, "2 threads per stream");
}

// Every activation layout gives the reference's outputs, and producers writing straight into
// their window of a Concat's output (plain and nChw16c allow it) give exactly what copying
// gives, under any schedule. Inception V3 has 11 channel concats.
TEST(CpuExecutor, LayoutsAndInPlaceConcatsAgree) {
  Model m = make_model("inception_v3", {.batch = 1, .image_size = 107});
  auto expected = ref::run_reference(*m.graph, *m.weights, m.inputs);
  const sched::Schedule greedy = sched::make_scheduler("greedy")->schedule(m.units);
  const sched::Schedule random = sched::random_stream_schedule(m.units, 3, 5);
  for (TensorLayout layout :
       {TensorLayout::kPlain, TensorLayout::kNhwc, TensorLayout::kNChw8c, TensorLayout::kNChw16c}) {
    const std::string name = "layout " + std::to_string(static_cast<int>(layout));
    auto copied = run_cpu(m, greedy, {.concat_in_place = false, .layout = layout});
    expect_close(copied[0], expected[0], 1e-4, name);
    EXPECT_EQ(run_cpu(m, greedy, {.layout = layout}), copied) << name;
    EXPECT_EQ(run_cpu(m, random, {.layout = layout}), copied) << name << ", random schedule";
  }
}

// The profiler runs a stage cut out of a model in the layouts its values have in the model,
// graph inputs and outputs included (CpuExecutorOptions::value_layouts): data then goes in and
// comes out in that layout.
TEST(CpuExecutor, ValueLayoutsLayOutInputsAndOutputs) {
  ir::GraphBuilder b("stage");
  const ValueId x = b.add_input("x", {ir::DType::kFloat32, {1, 16, 5, 6}});
  const ValueId conv = b.add_op(
      ir::OpKind::Conv, ir::ConvAttrs{.kernel = {3, 3}, .pads = {1, 1, 1, 1}},
      {x, b.add_parameter("w", {ir::DType::kFloat32, {16, 16, 3, 3}}, ir::ParamInit::normal(0.2f))},
      "conv");
  b.mark_output(b.add_op(ir::OpKind::Relu, {}, {conv}, "relu"));
  Model m;
  m.graph = std::make_shared<const ir::Graph>(std::move(b).build());
  m.weights = std::make_shared<const ir::Weights>(ir::Weights::generate(*m.graph, 7));
  m.units = ir::fuse(m.graph);
  std::vector<float> plain(16 * 5 * 6);
  for (size_t i = 0; i < plain.size(); ++i) plain[i] = std::sin(static_cast<float>(i));
  const auto want =
      ref::run_reference(*m.graph, *m.weights, std::vector<std::vector<float>>{plain})[0];
  // [1, C, H, W] <-> [1, H, W, C]
  auto nhwc_index = [](size_t c, size_t h, size_t w) { return (h * 6 + w) * 16 + c; };
  std::vector<float> in_nhwc(plain.size());
  for (size_t c = 0; c < 16; ++c)
    for (size_t h = 0; h < 5; ++h)
      for (size_t w = 0; w < 6; ++w) in_nhwc[nhwc_index(c, h, w)] = plain[(c * 5 + h) * 6 + w];
  m.inputs = {in_nhwc};
  const std::vector<TensorLayout> layouts(m.graph->num_values(), TensorLayout::kNhwc);
  std::vector<TensorLayout> with_params = layouts;
  for (size_t i = 0; i < m.graph->num_values(); ++i)
    if (m.graph->values()[i].kind == ir::ValueKind::kParameter)
      with_params[i] = TensorLayout::kPlain;
  const auto got = run_cpu(m, sched::make_scheduler("sequential")->schedule(m.units),
                           {.value_layouts = with_params})[0];
  std::vector<float> got_plain(got.size());
  for (size_t c = 0; c < 16; ++c)
    for (size_t h = 0; h < 5; ++h)
      for (size_t w = 0; w < 6; ++w) got_plain[(c * 5 + h) * 6 + w] = got[nhwc_index(c, h, w)];
  expect_close(got_plain, want, 1e-4, "nhwc input and output");

  // A parameter cannot be blocked (kernels read weights plain): refused, not misread.
  try {
    run_cpu(m, sched::make_scheduler("sequential")->schedule(m.units), {.value_layouts = layouts});
    FAIL() << "expected braid::Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("cannot be laid out as nhwc"), std::string::npos)
        << e.what();
  }
}

// A schedule with a missing wait would race; the validator refuses it before any executor
// can prepare it.
TEST(CpuExecutor, MissingWaitIsRejectedBeforeItCanRace) {
  Model m = make_model("squeezenet", {.batch = 1, .image_size = 64});
  sched::Schedule s = sched::random_stream_schedule(m.units, 3, 11);
  ASSERT_FALSE(s.syncs.empty());
  s.syncs.pop_back();
  EXPECT_THROW(sched::validate_or_throw(m.units, s), Error);
}

TEST(CpuExecutor, BlocksMustRunInOrder) {
  Model m = make_model("squeezenet", {.batch = 1, .image_size = 64});
  sched::ExecutionPlan plan =
      sched::lower(m.units, sched::make_scheduler("sequential")->schedule(m.units));
  auto model = make_cpu_executor()->prepare({m.graph, m.weights, &m.units, &plan});
  auto request = model->new_request();
  ASSERT_GT(model->num_blocks(), 2u);
  EXPECT_THROW(model->run_blocks(*request, 1, 2), Error);
}

// TOP's block pipelining (top.txt §IV): requests of one prepared model advance block by block
// in any interleaving — A's block 0, B's block 0, A's block 1, ... — and from two threads at
// once (side by side, on different workers of the executor's pool). Each request has its own arena
// and events, so the values must be exactly those of a whole run. Three random lanes, so blocks end
// with events that a later block's lanes wait on.
TEST(CpuExecutor, RequestsOfOneModelInterleaveBlockByBlock) {
  Model m = make_model("inception_v3", {.batch = 1, .image_size = 107});
  const sched::ExecutionPlan plan =
      sched::lower(m.units, sched::random_stream_schedule(m.units, 3, 4));
  auto model =
      make_cpu_executor({.pin_threads = false})->prepare({m.graph, m.weights, &m.units, &plan});
  ASSERT_GT(model->num_blocks(), 2u);
  constexpr size_t kRequests = 4;
  std::vector<std::vector<float>> inputs(kRequests, m.inputs[0]);
  for (size_t r = 0; r < kRequests; ++r)
    for (size_t k = 0; k < inputs[r].size(); ++k)
      inputs[r][k] *= 1.0f - 0.5f * float(r) * (k % 2 ? 1 : -1);
  auto output_of = [&](const Request& request) {
    auto o = model->output(request, 0);
    return std::vector<float>(o.begin(), o.end());
  };
  std::vector<std::vector<float>> want;
  for (size_t r = 0; r < kRequests; ++r) {
    auto request = model->new_request();
    model->set_input(*request, 0, inputs[r]);
    model->run(*request);
    want.push_back(output_of(*request));
  }
  ASSERT_NE(want[0], want[1]) << "the requests' inputs must lead to different outputs";

  // One thread, round robin over the requests, block by block.
  std::vector<std::unique_ptr<Request>> requests;
  for (size_t r = 0; r < kRequests; ++r) {
    requests.push_back(model->new_request());
    model->set_input(*requests[r], 0, inputs[r]);
  }
  for (size_t b = 0; b < model->num_blocks(); ++b)
    for (size_t r = 0; r < kRequests; ++r) model->run_blocks(*requests[r], b, b + 1);
  for (size_t r = 0; r < kRequests; ++r)
    EXPECT_EQ(output_of(*requests[r]), want[r]) << "round robin, request " << r;

  // Two threads, two requests each, in opposite input order; the requests are reused, so their
  // arenas hold another inference's values when they start.
  std::vector<std::thread> threads;
  for (size_t t = 0; t < 2; ++t)
    threads.emplace_back([&, t] {
      for (size_t i = 0; i < 2; ++i) {
        Request& request = *requests[2 * t + i];
        model->set_input(request, 0, inputs[kRequests - 1 - (2 * t + i)]);
      }
      for (size_t b = 0; b < model->num_blocks(); ++b)
        for (size_t i = 0; i < 2; ++i) model->run_blocks(*requests[2 * t + i], b, b + 1);
    });
  for (std::thread& t : threads) t.join();
  for (size_t r = 0; r < kRequests; ++r)
    EXPECT_EQ(output_of(*requests[r]), want[kRequests - 1 - r]) << "two threads, request " << r;
}

// Requests of one model from two threads really run side by side: the units of one request
// overlap in time with those of the other (a lock around run_blocks would keep them apart).
TEST(CpuExecutor, RequestsOfOneModelRunSideBySide) {
  Model m = make_model("squeezenet", {.batch = 1, .image_size = 96});
  const sched::ExecutionPlan plan =
      sched::lower(m.units, sched::make_scheduler("sequential")->schedule(m.units));
  auto model =
      make_cpu_executor({.pin_threads = false})->prepare({m.graph, m.weights, &m.units, &plan});
  ASSERT_TRUE(model->concurrent_requests());
  using Clock = std::chrono::steady_clock;
  struct Interval {
    Clock::time_point begin, end;
  };
  // Unit times are relative to the run's start; each thread adds its own reading of the clock
  // taken just before the call (the run starts after it, so intervals only move earlier by the
  // call's few microseconds).
  struct Recorder : RunObserver {
    Clock::time_point t0;
    std::vector<Interval>* out;
    void on_unit(size_t, UnitId, Micros begin, Micros end) override {
      out->push_back({t0 + std::chrono::duration_cast<Clock::duration>(begin),
                      t0 + std::chrono::duration_cast<Clock::duration>(end)});
    }
  };
  std::vector<Interval> units[2];
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t)
    threads.emplace_back([&, t] {
      auto request = model->new_request();
      model->set_input(*request, 0, m.inputs[0]);
      Recorder recorder;
      recorder.out = &units[t];
      for (int i = 0; i < 30; ++i) {
        recorder.t0 = Clock::now();
        model->run(*request, &recorder);
      }
    });
  for (std::thread& t : threads) t.join();
  const auto slack = std::chrono::microseconds(50);
  size_t overlapping = 0;
  for (const Interval& a : units[0])
    for (const Interval& b : units[1])
      if (a.begin + slack < b.end && b.begin + slack < a.end) ++overlapping;
  EXPECT_GT(overlapping, 0u) << "no unit of one request ran while the other's did";
}

// Models prepared for runs of units (the memory plan reuses by dependences only).
struct UnitRunModel {
  Model m;
  sched::ExecutionPlan plan;
  std::unique_ptr<PreparedModel> prepared;
};

// TOP's combined blocks on the CPU: units of three requests of two models, one block at a time,
// in stages of units at the same depth within the block, each stage's units spread over lanes
// side by side — an order no plan of either model has. The outputs must be those of a whole run.
TEST(CpuExecutor, UnitsOfSeveralModelsRunSideBySide) {
  auto executor =
      make_cpu_executor({.pin_threads = false, .memory = {.order = ReuseOrder::kDependences}});
  std::vector<UnitRunModel> models(2);
  models[0].m = make_model("inception_v3", {.batch = 1, .image_size = 107});
  models[1].m = make_model("squeezenet", {.batch = 1, .image_size = 64});
  for (UnitRunModel& x : models) {
    x.plan = sched::lower(x.m.units, sched::make_scheduler("sequential")->schedule(x.m.units));
    x.prepared = executor->prepare({x.m.graph, x.m.weights, &x.m.units, &x.plan});
  }
  struct Req {
    size_t model;
    std::unique_ptr<Request> request;
    std::vector<float> want;
  };
  std::vector<Req> reqs;
  for (size_t r = 0; r < 3; ++r) {
    const size_t mi = r == 2 ? 1 : 0;
    UnitRunModel& x = models[mi];
    std::vector<float> input = x.m.inputs[0];
    for (float& f : input) f *= 1.0f + 0.25f * float(r);
    Req q{mi, x.prepared->new_request(), {}};
    x.prepared->set_input(*q.request, 0, input);
    x.prepared->run(*q.request);
    auto o = x.prepared->output(*q.request, 0);
    q.want.assign(o.begin(), o.end());
    x.prepared->set_input(*q.request, 0, input);  // runs of units start on the same input
    x.prepared->start_inference(*q.request);
    reqs.push_back(std::move(q));
  }
  ASSERT_NE(reqs[0].want, reqs[1].want);
  // Depth of each unit within its block: 1 + the deepest predecessor in the same block.
  auto depths = [](const UnitRunModel& x) {
    std::vector<size_t> depth(x.m.units.num_units(), 0);
    for (size_t u = 0; u < depth.size(); ++u)  // ids are topological
      for (UnitId p : x.m.units.predecessors(make_id<UnitId>(u)))
        if (x.plan.block_of_unit[index(p)] == x.plan.block_of_unit[u])
          depth[u] = std::max(depth[u], depth[index(p)] + 1);
    return depth;
  };
  const std::vector<size_t> depth[2] = {depths(models[0]), depths(models[1])};
  const size_t blocks = std::max(models[0].plan.num_blocks, models[1].plan.num_blocks);
  size_t stages = 0;
  for (size_t b = 0; b < blocks; ++b)
    for (size_t d = 0;; ++d) {
      std::vector<std::vector<UnitCall>> lanes;
      for (Req& q : reqs) {
        UnitRunModel& x = models[q.model];
        std::vector<UnitCall> mine[2];
        size_t k = 0;
        for (size_t u = 0; u < depth[q.model].size(); ++u)
          if (x.plan.block_of_unit[u] == b && depth[q.model][u] == d)
            mine[k++ % 2].push_back({x.prepared.get(), q.request.get(), make_id<UnitId>(u)});
        for (auto& lane : mine)
          if (!lane.empty()) lanes.push_back(std::move(lane));
      }
      if (lanes.empty()) break;
      executor->run_side_by_side(lanes);
      ++stages;
    }
  EXPECT_GT(stages, blocks);
  for (size_t r = 0; r < reqs.size(); ++r) {
    auto o = models[reqs[r].model].prepared->output(*reqs[r].request, 0);
    EXPECT_EQ(std::vector<float>(o.begin(), o.end()), reqs[r].want) << "request " << r;
  }
}

// Runs of units and of blocks mix in one inference: block 0 unit by unit, the rest by the plan.
// Units out of their dependences' order, twice, or of a model prepared for its plan's order
// only are refused before they run.
TEST(CpuExecutor, UnitRunsAreCheckedAndMixWithBlockRuns) {
  auto executor =
      make_cpu_executor({.pin_threads = false, .memory = {.order = ReuseOrder::kDependences}});
  Model m = make_model("squeezenet", {.batch = 1, .image_size = 64});
  const sched::ExecutionPlan plan =
      sched::lower(m.units, sched::make_scheduler("greedy")->schedule(m.units));
  auto model = executor->prepare({m.graph, m.weights, &m.units, &plan});
  auto request = model->new_request();
  model->set_input(*request, 0, m.inputs[0]);
  model->run(*request);
  auto o = model->output(*request, 0);
  const std::vector<float> want(o.begin(), o.end());

  model->set_input(*request, 0, m.inputs[0]);
  model->start_inference(*request);
  std::vector<UnitId> block0;
  for (size_t u = 0; u < plan.block_of_unit.size(); ++u)
    if (plan.block_of_unit[u] == 0) block0.push_back(make_id<UnitId>(u));
  ASSERT_GE(block0.size(), 2u);
  // The second unit of block 0 before the first (its input).
  std::vector<std::vector<UnitCall>> wrong = {{{model.get(), request.get(), block0[1]}}};
  try {
    executor->run_side_by_side(wrong);
    ADD_FAILURE() << "a unit ran before its input";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("whose output it reads"), std::string::npos) << e.what();
  }
  EXPECT_THROW(model->run_blocks(*request, 1, 2), Error);  // block 0 not done
  std::vector<std::vector<UnitCall>> first_block(1);
  for (UnitId u : block0) first_block[0].push_back({model.get(), request.get(), u});
  executor->run_side_by_side(first_block);
  EXPECT_THROW(executor->run_side_by_side(first_block), Error);  // twice in one inference
  model->start_inference(*request);
  executor->run_side_by_side(first_block);
  model->run_blocks(*request, 1, model->num_blocks());
  o = model->output(*request, 0);
  EXPECT_EQ(std::vector<float>(o.begin(), o.end()), want);

  // A model prepared for its plan's order only, and a model of another executor.
  auto plain =
      make_cpu_executor({.pin_threads = false})->prepare({m.graph, m.weights, &m.units, &plan});
  auto plain_request = plain->new_request();
  std::vector<std::vector<UnitCall>> other = {{{plain.get(), plain_request.get(), block0[0]}}};
  EXPECT_THROW(executor->run_side_by_side(other), Error);
}

// An input bound in place is read from the caller's buffer by every run of the request until
// set_input copies one instead: a run after the buffer changes sees the change, a run after
// set_input does not. GoogLeNet under greedy: several lanes read the input.
TEST(CpuExecutor, InputsBoundInPlaceAreReadFromTheCallersBuffer) {
  Model m = make_model("googlenet", {.batch = 1, .image_size = 48});
  const sched::ExecutionPlan plan =
      sched::lower(m.units, sched::make_scheduler("greedy")->schedule(m.units));
  auto model =
      make_cpu_executor({.pin_threads = false})->prepare({m.graph, m.weights, &m.units, &plan});
  auto output_of = [&](Request& r) {
    model->run(r);
    auto o = model->output(r, 0);
    return std::vector<float>(o.begin(), o.end());
  };
  const std::vector<float> a = m.inputs[0];
  std::vector<float> b(a.size());
  for (size_t k = 0; k < b.size(); ++k) b[k] = std::sin(float(k));
  auto copied = model->new_request();
  model->set_input(*copied, 0, a);
  const std::vector<float> want_a = output_of(*copied);
  model->set_input(*copied, 0, b);
  const std::vector<float> want_b = output_of(*copied);
  ASSERT_NE(want_a, want_b);

  std::vector<float> buffer = a;
  auto bound = model->new_request();
  ASSERT_TRUE(model->bind_input(*bound, 0, std::as_bytes(std::span(buffer))));
  EXPECT_EQ(output_of(*bound), want_a);
  buffer = b;  // same storage: no rebinding
  EXPECT_EQ(output_of(*bound), want_b);
  model->set_input(*bound, 0, a);  // a copy: the binding is dropped
  std::fill(buffer.begin(), buffer.end(), 0.0f);
  EXPECT_EQ(output_of(*bound), want_a);

  // A misaligned buffer is not bound (the caller copies); a wrong size is an error.
  std::vector<std::byte> shifted(buffer.size() * sizeof(float) + 1);
  EXPECT_FALSE(model->bind_input(*bound, 0, std::span(shifted).subspan(1)));
  try {
    model->bind_input(*bound, 0, std::span(shifted).first(12));
    ADD_FAILURE() << "a 12-byte input was bound";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("got 12"), std::string::npos) << e.what();
  }
}

// Views of an input lie in its storage, so they follow a binding; an input a view of which is a
// graph output is not bound (outputs are read from the request after the run).
TEST(CpuExecutor, ViewsOfABoundInputFollowItAndOutputViewsRefuseIt) {
  auto build = [](bool view_is_output) {
    ir::GraphBuilder b("views");
    const ValueId x = b.add_input("x", {ir::DType::kFloat32, {2, 3}});
    const ValueId v = b.add_op(ir::OpKind::Reshape, ir::ReshapeAttrs{{3, 2}}, {x}, "view");
    b.mark_output(b.add_op(ir::OpKind::Relu, {}, {v}, "relu"));
    if (view_is_output) b.mark_output(v);
    return std::make_shared<const ir::Graph>(std::move(b).build());
  };
  for (bool view_is_output : {false, true}) {
    Model m;
    m.graph = build(view_is_output);
    m.weights = std::make_shared<const ir::Weights>(ir::Weights::generate(*m.graph, 1));
    m.units = ir::fuse(m.graph);
    const sched::ExecutionPlan plan =
        sched::lower(m.units, sched::make_scheduler("sequential")->schedule(m.units));
    auto model =
        make_cpu_executor({.pin_threads = false})->prepare({m.graph, m.weights, &m.units, &plan});
    auto request = model->new_request();
    const std::vector<float> x = {-1, 2, -3, 4, -5, 6};
    const bool bound = model->bind_input(*request, 0, std::as_bytes(std::span(x)));
    EXPECT_EQ(bound, !view_is_output);
    if (!bound) model->set_input(*request, 0, x);
    model->run(*request);
    auto y = model->output(*request, 0);
    EXPECT_EQ(std::vector<float>(y.begin(), y.end()), (std::vector<float>{0, 2, 0, 4, 0, 6}))
        << (view_is_output ? "copied" : "bound");
    if (view_is_output) {
      auto v = model->output(*request, 1);
      EXPECT_EQ(std::vector<float>(v.begin(), v.end()), x);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Operator merge (ios.txt §4.2): convs sharing an input run as one oneDNN convolution.

// The model of exec/merge_test_model.h (shared with the CUDA executor's tests).
Model merge_model() {
  testing::MergeTestModel t = testing::merge_test_model();
  return Model{t.graph, t.weights, std::move(t.units), std::move(t.inputs)};
}
using testing::merge_schedule;

TEST(CpuExecutorMerge, MergedConvEqualsTheConvsOneByOne) {
  const Model m = merge_model();
  ASSERT_EQ(m.units.signature(*m.units.find_unit("three")), "Conv-Relu");
  ASSERT_EQ(m.units.signature(*m.units.find_unit("bn_conv")), "Conv-BatchNormalization-Relu");
  const sched::Schedule merged = merge_schedule(m.units, {"one", "three", "five"});
  const sched::ExecutionPlan plan = sched::lower(m.units, merged);
  ASSERT_EQ(plan.merges.size(), 1u);
  ASSERT_EQ(plan.merges[0].size(), 3u);
  const auto expected = ref::run_reference(*m.graph, *m.weights, m.inputs);
  for (TensorLayout layout : {TensorLayout::kNhwc, TensorLayout::kPlain})
    for (bool in_place : {true, false}) {
      const std::string what = std::string(layout == TensorLayout::kNhwc ? "nhwc" : "plain") +
                               (in_place ? ", concat in place" : ", concat copies");
      const CpuExecutorOptions options{.concat_in_place = in_place, .layout = layout};
      const auto one_by_one =
          run_cpu(m, sched::make_scheduler("sequential")->schedule(m.units), options);
      const auto got = run_cpu(m, merged, options);
      ASSERT_EQ(got.size(), expected.size());
      for (size_t i = 0; i < got.size(); ++i) {
        // The same sums with zero terms added: only oneDNN's order of accumulation differs.
        expect_close(got[i], one_by_one[i], 1e-5,
                     what + ", merged vs one by one, output " + std::to_string(i));
        expect_close(got[i], expected[i], 1e-4, what + ", merged vs reference");
      }
      // Block by block: the merge's units lie in one block.
      EXPECT_EQ(run_cpu(m, merged, options, true), got) << what;
    }
  // Two inferences on one request: the second runs the merged kernel again (its units are done
  // only in the first inference's epoch).
  auto model = make_cpu_executor()->prepare({m.graph, m.weights, &m.units, &plan});
  auto request = model->new_request();
  model->set_input(*request, 0, m.inputs[0]);
  model->run(*request);
  const auto first = model->output(*request, 1);
  const std::vector<float> first_five(first.begin(), first.end());
  std::vector<float> zeros(m.inputs[0].size(), 0.0f);
  model->set_input(*request, 0, zeros);
  model->run(*request);
  const auto second = model->output(*request, 1);
  const std::vector<float> second_five(second.begin(), second.end());
  EXPECT_NE(first_five, second_five) << "the second inference did not recompute the merge";
  model->set_input(*request, 0, m.inputs[0]);
  model->run(*request);
  const auto third = model->output(*request, 1);
  EXPECT_EQ(std::vector<float>(third.begin(), third.end()), first_five);
}

TEST(CpuExecutorMerge, MergedKernelIsBuiltOrRefusedWithAReason) {
  const Model m = merge_model();
  const ir::Graph& g = *m.graph;
  auto ops_of = [&](std::string_view name) {
    const auto ops = m.units.unit(*m.units.find_unit(name)).ops;
    return std::vector<NodeId>(ops.begin(), ops.end());
  };
  TensorLocator locate = [&](ValueId v) {
    TensorRef ref;
    ref.type = g.value(v).type;
    if (g.value(v).kind == ir::ValueKind::kParameter)
      ref.fixed = m.weights->data(v).data();
    else
      ref.arena_offset = static_cast<int64_t>(index(v)) * 64 * 1024;
    return ref;
  };
  const cpu::KernelBuildContext context{dnnl::engine(dnnl::engine::kind::cpu, 0)};
  std::string why;
  Bytes scratch = 0;
  const std::vector<std::vector<NodeId>> good{ops_of("one"), ops_of("three"), ops_of("five")};
  auto kernel = cpu::make_merged_conv_kernel(g, good, locate, context, &scratch, &why);
  ASSERT_NE(kernel, nullptr) << why;
  // One convolution over 8 + 6 + 5 channels, then one copy per conv.
  const std::vector<std::string> impls = cpu::implementation_names(*kernel);
  ASSERT_GE(impls.size(), 4u);
  EXPECT_GE(scratch, static_cast<Bytes>(19 * 12 * 12 * sizeof(float)));
  const std::vector<std::vector<NodeId>> skewed{ops_of("one"), ops_of("skewed")};
  EXPECT_EQ(cpu::make_merged_conv_kernel(g, skewed, locate, context, &scratch, &why), nullptr);
  EXPECT_EQ(why, "'skewed' is not centered in the merged kernel");
  const std::vector<std::vector<NodeId>> folded{ops_of("one"), ops_of("bn_conv")};
  EXPECT_NE(cpu::make_merged_conv_kernel(g, folded, locate, context, &scratch, &why), nullptr)
      << why;
}

}  // namespace
}  // namespace braid::exec
