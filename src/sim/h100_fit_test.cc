// The simulator against the H100 it is calibrated on (issue 14). devices/measured/h100.json holds
// braid's whole-model latencies measured on an H100 (every scheduler, eager and CUDA Graph
// replay) and devices/measured/h100/schedules/ the schedules that were run (frozen: they are
// what `--cost sim:h100` produced at commit 4b03867, before the model was fitted). Each row's
// schedule is simulated on devices/h100.json and must land within +-15% of its measurement;
// the schedule the simulator ranks first among a model's measured ones must be within 3% of the
// measured best. devices/measured/h100_kernels.json (every kernel of a sequential inference,
// Nsight Compute) is compared kernel by kernel: the counts must match, the sums are printed.
//
// The test prints every row (the table in docs/simulator.md); BRAID_FIT_KERNELS=1 also prints
// every kernel beside its measurement.
#include <gtest/gtest.h>

#include <fmt/core.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/loader.h"
#include "sched/lower.h"
#include "sched/schedule.h"
#include "sim/program.h"

namespace braid::sim {
namespace {

using nlohmann::json;

const std::filesystem::path kMeasured = std::filesystem::path(BRAID_DEVICES_DIR) / "measured";

json read_json(const std::filesystem::path& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  return json::parse(in);
}

struct Row {
  std::string model, algo, mode;
  double measured_ms = 0, predicted_ms = 0;
  size_t lanes = 0, waits = 0;  // the plan's streams and cross-stream waits
  size_t switches = 0;          // issue-order segments: how often the host changes stream
  json host_calls;              // BRAID_FIT_DUMP: what the host issues, in order
  double ratio() const { return predicted_ms / measured_ms; }
  // The rows a constant of devices/h100.json was read off (docs/simulator.md "The H100 fit"):
  // library_call_us from the sequential eager rows of three models. Every other row is held
  // out; the tiles and block latency come from h100_kernels.json (Nsight Compute, kernel by
  // kernel) and the host block from the micro-benchmark series (braid calibrate), not from rows.
  bool calibration() const {
    return mode == "eager" && algo == "sequential" &&
           (model == "tv_inception_v3" || model == "googlenet" || model == "resnet50");
  }
};

class H100Fit : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    device_ = new DeviceSpec(load_device("h100"));
    models_ = new std::map<std::string, models::LoadedModel>();
  }
  static void TearDownTestSuite() {
    delete device_;
    delete models_;
  }

  static const models::LoadedModel& model(const std::string& name) {
    auto it = models_->find(name);
    if (it == models_->end())
      it = models_
               ->emplace(name,
                         models::load_model(name, {.with_weights = false,
                                                   .fuse = {.residual = false, .silu = false}}))
               .first;
    return it->second;
  }

  static sched::ExecutionPlan plan_of(const models::LoadedModel& m, const std::string& algo) {
    const auto path = kMeasured / "h100" / "schedules" / (m.units.name() + "." + algo + ".json");
    return sched::lower(m.units, sched::read_schedule_file(path.string(), m.units));
  }

  static void simulate_row(Row& row) {
    const models::LoadedModel& m = model(row.model);
    const sched::ExecutionPlan plan = plan_of(m, row.algo);
    const UnitKernels kernels(m.units, *device_);
    const UnitKernels* devices[] = {&kernels};
    const PlanProgram p = plan_program(m.units, plan, devices);
    row.lanes = plan.lanes.size();
    for (const sched::PlanLane& lane : plan.lanes)
      for (const sched::Step& step : lane.steps)
        row.waits += std::holds_alternative<sched::WaitStep>(step);
    row.switches = sched::issue_order(plan).size();
    row.predicted_ms =
        simulate(p.program, {device_, 1}, {.graph_replay = row.mode == "graph"}).makespan_us / 1e3;
    if (std::getenv("BRAID_FIT_DUMP") != nullptr) row.host_calls = host_calls(p.program);
  }

  // Every op the host issues, in order: [type, stream, library call, idle kernel us, unit or
  // event],
  // for scripts/h100_eager_fit.py (the analysis of the eager rows).
  static json host_calls(const Program& p) {
    json out = json::array();
    for (const Op& op : p.ops) {
      const bool kernel = op.type == OpType::kKernel;
      const Kernel* k = kernel ? &p.kernels[op.index] : nullptr;
      constexpr const char* kTypes[] = {"kernel", "record", "wait", "copy"};
      out.push_back({kTypes[int(op.type)], op.stream, kernel && k->library_call,
                     kernel ? idle_kernel_us(*k, *device_) : 0.0,
                     kernel ? index(k->unit) : op.index});
    }
    return out;
  }

