// ir::Weights — the data of a Graph's parameters, kept apart from the structure so that one
// Graph (and one compiled plan) can serve many requests, each with its own activations.
//
//   Weights w = Weights::generate(graph, /*seed=*/42);   // zoo models: seeded random
//   std::span<const float> conv1 = w.data(graph.find_value("conv1.w").value());
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/ids.h"
#include "ir/graph.h"

namespace braid::ir {

class Weights {
 public:
  Weights() = default;
  explicit Weights(size_t num_values) : data_(num_values) {}

  // Materializes every parameter from its ParamInit; kExternal parameters must be set later.
  static Weights generate(const Graph& graph, uint64_t seed);

  void set(ValueId value, std::vector<float> data);
  bool has(ValueId value) const { return index(value) < data_.size() && !data_[index(value)].empty(); }
  std::span<const float> data(ValueId value) const { return data_.at(index(value)); }

  // Throws braid::Error(kInvalidModel) naming the first parameter without (enough) data.
  void check_complete(const Graph& graph) const;

 private:
  std::vector<std::vector<float>> data_;  // indexed by ValueId; empty for non-parameters
};

}  // namespace braid::ir
