#include "sched/opara.h"

#include <tuple>

#include "base/error.h"
#include "cost/roofline.h"
#include "sched/lanes.h"

namespace braid::sched {

double opara_ridge_point() {
  const cost::RooflineOptions roofline;
  return roofline.peak_gflops / roofline.bandwidth_gbps;
}

ir::UnitClass opara_unit_class(const ir::Unit& u,
                               const std::optional<cost::UnitResources>& device) {
  if (u.unit_class != ir::UnitClass::kUnknown) return u.unit_class;
  if (device && device->bound != ir::UnitClass::kUnknown) return device->bound;
  return cost::roofline_class(double(u.flops), double(u.bytes), opara_ridge_point());
}

namespace {

// Least demand first; compared as a tuple, ties broken by the unit id last.
using Demand = std::tuple<bool, int64_t, int64_t, int64_t, int64_t, size_t>;

Demand demand(const ir::UnitGraph& graph, UnitId id,
              const std::optional<cost::UnitResources>& device) {
  const ir::Unit& u = graph.unit(id);
  const std::optional<ir::UnitResources> r = u.resources ? u.resources
                                             : device    ? std::optional(device->per_block)
                                                         : std::nullopt;
  if (r) return {false, r->shared_memory, r->threads, r->registers, u.bytes, index(id)};
  return {true, 0, 0, 0, u.bytes, index(id)};
}

}  // namespace

std::vector<UnitId> opara_launch_order(const ir::UnitGraph& graph, const cost::CostModel* cost) {
  const size_t n = graph.num_units();
  std::vector<Demand> key(n);
  std::vector<bool> memory(n);
  std::vector<size_t> indegree(n);
  std::vector<UnitId> ready[2];  // [0] compute-bound, [1] memory-bound
  for (size_t i = 0; i < n; ++i) {
    const UnitId u = make_id<UnitId>(i);
    const std::optional<cost::UnitResources> device = cost ? cost->unit_resources(u) : std::nullopt;
    key[i] = demand(graph, u, device);
    memory[i] = opara_unit_class(graph.unit(u), device) == ir::UnitClass::kMemory;
    indegree[i] = graph.predecessors(u).size();
    if (indegree[i] == 0) ready[memory[i]].push_back(u);
  }
  std::vector<UnitId> order;
  order.reserve(n);
  size_t last = 1;  // so that the first choice, with both lists ready, is compute-bound
  while (!ready[0].empty() || !ready[1].empty()) {
    const size_t list = ready[0].empty() ? 1 : ready[1].empty() ? 0 : 1 - last;
    std::vector<UnitId>& l = ready[list];
    size_t pick = 0;
    for (size_t k = 1; k < l.size(); ++k)
      if (key[index(l[k])] < key[index(l[pick])]) pick = k;
    const UnitId v = l[pick];
    l[pick] = l.back();  // the lists are unordered: the key decides
    l.pop_back();
    last = list;
    order.push_back(v);
    for (UnitId s : graph.successors(v))
      if (--indegree[index(s)] == 0) ready[memory[index(s)]].push_back(s);
  }
  BRAID_ASSERT(order.size() == n, "a UnitGraph is acyclic");
  return order;
}

std::vector<int> opara_streams(const ir::UnitGraph& graph, std::span<const UnitId> launch_order) {
  const size_t n = graph.num_units();
  std::vector<int> stream_of(n, -1);
  std::vector<bool> passed(n, false);  // the unit's stream went to one of its successors
  int streams = 0;
  for (UnitId v : launch_order) {
    for (UnitId p : graph.predecessors(v)) {
      BRAID_ASSERT(stream_of[index(p)] >= 0, "opara: launch order is not topological");
      if (!passed[index(p)]) {
        passed[index(p)] = true;
        stream_of[index(v)] = stream_of[index(p)];
        break;
      }
    }
    if (stream_of[index(v)] < 0) stream_of[index(v)] = streams++;
  }
  return stream_of;
}

Schedule OparaScheduler::schedule(const ir::UnitGraph& graph, const cost::CostModel& cost,
                                  SearchStats*) const {
  Schedule s;
  s.algorithm = std::string(name());
  s.model = graph.name();
  if (graph.num_units() == 0) return s;
  std::vector<UnitId> order = opara_launch_order(graph, &cost);
  const std::vector<int> stream_of = opara_streams(graph, order);
  s.lanes = make_lanes(stream_of, order);
  s.syncs = cross_lane_syncs(graph, stream_of);
  s.launch_order = std::move(order);
  return s;
}

}  // namespace braid::sched
