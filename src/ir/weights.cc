#include "ir/weights.h"

#include <random>

#include "base/error.h"

namespace braid::ir {

Weights Weights::generate(const Graph& graph, uint64_t seed) {
  Weights w(graph.num_values());
  for (ValueId p : graph.parameters()) {
    const Value& v = graph.value(p);
    const int64_t n = v.type.elements();
    std::vector<float> data(n);
    // One generator per parameter, seeded from (seed, value index): adding a parameter does not
    // change the others' data.
    std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ULL + index(p));
    switch (v.init.kind) {
      case ParamInit::Kind::kExternal:
        continue;
      case ParamInit::Kind::kNormal: {
        std::normal_distribution<float> dist(0.0f, v.init.a);
        for (float& x : data) x = dist(rng);
        break;
      }
      case ParamInit::Kind::kUniform: {
        std::uniform_real_distribution<float> dist(v.init.a, v.init.b);
        for (float& x : data) x = dist(rng);
        break;
      }
      case ParamInit::Kind::kConstant: {
        const auto& c = v.init.values;
        BRAID_CHECK(c.size() == 1 || static_cast<int64_t>(c.size()) == n, ErrorCode::kInvalidModel,
                    "parameter '", v.name, "': ", c.size(), " constant values for ", n, " elements");
        for (int64_t i = 0; i < n; ++i) data[i] = c.size() == 1 ? c[0] : c[i];
        break;
      }
    }
    w.data_[index(p)] = std::move(data);
  }
  return w;
}

void Weights::set(ValueId value, std::vector<float> data) {
  if (data_.size() <= index(value)) data_.resize(index(value) + 1);
  data_[index(value)] = std::move(data);
}

void Weights::check_complete(const Graph& graph) const {
  for (ValueId p : graph.parameters()) {
    const Value& v = graph.value(p);
    BRAID_CHECK(has(p), ErrorCode::kInvalidModel, "parameter '", v.name, "' has no data");
    BRAID_CHECK(static_cast<int64_t>(data(p).size()) == v.type.elements(), ErrorCode::kInvalidModel,
                "parameter '", v.name, "' has ", data(p).size(), " values, its shape ",
                to_string(v.type.shape), " needs ", v.type.elements());
  }
}

}  // namespace braid::ir
