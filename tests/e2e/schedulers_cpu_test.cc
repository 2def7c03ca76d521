// Every registered scheduler's schedule of every zoo model, planned through tune::plan_model (the
// one pipeline every front end uses) and run on the CPU executor, gives the outputs of the
// `sequential` schedule: a schedule only changes the order and concurrency of the same kernels.
// The schedulers come from sched::scheduler_names() and the models from models::zoo(), so a new
// entry in either is covered without touching this file (issue 31).
//
// Scheduling is priced with the roofline (FLOPs and bytes, no measurement) to stay fast; models
// are built small (image_sizes below, a 2-layer BERT).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "base/device.h"
#include "base/error.h"
#include "exec/cpu/cpu_executor.h"
#include "ir/unit_graph.h"
#include "ir/weights.h"
#include "models/zoo.h"
#include "ort_oracle.h"
#include "sched/lower.h"
#include "sched/registry.h"
#include "sched/validate.h"
#include "tune/planner.h"

namespace braid {
namespace {

using Outputs = std::vector<std::vector<float>>;

// Small inputs, the sizes cpu_executor_test.cc runs the zoo at; a model not listed builds at 64.
int64_t image_size(std::string_view model) {
  if (model.find("inception") != std::string_view::npos) return 107;
  if (model == "nasnet") return 96;
  return 64;
}

// Refusals by design, not failures: the exact schedulers (optimal, optimal-threads) bound the
// blocks they search (optimal.h's max_block_units and max_nodes) and say so with
// kInvalidArgument naming the limit; at these sizes optimal refuses NASNet and RandWire. Such a
// pair is skipped with the scheduler's message; any other error fails.
bool refuses_by_design(std::string_view scheduler, const Error& e) {
  const std::string_view what = e.what();
  return scheduler.starts_with("optimal") && e.code() == ErrorCode::kInvalidArgument &&
         (what.find("max_block_units") != what.npos || what.find("max_nodes") != what.npos);
}

struct Model {
  std::string name;
  std::shared_ptr<const ir::Graph> graph;
  std::shared_ptr<const ir::Weights> weights;
  ir::UnitGraph units;
  std::vector<std::vector<float>> inputs;
  Outputs sequential;
};

Outputs run_cpu(const Model& m, const sched::Schedule& s) {
  sched::validate_or_throw(m.units, s);
  const sched::ExecutionPlan plan = sched::lower(m.units, s);
  auto model = exec::make_cpu_executor({})->prepare({m.graph, m.weights, &m.units, &plan});
  auto request = model->new_request();
  for (size_t i = 0; i < m.inputs.size(); ++i) model->set_input(*request, i, m.inputs[i]);
  model->run(*request);
  Outputs outs;
  for (size_t i = 0; i < m.graph->outputs().size(); ++i) {
    auto o = model->output(*request, i);
    outs.emplace_back(o.begin(), o.end());
  }
  return outs;
}

tune::PlanOptions plan_options(std::string_view scheduler, int devices = 1) {
  return {.device = Device::cpu(),
          .algorithm = std::string(scheduler),
          .cost = {.model = tune::parse_cost_name("roofline")},
          .schedule_options = {.num_devices = devices}};
}

// Built once per model and process (gtest_discover_tests runs each pair in its own process; a
// whole-binary run shares them), with its sequential outputs.
const Model& model(const std::string& name) {
  static std::map<std::string, std::unique_ptr<Model>> cache;
  std::unique_ptr<Model>& slot = cache[name];
  if (slot) return *slot;
  cache.clear();  // one model at a time: the cases run model by model
  auto m = std::make_unique<Model>();
  m->name = name;
  m->graph = std::make_shared<const ir::Graph>(models::build_zoo_model(
      name,
      {.batch = 1, .image_size = image_size(name), .layers = 2, .seq_len = 16, .hidden = 128}));
  m->weights = std::make_shared<const ir::Weights>(ir::Weights::generate(*m->graph, 7));
  m->units = ir::fuse(m->graph);
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (ValueId v : m->graph->inputs()) {
    std::vector<float> x(m->graph->value(v).type.elements());
    for (float& f : x) f = dist(rng);
    m->inputs.push_back(std::move(x));
  }
  const tune::Plan seq = tune::plan_model(m->units, m->weights, plan_options("sequential"));
  m->sequential = run_cpu(*m, seq.schedule);
  return *(cache[name] = std::move(m));
}

// The zoo's models, aliases ("alias of googlenet") left out: they build the same graph.
std::vector<std::string> zoo_models() {
  std::vector<std::string> names;
  for (const models::ZooEntry& e : models::zoo())
    if (!e.description.starts_with("alias of")) names.emplace_back(e.name);
  return names;
}

std::vector<std::string> schedulers() {
  std::vector<std::string> names;
  for (std::string_view n : sched::scheduler_names()) names.emplace_back(n);
  return names;
}

// (model, scheduler, devices). Two devices: the multi-device schedulers (HIOS) spread the model
// over two devices, which one CPU executor runs as lanes of one device, each transfer lowered to
// the event its consumer waits for (sched/lower.cc). Front ends refuse such a plan on one
// executor (tune/measure.cc), but its order is checked here all the same. The schedulers that
// ignore num_devices skip that case (their 1-device case covers them); optimal* refuse it.
class SchedulersOnCpu : public ::testing::TestWithParam<std::tuple<std::string, std::string, int>> {
};

TEST_P(SchedulersOnCpu, OutputsEqualSequential) {
  const auto& [model_name, scheduler, devices] = GetParam();
  const Model& m = model(model_name);
  tune::Plan plan;
  try {
    plan = tune::plan_model(m.units, m.weights, plan_options(scheduler, devices));
  } catch (const Error& e) {
    if (refuses_by_design(scheduler, e)) GTEST_SKIP() << scheduler << " refuses: " << e.what();
    if (devices > 1 && e.code() == ErrorCode::kUnsupported)
      GTEST_SKIP() << scheduler << " is single-device: " << e.what();
    throw;
  }
  if (devices > 1 && plan.schedule.num_devices == 1)
    GTEST_SKIP() << scheduler << " schedules one device whatever num_devices says: its "
                 << "1-device case covers it";
  // How concurrent the plan is, in the XML report (--gtest_output=xml): its (device, stream)
  // lanes and devices used. Most plans run 2-10 lanes; intra, moldable, ios-threads and
  // optimal-threads one, with threads per unit.
  std::set<std::pair<int, size_t>> lanes;
  std::set<int> used;
  int merges = 0;
  for (const sched::Stage& st : plan.schedule.stages) {
    for (size_t g = 0; g < st.groups.size(); ++g) lanes.insert({st.device, g});
    used.insert(st.device);
    merges += st.kind == sched::StageKind::kMerge;
  }
  for (const sched::Lane& l : plan.schedule.lanes) {
    lanes.insert({l.device, static_cast<size_t>(l.stream)});
    used.insert(l.device);
  }
  RecordProperty("lanes", static_cast<int>(lanes.size()));
  RecordProperty("devices", static_cast<int>(used.size()));
  RecordProperty("merge_stages", merges);
  const Outputs got = run_cpu(m, plan.schedule);
  ASSERT_EQ(got.size(), m.sequential.size());
  // Relative to each output's scale: the same kernels in another order, so only oneDNN's
  // thread-count-dependent reductions may differ.
  testing::expect_outputs_match(m.sequential, got, {.atol = 1e-4}, scheduler + "_on_" + model_name);
}

INSTANTIATE_TEST_SUITE_P(Zoo, SchedulersOnCpu,
                         ::testing::Combine(::testing::ValuesIn(zoo_models()),
                                            ::testing::ValuesIn(schedulers()),
                                            ::testing::Values(1, 2)),
                         [](const auto& info) {
                           std::string name =
                               std::get<0>(info.param) + "_" + std::get<1>(info.param);
                           if (std::get<2>(info.param) > 1)
                             name += "_" + std::to_string(std::get<2>(info.param)) + "dev";
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

// Operator merges run as one oneDNN convolution each (cpu_kernels.h, make_merged_conv_kernel):
// on the zoo models where ios-merge merges convs, its plan must contain merges (so this cannot
// pass without running a merged kernel) and give the sequential outputs. RandWire has none to
// merge (its convs are separable: grouped depthwise ones, which merge.h refuses).
class MergesOnCpu : public ::testing::TestWithParam<std::string> {};

TEST_P(MergesOnCpu, MergedConvsEqualSequential) {
  const Model& m = model(GetParam());
  const tune::Plan plan = tune::plan_model(m.units, m.weights, plan_options("ios-merge"));
  const sched::ExecutionPlan lowered = sched::lower(m.units, plan.schedule);
  size_t merged_units = 0;
  for (const auto& merge : lowered.merges) merged_units += merge.size();
  ASSERT_GE(lowered.merges.size(), 1u) << "ios-merge merged nothing on " << GetParam();
  RecordProperty("merges", static_cast<int>(lowered.merges.size()));
  RecordProperty("merged_units", static_cast<int>(merged_units));
  const Outputs got = run_cpu(m, plan.schedule);
  testing::expect_outputs_match(m.sequential, got, {.atol = 1e-4}, "ios-merge_on_" + GetParam());
}

INSTANTIATE_TEST_SUITE_P(Zoo, MergesOnCpu,
                         ::testing::Values("inception_v3", "googlenet", "squeezenet"));

}  // namespace
}  // namespace braid
