// hios_study — the simulation study of hios.txt §V, reproduced: random layered DAGs (200 ops,
// 14 layers, 2x edges, latencies 0.1-4 ms, transfer max(0.1 ms, p x latency), p = 80%, 4
// devices, 30 instances per point) scheduled by sequential, IOS (on one device, HIOS's IOS-sim
// settings: groups of <= 3 units, <= 2 groups, parts of <= 10 units), HIOS-LP, HIOS-MR and
// their inter-device-only mappings, all priced by HIOS's simulated stage model (`--cost hios`,
// cost/hios_stage_cost.h). Sweeps one parameter at a time, as Figures 7-11 do, and prints mean
// +- standard deviation of the latency (ms) per algorithm, and HIOS-LP's speedups.
//
//   build/bench/hios_study                         # every figure, 30 instances per point
//   build/bench/hios_study --sweep ops --instances 10
//   build/bench/hios_study --start paper   # hios.txt's text: a unit waits for its producers
//
// --start code (the default) starts a unit after its producers' devices' current timelines, as
// HIOS's simulator code does (cost/hios_stage_cost.h); the paper's Figures 7-11 are closer to
// it than to --start paper on every figure (bench/README.md, 2026-11-29).
#include <chrono>
#include <cmath>
#include <cstring>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "base/error.h"
#include "cost/hios_stage_cost.h"
#include "models/random_dag.h"
#include "sched/hios.h"
#include "sched/ios.h"
#include "sched/predict.h"
#include "sched/registry.h"

namespace braid {
namespace {

struct Point {
  models::RandomDagOptions dag;
  int devices = 4;
  cost::StartRule start = cost::StartRule::kProducerDevice;
};

const std::vector<std::string> kAlgorithms = {"sequential", "ios",           "hios-mr-inter",
                                              "hios-mr",    "hios-lp-inter", "hios-lp"};

// Latency (ms) of every algorithm on one instance.
std::map<std::string, double> run_instance(const Point& point) {
  const ir::UnitGraph g = models::random_dag(point.dag);
  cost::HiosStageCostModel cost(g, 0.5, point.start);
  sched::ScheduleOptions options{.max_streams = 2,
                                 .num_devices = point.devices,
                                 .window = 2,
                                 .max_group_size = 3,
                                 .max_groups = 2};
  std::map<std::string, double> latency;
  for (const std::string& name : kAlgorithms) {
    sched::Schedule s;
    if (name == "ios")
      s = sched::IosScheduler(options, sched::IosVariant::kParallel, 10).schedule(g, cost);
    else
      s = sched::make_scheduler(name, options)->schedule(g, cost);
    latency[name] = Millis(sched::predicted_latency(g, s, cost)).count();
  }
  return latency;
}

struct Stats {
  double mean = 0, std = 0;
};

Stats stats(const std::vector<double>& v) {
  Stats s;
  for (double x : v) s.mean += x;
  s.mean /= double(v.size());
  for (double x : v) s.std += (x - s.mean) * (x - s.mean);
  s.std = std::sqrt(s.std / double(v.size()));
  return s;
}

void sweep(const std::string& title, const std::string& parameter,
           const std::vector<double>& values, void (*set)(Point&, double), int instances,
           cost::StartRule start) {
  fmt::print("\n### {} (30 instances in the paper; {} here)\n\n| {} |", title, instances,
             parameter);
  for (const std::string& a : kAlgorithms) fmt::print(" {} |", a);
  fmt::print(" LP/seq | LP/IOS | LP/MR | LP/LP-inter |\n|---|");
  for (size_t i = 0; i < kAlgorithms.size() + 4; ++i) fmt::print("---|");
  fmt::print("\n");
  for (double value : values) {
    std::map<std::string, std::vector<double>> latency;
    const auto begin = std::chrono::steady_clock::now();
    for (int i = 0; i < instances; ++i) {
      Point point;
      point.dag.seed = uint64_t(i);
      point.start = start;
      set(point, value);
      point.dag.edges = point.dag.edges > 0 ? point.dag.edges : 2 * point.dag.ops;
      for (int attempt = 0;; ++attempt) {
        try {
          for (auto& [name, l] : run_instance(point)) latency[name].push_back(l);
          break;
        } catch (const Error&) {  // a layering that cannot hold the edges: draw another
          BRAID_CHECK(attempt < 20, ErrorCode::kInvalidArgument, "no DAG for ", parameter, " = ",
                      value);
          point.dag.seed += 1000;
        }
      }
    }
    fmt::print("| {:g} |", value);
    for (const std::string& a : kAlgorithms) {
      const Stats s = stats(latency[a]);
      fmt::print(" {:.1f} ± {:.1f} |", s.mean, s.std);
    }
    const double lp = stats(latency["hios-lp"]).mean;
    fmt::print(" {:.2f} | {:.2f} | {:.2f} | {:.2f} |", stats(latency["sequential"]).mean / lp,
               stats(latency["ios"]).mean / lp, stats(latency["hios-mr"]).mean / lp,
               stats(latency["hios-lp-inter"]).mean / lp);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    fmt::print(" <!-- {:.1f} s -->\n", seconds);
  }
}

}  // namespace
}  // namespace braid

int main(int argc, char** argv) {
  using braid::Point;
  int instances = 30;
  std::string only = "all", start_name = "code";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--instances") == 0)
      instances = std::atoi(argv[i + 1]);
    else if (std::strcmp(argv[i], "--sweep") == 0)
      only = argv[i + 1];
    else if (std::strcmp(argv[i], "--start") == 0)
      start_name = argv[i + 1];
    else {
      std::cerr << "usage: hios_study [--instances N] [--sweep devices|ops|edges|layers|p|all] "
                   "[--start code|paper]\n";
      return 2;
    }
  }
  if (instances < 1) {
    std::cerr << "hios_study: --instances must be >= 1\n";
    return 2;
  }
  braid::cost::StartRule start;
  try {
    start = braid::cost::parse_hios_start(start_name);
  } catch (const braid::Error& e) {
    std::cerr << "hios_study: --start: " << e.what() << "\n";
    return 2;
  }
  try {
    fmt::print("## HIOS simulation study (hios.txt §V): latency in ms, mean ± std, start={}\n",
               braid::cost::hios_start_name(start));
    if (only == "all" || only == "devices")
      braid::sweep(
          "Figure 7: number of GPUs", "GPUs", {2, 4, 6, 8, 10, 12},
          [](Point& p, double v) { p.devices = int(v); }, instances, start);
    if (only == "all" || only == "ops")
      braid::sweep(
          "Figure 8: number of operators (edges = 2 x operators)", "operators",
          {100, 150, 200, 250, 300, 350, 400},
          [](Point& p, double v) { p.dag.ops = int(v), p.dag.edges = 0; }, instances, start);
    if (only == "all" || only == "edges")
      braid::sweep(
          "Figure 9: number of dependencies (200 operators)", "edges", {400, 450, 500, 550, 600},
          [](Point& p, double v) { p.dag.edges = int(v); }, instances, start);
    if (only == "all" || only == "layers")
      braid::sweep(
          "Figure 10: number of layers", "layers", {6, 10, 14, 18, 22},
          [](Point& p, double v) { p.dag.layers = int(v); }, instances, start);
    if (only == "all" || only == "p")
      braid::sweep(
          "Figure 11: transfer ratio p", "p", {0.4, 0.6, 0.8, 1.0, 1.2},
          [](Point& p, double v) { p.dag.transfer_ratio = v; }, instances, start);
  } catch (const braid::Error& e) {
    std::cerr << "hios_study: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
