// Seeded random graphs for the schedulers' tests (test code only; header-only so that every
// sched test file shares one definition).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "cost/cost_model.h"
#include "ir/unit_graph.h"
#include "models/dag_json.h"
#include "models/random_dag.h"
#include "sched/validate.h"

namespace braid::testing {

// A HIOS layered random DAG (models/random_dag.h) of min_ops..max_ops units and 3 to
// 2 + max_layers layers, reproducible from the seed: the edge count is the one nearest a
// random target in [ops - 1, 3 ops - 2] that the layering admits.
inline ir::UnitGraph random_graph(uint64_t seed, int min_ops = 3, int max_ops = 62,
                                  int max_layers = 12) {
  std::mt19937_64 rng(seed);
  models::RandomDagOptions o;
  o.ops = min_ops + static_cast<int>(rng() % static_cast<uint64_t>(max_ops - min_ops + 1));
  o.layers = 3 + static_cast<int>(rng() % static_cast<uint64_t>(std::min(o.ops - 2, max_layers)));
  while ((o.layers - 2) * 10 * o.layers < o.ops - 2) ++o.layers;  // HIOS caps layer width
  o.seed = seed;
  return models::random_dag_near(
      o, o.ops - 1 + static_cast<int>(rng() % static_cast<uint64_t>(2 * o.ops)));
}

// a -> {b, c} -> d: ids a=0, b=1, c=2, d=3 (the validator's and the allotments' examples).
inline ir::UnitGraph diamond() {
  return models::parse_dag_json_text(R"({"format": "braid.dag/1", "name": "diamond",
      "nodes": [{"name": "a"}, {"name": "b"}, {"name": "c"}, {"name": "d"}],
      "edges": [{"from": "a", "to": "b"}, {"from": "a", "to": "c"}, {"from": "b", "to": "d"},
                {"from": "c", "to": "d"}]})",
                                     "diamond");
}

// head (1 ms) -> {a, b, c, d} (2 ms each) -> tail (1 ms): ids in that order (the lane
// predictor's examples: four streams over fewer CPUs).
inline ir::UnitGraph fan4() {
  return models::parse_dag_json_text(R"({"format": "braid.dag/1", "name": "fan",
      "nodes": [{"name": "head", "latency_ms": 1}, {"name": "a", "latency_ms": 2},
                {"name": "b", "latency_ms": 2}, {"name": "c", "latency_ms": 2},
                {"name": "d", "latency_ms": 2}, {"name": "tail", "latency_ms": 1}],
      "edges": [{"from": "head", "to": "a"}, {"from": "head", "to": "b"},
                {"from": "head", "to": "c"}, {"from": "head", "to": "d"},
                {"from": "a", "to": "tail"}, {"from": "b", "to": "tail"},
                {"from": "c", "to": "tail"}, {"from": "d", "to": "tail"}]})",
                                     "fan");
}

// The first error of sched::check(), the one validate_or_throw reports; "(valid)" for none.
inline std::string first_error(const ir::UnitGraph& g, const sched::Schedule& s) {
  for (const sched::Diagnostic& d : sched::check(g, s))
    if (d.severity == sched::Severity::kError) return d.message;
  return "(valid)";
}

// Moldable units for the allotment schedulers' tests: the DAG's latencies at one core, and
// `scaling[u]` of the ideal speed-up at k cores (0: none, 1: k times faster), for 1..cores.
class ScalingCost final : public cost::CostModel {
 public:
  ScalingCost(const ir::UnitGraph& g, std::vector<double> scaling, int cores)
      : CostModel(g), scaling_(std::move(scaling)), cores_(cores) {}
  std::string_view name() const override { return "scaling"; }
  Micros unit_latency(UnitId u) const override { return *units().unit(u).latency; }
  Micros stage_latency(std::span<const std::vector<UnitId>> groups) const override {
    std::vector<int> ones(groups.size(), 1);
    return stage_latency_at(groups, ones);
  }
  int max_threads() const override { return cores_; }
  Micros unit_latency_at(UnitId u, int k) const override {
    EXPECT_LE(k, cores_);
    const double s = scaling_[index(u)];
    return unit_latency(u) / (1 + s * (k - 1));
  }

 private:
  std::vector<double> scaling_;
  int cores_;
};

}  // namespace braid::testing