  static std::vector<Row> rows() {
    std::vector<Row> out;
    const json measured = read_json(kMeasured / "h100.json");
    for (const json& r : measured.at("braid_rows")) {
      Row row{r.at("model"), r.at("algo"), r.at("mode"), r.at("median_ms")};
      EXPECT_EQ(r.at("batch"), 1) << "the frozen schedules are batch 1";
      simulate_row(row);
      out.push_back(row);
    }
    return out;
  }

  static DeviceSpec* device_;
  static std::map<std::string, models::LoadedModel>* models_;
};

DeviceSpec* H100Fit::device_ = nullptr;
std::map<std::string, models::LoadedModel>* H100Fit::models_ = nullptr;

TEST_F(H100Fit, GraphRowsWithin15Percent) {
  const std::vector<Row> all = rows();
  ASSERT_EQ(all.size(), 66u) << "devices/measured/h100.json changed";
  std::cout << "| model | algo | mode | set | streams | waits | switches | measured ms | "
               "predicted ms | predicted/measured |\n"
            << "|---|---|---|---|---|---|---|---|---|---|\n";
  int outside = 0;
  double worst = 0;
  // Per set and mode: rows, rows outside +-15%, sum of squared log ratios.
  std::map<std::string, std::tuple<int, int, double>> summary;
  for (const Row& r : all) {
    const std::string set = r.calibration() ? "calibration" : "held out";
    std::cout << fmt::format("| {} | {} | {} | {} | {} | {} | {} | {:.3f} | {:.3f} | {:.2f} |\n",
                             r.model, r.algo, r.mode, set, r.lanes, r.waits, r.switches,
                             r.measured_ms, r.predicted_ms, r.ratio());
    outside += std::abs(r.ratio() - 1) > 0.15;
    worst = std::max(worst, std::abs(r.ratio() - 1));
    auto& [n, out, sq] = summary[set + ", " + r.mode];
    ++n;
    out += std::abs(r.ratio() - 1) > 0.15;
    sq += std::log(r.ratio()) * std::log(r.ratio());
  }
  std::cout << fmt::format("{} of {} rows outside +-15%; worst {:.0f}%\n", outside, all.size(),
                           worst * 100);
  for (const auto& [what, s] : summary)
    std::cout << fmt::format("{}: {} rows, {} outside +-15%, RMS log error {:.3f}\n", what,
                             std::get<0>(s), std::get<1>(s),
                             std::sqrt(std::get<2>(s) / std::get<0>(s)));
  if (const char* dump = std::getenv("BRAID_FIT_DUMP")) {
    json rows = json::array();
    for (const Row& r : all)
      rows.push_back({{"model", r.model},
                      {"algo", r.algo},
                      {"mode", r.mode},
                      {"measured_ms", r.measured_ms},
                      {"predicted_ms", r.predicted_ms},
                      {"host_calls", r.host_calls}});
    std::ofstream(dump) << rows.dump() << "\n";
  }
  // Asserted: every graph-replay row within +-15%, but the one named below (Opara's order on
  // GoogLeNet, not modelled; docs/simulator.md), which must stay within +-20%. Eager rows are
  // printed, not asserted: no model with few global parameters fits them (scripts/
  // h100_eager_fit.py; EagerRowsThatIssueAlikeMeasureApart below).
  auto known_miss = [](const Row& r) {
    return r.model == "googlenet" && r.algo == "opara" && r.mode == "graph";
  };
  for (const Row& r : all) {
    if (r.mode != "graph") continue;
    EXPECT_NEAR(r.ratio(), 1.0, known_miss(r) ? 0.20 : 0.15)
        << r.model << " " << r.algo << " " << r.mode;
  }
}

TEST_F(H100Fit, FirstRankedScheduleWithin3PercentOfMeasuredBest) {
  std::map<std::string, std::vector<Row>> by_model;
  for (const Row& r : rows())
    if (r.mode == "graph") by_model[r.model].push_back(r);
  ASSERT_EQ(by_model.size(), 6u);
  for (const auto& [name, rs] : by_model) {
    const Row* ranked = &rs.front();
    const Row* best = &rs.front();
    for (const Row& r : rs) {
      if (r.predicted_ms < ranked->predicted_ms) ranked = &r;
      if (r.measured_ms < best->measured_ms) best = &r;
    }
    std::cout << fmt::format(
        "{}: simulator ranks {} first ({:.3f} ms measured), best {} ({:.3f})\n", name, ranked->algo,
        ranked->measured_ms, best->algo, best->measured_ms);
    EXPECT_LE(ranked->measured_ms, best->measured_ms * 1.03)
        << name << ": the simulator ranks " << ranked->algo << " first";
  }
}

