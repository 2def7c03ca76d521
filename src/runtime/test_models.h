// Test helpers shared by the runtime's and the server's tests: small zoo models with sequential
// schedules, seeded inputs, and the oracle every served output is compared with — the CPU
// executor's plain run of the whole model.
//
//   const ModelSet set = testing_models::small_models(48, {"squeezenet", "googlenet"});
//   testing_models::PlainRuns plain(set);
//   EXPECT_EQ(outputs, plain.run(0, testing_models::random_inputs(set.model(0), 7)));
#pragma once

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "exec/cpu/cpu_executor.h"
#include "runtime/model_set.h"
#include "sched/registry.h"

namespace braid::runtime::testing_models {

using Outputs = std::vector<std::vector<float>>;

// Zoo models at `image_size`, each with the sequential schedule, cut into IR blocks.
inline ModelSet small_models(int64_t image_size, const std::vector<std::string>& names) {
  ModelSet set;
  auto sequential = sched::make_scheduler("sequential");
  for (const std::string& name : names) {
    set.add(name, {.load = {.zoo = {.image_size = image_size}}});
    set.set_schedule(set.size() - 1, sequential->schedule(set.model(set.size() - 1).units()));
  }
  return set;
}

// Uniform [-1, 1] values for every graph input of `m`, from `seed`.
inline Outputs random_inputs(const RuntimeModel& m, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-1, 1);
  Outputs inputs;
  const ir::Graph& g = *m.loaded.graph;
  for (ValueId v : g.inputs()) {
    std::vector<float> x(size_t(g.value(v).type.elements()));
    for (float& f : x) f = dist(rng);
    inputs.push_back(std::move(x));
  }
  return inputs;
}

// The oracle: each model prepared once on its own CPU executor with its own plan, run whole.
class PlainRuns {
 public:
  explicit PlainRuns(const ModelSet& set) : set_(set) {
    auto executor = exec::make_cpu_executor({.pin_threads = false});
    for (size_t m = 0; m < set.size(); ++m) {
      const RuntimeModel& model = set.model(m);
      // The set outlives the oracle: its weights are lent, not copied.
      std::shared_ptr<const ir::Weights> weights(std::shared_ptr<const void>{},
                                                 &model.loaded.weights);
      prepared_.push_back(
          executor->prepare({model.loaded.graph, weights, &model.units(), &model.plan}));
    }
  }
  Outputs run(size_t m, const Outputs& inputs) const {
    exec::PreparedModel& p = *prepared_[m];
    auto request = p.new_request();
    for (size_t i = 0; i < inputs.size(); ++i) p.set_input(*request, i, inputs[i]);
    p.run(*request);
    Outputs out;
    for (size_t o = 0; o < set_.model(m).loaded.graph->outputs().size(); ++o) {
      auto y = p.output(*request, o);
      out.emplace_back(y.begin(), y.end());
    }
    return out;
  }

 private:
  const ModelSet& set_;
  std::vector<std::unique_ptr<exec::PreparedModel>> prepared_;
};

}  // namespace braid::runtime::testing_models