// The premise of docs/simulator.md's "why no model of the issued calls can fit these rows":
// eager rows whose host calls are nearly the same measured up to 1.64x apart. Counted here
// from the frozen plans, so that the argument breaks loudly if the schedules or the program
// builder change.
TEST_F(H100Fit, EagerRowsThatIssueAlikeMeasureApart) {
  struct Calls {
    int library = 0, launches = 0, records = 0, waits = 0;
    double measured_ms = 0;
  };
  auto calls = [](const std::string& model_name, const std::string& algo) {
    const models::LoadedModel& m = model(model_name);
    const UnitKernels kernels(m.units, *device_);
    const UnitKernels* devices[] = {&kernels};
    const Program p = plan_program(m.units, plan_of(m, algo), devices).program;
    Calls c;
    for (const Op& op : p.ops) {
      if (op.type == OpType::kKernel) (p.kernels[op.index].library_call ? c.library : c.launches)++;
      c.records += op.type == OpType::kRecord;
      c.waits += op.type == OpType::kWait;
    }
    const json measured = read_json(kMeasured / "h100.json");  // outlives the loop
    for (const json& r : measured.at("braid_rows"))
      if (r.at("model") == model_name && r.at("algo") == algo && r.at("mode") == "eager")
        c.measured_ms = r.at("median_ms");
    return c;
  };
  // ResNet-50: the same calls on the same streams but 30 records nothing waits for (ios's
  // stage barriers), 0.34 us each on this GPU (braid calibrate --measure), and 46% apart.
  const Calls lios = calls("resnet50", "lios"), ios = calls("resnet50", "ios");
  EXPECT_EQ(lios.library, ios.library);
  EXPECT_EQ(lios.launches, ios.launches);
  EXPECT_EQ(lios.waits, ios.waits);
  EXPECT_EQ(ios.records - lios.records, 30);
  EXPECT_GT(ios.measured_ms / lios.measured_ms, 1.4);
  // GoogLeNet: the same library calls and launches, waits within one, lios fewer records, and
  // 64% slower than ios.
  const Calls g_lios = calls("googlenet", "lios"), g_ios = calls("googlenet", "ios");
  EXPECT_EQ(g_lios.library, g_ios.library);
  EXPECT_EQ(g_lios.launches, g_ios.launches);
  EXPECT_LE(std::abs(g_lios.waits - g_ios.waits), 1);
  EXPECT_LT(g_lios.records, g_ios.records);
  EXPECT_GT(g_lios.measured_ms / g_ios.measured_ms, 1.6);
}

// Kernel by kernel: the sequential plan launches what the device launched, and the kernels'
// summed durations (each alone on an idle device) are printed beside Nsight Compute's.
TEST_F(H100Fit, SequentialKernelsMatchNsightCompute) {
  const json measured = read_json(kMeasured / "h100_kernels.json").at("models");
  const bool verbose = std::getenv("BRAID_FIT_KERNELS") != nullptr;
  for (const auto& [name, kernels] : measured.items()) {
    const models::LoadedModel& m = model(name);
    const sched::ExecutionPlan plan = plan_of(m, "sequential");
    const UnitKernels unit_kernels(m.units, *device_);
    const UnitKernels* devices[] = {&unit_kernels};
    const Program p = plan_program(m.units, plan, devices).program;
    EXPECT_EQ(p.kernels.size(), kernels.size()) << name << ": kernels launched";
    double sum_measured = 0, sum_predicted = 0;
    for (size_t k = 0; k < std::min(p.kernels.size(), kernels.size()); ++k) {
      std::string us = kernels[k].at("gpu__time_duration.sum");
      std::erase(us, ',');
      const double measured_us = std::stod(us) / 1e3;
      const double predicted_us = idle_kernel_us(p.kernels[k], *device_);
      sum_measured += measured_us;
      sum_predicted += predicted_us;
      if (verbose)
        std::cout << fmt::format("{} {:>3} {:<48.48} {:>6} {:>6.1f} | {:<40.40} {:>12} {:>6.1f}\n",
                                 name, k, p.kernels[k].name, p.kernels[k].blocks, predicted_us,
                                 std::string(kernels[k].at("kernel")).substr(0, 40),
                                 std::string(kernels[k].at("grid")), measured_us);
    }
    std::cout << fmt::format(
        "{}: {} kernels measured, {} simulated; sum {:.3f} ms measured, "
        "{:.3f} ms predicted\n",
        name, kernels.size(), p.kernels.size(), sum_measured / 1e3, sum_predicted / 1e3);
  }
}

}  // namespace
}  // namespace braid::sim
