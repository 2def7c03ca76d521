#include "sched/validate.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "base/error.h"
#include "ir/graph.h"
#include "sched/concurrency.h"
#include "sched/merge.h"

namespace braid::sched {

std::string to_string(const Diagnostic& d) {
  return (d.severity == Severity::kError ? "error: " : "warning: ") + d.message;
}

bool has_errors(std::span<const Diagnostic> diagnostics) {
  return std::any_of(diagnostics.begin(), diagnostics.end(),
                     [](const Diagnostic& d) { return d.severity == Severity::kError; });
}

namespace {

std::string item(std::string_view array, size_t i) {
  return std::string(array) + "[" + std::to_string(i) + "]";
}
std::string ms(Micros t) {
  std::ostringstream out;
  out << Millis(t).count() << " ms";
  return out.str();
}

std::string pair_str(const std::array<int64_t, 2>& a) {
  return std::to_string(a[0]) + "x" + std::to_string(a[1]);
}

}  // namespace

// Rule 3; declared in merge.h, which the IOS dynamic program shares.
std::optional<MergeableConv> mergeable_conv(const ir::UnitGraph& units, UnitId u,
                                            std::string* why) {
  const ir::Graph& g = *units.graph();
  const auto& ops = units.unit(u).ops;
  if (ops.empty() || ops.size() > 2 || g.node(ops[0]).kind != ir::OpKind::Conv ||
      !std::holds_alternative<ir::ConvAttrs>(g.node(ops[0]).attrs)) {
    *why = "it is " + units.signature(u) + ", not a Conv with an optional activation";
    return std::nullopt;
  }
  MergeableConv m{&g.node(ops[0]), &std::get<ir::ConvAttrs>(g.node(ops[0]).attrs), std::nullopt};
  const ir::ConvAttrs& attrs = *m.attrs;
  m.activation = ir::activation_op(attrs.activation);
  if (ops.size() == 2) {
    const ir::Node& act = g.node(ops[1]);
    if (!ir::is_activation(act.kind) || m.activation || act.inputs.size() != 1 ||
        act.inputs[0] != m.conv->outputs[0]) {
      *why = "it is " + units.signature(u) + ", not a Conv with an optional activation";
      return std::nullopt;
    }
    m.activation = act.kind;
  }
  if (attrs.groups != 1) {
    *why = "it is a grouped convolution (groups = " + std::to_string(attrs.groups) + ")";
    return std::nullopt;
  }
  return m;
}

std::string merge_difference(const ir::Graph& g, const MergeableConv& a, const MergeableConv& b) {
  const ir::ConvAttrs& aa = *a.attrs;
  const ir::ConvAttrs& ba = *b.attrs;
  if (a.conv->inputs[0] != b.conv->inputs[0])
    return "they read different inputs ('" + g.value(a.conv->inputs[0]).name + "' and '" +
           g.value(b.conv->inputs[0]).name + "')";
  if (aa.stride != ba.stride)
    return "different strides (" + pair_str(aa.stride) + " and " + pair_str(ba.stride) + ")";
  if (aa.dilation != ba.dilation)
    return "different dilations (" + pair_str(aa.dilation) + " and " + pair_str(ba.dilation) + ")";
  const auto& as = g.value(a.conv->outputs[0]).type.shape;
  const auto& bs = g.value(b.conv->outputs[0]).type.shape;
  if (as.size() != 4 || bs.size() != 4 || as[2] != bs[2] || as[3] != bs[3])
    return "different output sizes (" + ir::to_string(as) + " and " + ir::to_string(bs) + ")";
  if (a.activation != b.activation) {
    auto act = [](std::optional<ir::OpKind> k) {
      return k ? std::string(ir::to_string(*k)) : "none";
    };
    return "different activations (" + act(a.activation) + " and " + act(b.activation) + ")";
  }
  return {};
}

std::optional<size_t> misaligned_merge(std::span<const ir::ConvAttrs* const> convs) {
  std::array<int64_t, 2> kernel{0, 0};
  std::array<int64_t, 2> pad{0, 0};  // top, left
  for (const ir::ConvAttrs* c : convs)
    for (int d = 0; d < 2; ++d) {
      kernel[d] = std::max(kernel[d], c->kernel[d]);
      pad[d] = std::max(pad[d], c->pads[d]);
    }
  for (size_t k = 0; k < convs.size(); ++k)
    for (int d = 0; d < 2; ++d) {
      const int64_t diff = kernel[d] - convs[k]->kernel[d];
      if (diff % 2 != 0 || pad[d] - convs[k]->pads[d] != diff / 2) return k;
    }
  return std::nullopt;
}

namespace {

class Checker {
 public:
  Checker(const ir::UnitGraph& graph, const Schedule& schedule)
      : g_(graph), s_(schedule), n_(graph.num_units()) {}

  std::vector<Diagnostic> run() {
    check_structure();
    if (errors_ == 0) check_coverage();
    if (errors_ == 0) {
      check_merges();
      check_transfers_and_syncs();
      if (build_happens_before()) {
        check_edges();
        check_launch_order();
        check_allotment();
      }
      check_times();
    }
    std::stable_partition(out_.begin(), out_.end(),
                          [](const Diagnostic& d) { return d.severity == Severity::kError; });
    return std::move(out_);
  }

 private:
  // Nodes of the happens-before graph: units 0..n-1, then one barrier per stage.
  enum class Cause : uint8_t { kProgram, kBarrier, kSync, kTransfer };
  struct HbEdge {
    size_t from, to;
    Cause cause;
    size_t ref;  // lane or stage index, sync or transfer index
  };

  void error(std::string m) {
    ++errors_;
    out_.push_back({Severity::kError, std::move(m)});
  }
  void warning(std::string m) { out_.push_back({Severity::kWarning, std::move(m)}); }
  std::string name(UnitId u) const { return "'" + g_.unit(u).name + "'"; }
  std::string lane_name(const Placement& p) const {
    return std::to_string(p.device) + ":" + std::to_string(p.stream);
  }
  const Placement& at(UnitId u) const { return *where_[index(u)]; }

  // Rule 1.
  void check_unit(UnitId u, const std::string& path) {
    if (index(u) >= n_)
      error(path + ": unit id " + std::to_string(index(u)) + " is out of range (graph '" +
            g_.name() + "' has " + std::to_string(n_) + " units)");
  }
  void check_device(int device, const std::string& path) {
    if (device < 0 || device >= s_.num_devices)
      error(path + ": device " + std::to_string(device) + " is out of range (the schedule has " +
            std::to_string(s_.num_devices) + " devices)");
  }

  void check_structure() {
    if (s_.num_devices < 1) error("devices: must be >= 1, got " + std::to_string(s_.num_devices));
    if (s_.is_stage_based() == s_.is_stream_based())
      error(s_.is_stage_based() ? "a schedule has stages or streams, not both"
                                : "the schedule is empty: it has no stages and no streams");
    if (s_.predicted_latency && s_.predicted_latency->count() < 0)
      error("predicted_ms: must be >= 0, got " + ms(*s_.predicted_latency));
    for (size_t i = 0; i < s_.stages.size(); ++i) {
      const Stage& st = s_.stages[i];
      const std::string path = item("stages", i);
      check_device(st.device, path + ".device");
      if (st.groups.empty()) error(path + ": a stage needs at least one group");
      for (size_t gi = 0; gi < st.groups.size(); ++gi) {
        const std::string gpath = item(path + ".groups", gi);
        if (st.groups[gi].empty()) error(gpath + ": a group needs at least one unit");
        if (st.kind == StageKind::kMerge && st.groups[gi].size() > 1)
          error(gpath + ": a merge stage has one unit per group, got " +
                std::to_string(st.groups[gi].size()));
        for (size_t k = 0; k < st.groups[gi].size(); ++k)
          check_unit(st.groups[gi][k], item(gpath, k));
      }
      check_threads(st.threads, st.groups.size(), "groups", path);
    }
    std::map<std::pair<int, int>, size_t> lane_index;
    for (size_t i = 0; i < s_.lanes.size(); ++i) {
      const Lane& lane = s_.lanes[i];
      const std::string path = item("streams", i);
      check_device(lane.device, path + ".device");
      if (lane.stream < 0)
        error(path + ".stream: must be >= 0, got " + std::to_string(lane.stream));
      auto [it, inserted] = lane_index.emplace(std::pair(lane.device, lane.stream), i);
      if (!inserted)
        error(path + ": stream " + std::to_string(lane.device) + ":" + std::to_string(lane.stream) +
              " is listed twice (also " + item("streams", it->second) + ")");
      // A model with no units (only aliases and constants) runs as one empty stream.
      if (lane.units.empty() && n_ > 0) error(path + ": a stream needs at least one unit");
      for (size_t k = 0; k < lane.units.size(); ++k)
        check_unit(lane.units[k], item(path + ".units", k));
      for (auto [times, key] :
           {std::pair(&lane.start, "start_ms"), std::pair(&lane.finish, "finish_ms")})
        if (!times->empty() && times->size() != lane.units.size())
          error(path + "." + key + ": has " + std::to_string(times->size()) + " entries for " +
                std::to_string(lane.units.size()) + " units");
      check_threads(lane.threads, lane.units.size(), "units", path);
    }
    if (s_.cores < 0) error("cores: must be >= 1, got " + std::to_string(s_.cores));
    if (s_.has_allotment() && s_.num_devices > 1)
      error("cores: an allotment is for one device; the schedule has " +
            std::to_string(s_.num_devices));
    if (s_.is_stage_based() && !s_.syncs.empty())
      error("syncs: syncs belong to stream-based schedules; stages are ordered by barriers");
    for (size_t i = 0; i < s_.syncs.size(); ++i) {
      check_unit(s_.syncs[i].from, item("syncs", i) + ".from");
      check_unit(s_.syncs[i].to, item("syncs", i) + ".to");
    }
    for (size_t i = 0; i < s_.transfers.size(); ++i) {
      const Transfer& t = s_.transfers[i];
      check_unit(t.from, item("transfers", i) + ".from");
      check_unit(t.to, item("transfers", i) + ".to");
      check_device(t.src_device, item("transfers", i) + ".src_device");
      check_device(t.dst_device, item("transfers", i) + ".dst_device");
    }
    for (size_t k = 0; k < s_.launch_order.size(); ++k)
      check_unit(s_.launch_order[k], item("launch_order", k));
  }

  // Rule 1, allotments: with `cores`, one thread count per group or unit, from 1 to cores;
  // without, none.
  void check_threads(const std::vector<int>& threads, size_t count, std::string_view what,
                     const std::string& path) {
    if (!s_.has_allotment()) {
      if (!threads.empty())
        error(path + ".threads: an allotment needs the cores it shares ('cores' at the top)");
      return;
    }
    if (threads.size() != count) {
      error(path + ".threads: has " + std::to_string(threads.size()) + " entries for " +
            std::to_string(count) + " " + std::string(what) +
            " (with 'cores', every stage and stream gives its threads)");
      return;
    }
    for (size_t k = 0; k < threads.size(); ++k)
      if (threads[k] < 1 || threads[k] > s_.cores)
        error(item(path + ".threads", k) + ": must be from 1 to cores (" +
              std::to_string(s_.cores) + "), got " + std::to_string(threads[k]));
  }

  // Rule 9: units that may run at once (no happens-before between them) ask for at most
  // `cores` threads together.
  void check_allotment() {
    if (!s_.has_allotment()) return;
    const std::vector<int> threads = unit_threads(s_, n_, 1);
    const ConcurrentSet most = heaviest_concurrent_set(threads, [&](size_t a, size_t b) {
      return happens_before(make_id<UnitId>(a), make_id<UnitId>(b));
    });
    if (most.threads <= s_.cores) return;
    std::string units;
    for (size_t u : most.units)
      units += (units.empty() ? "" : ", ") + name(make_id<UnitId>(u)) + " (" +
               std::to_string(threads[u]) + ")";
    error("cores: units that may run at once ask for " + std::to_string(most.threads) +
          " threads, more than the " + std::to_string(s_.cores) + " cores of the plan: " + units);
  }

  // Rule 2.
  void check_coverage() {
    std::vector<std::vector<std::string>> seen(n_);
    for (size_t i = 0; i < s_.stages.size(); ++i)
      for (size_t gi = 0; gi < s_.stages[i].groups.size(); ++gi)
        for (size_t k = 0; k < s_.stages[i].groups[gi].size(); ++k)
          seen[index(s_.stages[i].groups[gi][k])].push_back(
              item(item("stages", i) + ".groups", gi) + "[" + std::to_string(k) + "]");
    for (size_t i = 0; i < s_.lanes.size(); ++i)
      for (size_t k = 0; k < s_.lanes[i].units.size(); ++k)
        seen[index(s_.lanes[i].units[k])].push_back(item(item("streams", i) + ".units", k));
    for (size_t u = 0; u < n_; ++u) {
      const UnitId id = make_id<UnitId>(u);
      if (seen[u].empty()) {
        error("unit " + name(id) + " is not scheduled");
      } else if (seen[u].size() > 1) {
        std::string places;
        for (const std::string& p : seen[u]) places += (places.empty() ? "" : ", ") + p;
        error("unit " + name(id) + " is scheduled " + std::to_string(seen[u].size()) + " times (" +
              places + ")");
      }
    }
    where_ = placements(s_, n_);
  }

  // Rule 3.
  void check_merges() {
    for (size_t i = 0; i < s_.stages.size(); ++i) {
      const Stage& st = s_.stages[i];
      if (st.kind != StageKind::kMerge) continue;
      const std::string path = item("stages", i);
      if (g_.graph() == nullptr) {
        error(path + ": operator merge needs operators, and '" + g_.name() + "' is a weighted DAG");
        continue;
      }
      std::optional<MergeableConv> first;
      UnitId first_unit{};
      for (const auto& group : st.groups) {
        const UnitId u = group[0];
        std::string why;
        std::optional<MergeableConv> m = mergeable_conv(g_, u, &why);
        if (!m) {
          error(path + ": " + name(u) + " cannot be merged: " + why);
          continue;
        }
        if (!first) {
          first = m;
          first_unit = u;
          continue;
        }
        if (std::string d = merge_difference(*g_.graph(), *first, *m); !d.empty())
          error(path + ": cannot merge " + name(first_unit) + " and " + name(u) + ": " + d);
      }
      if (first) check_merge_alignment(st, path);
    }
  }

  // The merged kernel is the largest one, each kernel zero-padded and centered in it
  // (peers.md §1.4), so each conv's pads must sit (K - k) / 2 inside the merged pads.
  void check_merge_alignment(const Stage& st, const std::string& path) {
    std::vector<const ir::ConvAttrs*> convs;
    std::array<int64_t, 2> kernel{0, 0};
    for (const auto& group : st.groups) {
      std::string why;
      auto m = mergeable_conv(g_, group[0], &why);
      if (!m) return;  // reported already
      convs.push_back(m->attrs);
      for (int d = 0; d < 2; ++d) kernel[d] = std::max(kernel[d], m->attrs->kernel[d]);
    }
    if (std::optional<size_t> k = misaligned_merge(convs))
      error(path + ": " + name(st.groups[*k][0]) + " cannot be merged: its " +
            pair_str(convs[*k]->kernel) + " kernel and pads do not center in the merged " +
            pair_str(kernel) + " kernel");
  }

  // Rule 4, plus the warnings on syncs and transfers.
  void check_transfers_and_syncs() {
    std::map<std::pair<UnitId, UnitId>, size_t> seen;
    for (size_t i = 0; i < s_.transfers.size(); ++i) {
      const Transfer& t = s_.transfers[i];
      const std::string path = item("transfers", i);
      if (at(t.from).device != t.src_device)
        error(path + ": " + name(t.from) + " runs on device " + std::to_string(at(t.from).device) +
              ", not src_device " + std::to_string(t.src_device));
      if (at(t.to).device != t.dst_device)
        error(path + ": " + name(t.to) + " runs on device " + std::to_string(at(t.to).device) +
              ", not dst_device " + std::to_string(t.dst_device));
      if (t.src_device == t.dst_device)
        error(path + ": src_device and dst_device are both " + std::to_string(t.src_device));
      // One host thread walks the stage list; a stage listed before the stage it receives
      // from would wait on an event not yet recorded.
      if (s_.is_stage_based() && at(t.from).stage > at(t.to).stage)
        error(path + ": " + name(t.from) + " runs in " + item("stages", at(t.from).stage) +
              ", listed after " + item("stages", at(t.to).stage) + " where " + name(t.to) +
              " receives it");
      if (!g_.find_edge(t.from, t.to))
        warning(path + ": " + name(t.from) + " -> " + name(t.to) +
                " is not a graph edge (a wasted copy)");
      auto [it, inserted] = seen.emplace(std::pair(t.from, t.to), i);
      if (inserted)
        transfers_.insert({t.from, t.to});
      else
        warning(path + ": repeats " + item("transfers", it->second));
    }
    seen.clear();
    for (size_t i = 0; i < s_.syncs.size(); ++i) {
      const SyncEdge& e = s_.syncs[i];
      const std::string path = item("syncs", i);
      if (e.from == e.to) {
        error(path + ": " + name(e.from) + " waits for itself");
        continue;
      }
      const Placement &pf = at(e.from), &pt = at(e.to);
      if (pf.stage == pt.stage && pf.position < pt.position)
        warning(path + ": " + name(e.from) + " and " + name(e.to) + " share stream " +
                lane_name(pf) + ", whose order already makes " + name(e.to) + " wait");
      if (auto [it, inserted] = seen.emplace(std::pair(e.from, e.to), i); !inserted)
        warning(path + ": repeats " + item("syncs", it->second));
    }
  }

  // Rule 5: builds happens-before and its ancestor sets; false (after reporting) on a cycle.
  bool build_happens_before() {
    const size_t nodes = n_ + s_.stages.size();
    std::map<int, size_t> last_stage;  // per device
    for (size_t i = 0; i < s_.stages.size(); ++i) {
      const Stage& st = s_.stages[i];
      const size_t barrier = n_ + i;
      auto prev = last_stage.find(st.device);
      for (const auto& group : st.groups) {
        for (size_t k = 0; k < group.size(); ++k) {
          const size_t u = index(group[k]);
          if (k > 0 && st.kind == StageKind::kConcurrent)
            hb_.push_back({index(group[k - 1]), u, Cause::kProgram, i});
          if (prev != last_stage.end()) hb_.push_back({n_ + prev->second, u, Cause::kBarrier, i});
          hb_.push_back({u, barrier, Cause::kBarrier, i});
        }
      }
      last_stage[st.device] = i;
    }
    for (size_t i = 0; i < s_.lanes.size(); ++i)
      for (size_t k = 1; k < s_.lanes[i].units.size(); ++k)
        hb_.push_back(
            {index(s_.lanes[i].units[k - 1]), index(s_.lanes[i].units[k]), Cause::kProgram, i});
    for (size_t i = 0; i < s_.syncs.size(); ++i)
      hb_.push_back({index(s_.syncs[i].from), index(s_.syncs[i].to), Cause::kSync, i});
    for (size_t i = 0; i < s_.transfers.size(); ++i)
      hb_.push_back({index(s_.transfers[i].from), index(s_.transfers[i].to), Cause::kTransfer, i});

    std::vector<std::vector<size_t>> succ(nodes), pred(nodes);
    std::vector<size_t> indegree(nodes, 0);
    for (const HbEdge& e : hb_) {
      succ[e.from].push_back(e.to);
      pred[e.to].push_back(e.from);
      ++indegree[e.to];
    }
    std::vector<size_t> order, ready;
    for (size_t v = nodes; v-- > 0;)
      if (indegree[v] == 0) ready.push_back(v);
    while (!ready.empty()) {
      size_t v = ready.back();
      ready.pop_back();
      order.push_back(v);
      for (size_t w : succ[v])
        if (--indegree[w] == 0) ready.push_back(w);
    }
    if (order.size() < nodes) {
      report_cycle(pred, indegree);
      return false;
    }
    const size_t words = (n_ + 63) / 64;
    ancestors_.assign(nodes, std::vector<uint64_t>(words, 0));
    for (size_t v : order)
      for (size_t w : succ[v]) {
        for (size_t k = 0; k < words; ++k) ancestors_[w][k] |= ancestors_[v][k];
        if (v < n_) ancestors_[w][v / 64] |= uint64_t{1} << (v % 64);
      }
    return true;
  }

  bool happens_before(UnitId a, UnitId b) const {
    return (ancestors_[index(b)][index(a) / 64] >> (index(a) % 64)) & 1;
  }

  // Nodes left with a positive in-degree after Kahn each have a predecessor left too; walking
  // predecessors from the smallest one must revisit a node: that loop is a cycle.
  void report_cycle(const std::vector<std::vector<size_t>>& pred,
                    const std::vector<size_t>& indegree) {
    size_t v = 0;
    while (indegree[v] == 0) ++v;
    std::vector<size_t> walk;
    std::vector<int> seen_at(indegree.size(), -1);
    while (seen_at[v] < 0) {
      seen_at[v] = static_cast<int>(walk.size());
      walk.push_back(v);
      size_t next = SIZE_MAX;
      for (size_t p : pred[v])
        if (indegree[p] > 0) next = std::min(next, p);
      v = next;
    }
    std::vector<size_t> cycle(walk.begin() + seen_at[v], walk.end());
    std::reverse(cycle.begin(), cycle.end());  // predecessors were walked: reverse to forward
    // Start the message at the smallest unit, for a stable text.
    auto first = std::min_element(cycle.begin(), cycle.end());
    std::rotate(cycle.begin(), first, cycle.end());
    cycle.push_back(cycle.front());
    std::string text;
    for (size_t k = 0; k < cycle.size(); ++k)
      text +=
          (k ? " -> " : "") + (cycle[k] < n_ ? name(make_id<UnitId>(cycle[k]))
                                             : "(end of " + item("stages", cycle[k] - n_) + ")");
    error("deadlock: the schedule's waits form a cycle: " + text);
  }

  // Rule 6.
  void check_edges() {
    for (const ir::UnitEdge& e : g_.edges()) {
      const Placement &pu = at(e.from), &pv = at(e.to);
      const std::string edge = "edge " + name(e.from) + " -> " + name(e.to);
      if (pu.device != pv.device) {
        if (!transfers_.contains({e.from, e.to}))
          error(edge + " crosses devices (" + std::to_string(pu.device) + " -> " +
                std::to_string(pv.device) + ") without a transfer");
        continue;
      }
      if (happens_before(e.from, e.to)) continue;
      if (s_.is_stream_based()) {
        if (pu.stage == pv.stage)
          error(edge + " goes backwards on stream " + lane_name(pu));
        else
          error(edge + " crosses streams (" + lane_name(pu) + " -> " + lane_name(pv) +
                ") without a sync");
        continue;
      }
      const std::string su = item("stages", pu.stage), sv = item("stages", pv.stage);
      if (pu.stage != pv.stage)
        error(edge + " goes backwards: " + name(e.to) + " runs in " + sv + ", before " +
              name(e.from) + " in " + su);
      else if (s_.stages[pu.stage].kind == StageKind::kMerge)
        error(edge + " lies inside merge stage " + su + ", which runs its units as one kernel");
      else if (pu.stream == pv.stream)
        error(edge + " goes backwards in " + item(su + ".groups", pu.stream));
      else
        error(edge + " joins groups " + std::to_string(pu.stream) + " and " +
              std::to_string(pv.stream) + " of " + su + ", which run concurrently");
    }
  }

  // Rule 7.
  void check_launch_order() {
    if (s_.launch_order.empty()) return;
    std::vector<size_t> pos(n_, SIZE_MAX);
    bool permutation = s_.launch_order.size() == n_;
    if (!permutation)
      error("launch_order: has " + std::to_string(s_.launch_order.size()) + " entries for " +
            std::to_string(n_) + " units");
    for (size_t k = 0; k < s_.launch_order.size(); ++k) {
      const UnitId u = s_.launch_order[k];
      if (pos[index(u)] != SIZE_MAX) {
        error(item("launch_order", k) + ": " + name(u) + " is launched twice (also " +
              item("launch_order", pos[index(u)]) + ")");
        permutation = false;
      } else {
        pos[index(u)] = k;
      }
    }
    for (size_t u = 0; u < n_; ++u)
      if (pos[u] == SIZE_MAX) {
        error("launch_order: " + name(make_id<UnitId>(u)) + " is never launched");
        permutation = false;
      }
    if (!permutation) return;
    for (const ir::UnitEdge& e : g_.edges())
      if (pos[index(e.from)] > pos[index(e.to)])
        error("launch_order: " + name(e.to) + " is launched before its producer " + name(e.from));
    auto launched = [&](size_t a, size_t b) {
      return "launch_order: " + name(make_id<UnitId>(b)) + " is launched before " +
             name(make_id<UnitId>(a));
    };
    for (const HbEdge& e : hb_) {
      if (e.from >= n_ || e.to >= n_ || pos[e.from] < pos[e.to]) continue;
      if (g_.find_edge(make_id<UnitId>(e.from), make_id<UnitId>(e.to))) continue;  // reported above
      switch (e.cause) {
        case Cause::kProgram:
          error(launched(e.from, e.to) + ", which precedes it on stream " +
                lane_name(at(make_id<UnitId>(e.from))));
          break;
        case Cause::kSync:
          error(launched(e.from, e.to) + ", which it waits for (" + item("syncs", e.ref) + ")");
          break;
        case Cause::kTransfer:
          error(launched(e.from, e.to) + ", whose output it receives (" + item("transfers", e.ref) +
                ")");
          break;
        case Cause::kBarrier:
          break;  // unit -> barrier edges only; handled below
      }
    }
    // Barriers: every unit of a stage is launched before any unit of the device's next stage.
    std::map<int, size_t> last_stage;
    for (size_t i = 0; i < s_.stages.size(); ++i) {
      const Stage& st = s_.stages[i];
      if (auto prev = last_stage.find(st.device); prev != last_stage.end()) {
        UnitId latest{}, earliest{};
        size_t latest_pos = 0, earliest_pos = SIZE_MAX;
        for (const auto& group : s_.stages[prev->second].groups)
          for (UnitId u : group)
            if (pos[index(u)] >= latest_pos) latest_pos = pos[index(u)], latest = u;
        for (const auto& group : st.groups)
          for (UnitId u : group)
            if (pos[index(u)] < earliest_pos) earliest_pos = pos[index(u)], earliest = u;
        if (earliest_pos < latest_pos)
          error("launch_order: " + name(earliest) + " (" + item("stages", i) +
                ") is launched before " + name(latest) + " (" + item("stages", prev->second) +
                "), across the barrier between them");
      }
      last_stage[st.device] = i;
    }
  }

  // Rule 8.
  void check_times() {
    std::vector<std::optional<std::pair<Micros, Micros>>> planned(n_);
    for (size_t i = 0; i < s_.lanes.size(); ++i) {
      const Lane& lane = s_.lanes[i];
      if (lane.start.empty() || lane.finish.empty()) continue;
      const std::string path = item("streams", i);
      for (size_t k = 0; k < lane.units.size(); ++k) {
        const UnitId u = lane.units[k];
        if (lane.start[k].count() < 0) error(path + ": " + name(u) + " starts at a negative time");
        if (lane.finish[k] < lane.start[k])
          error(path + ": " + name(u) + " finishes (" + ms(lane.finish[k]) +
                ") before it starts (" + ms(lane.start[k]) + ")");
        if (k > 0 && lane.start[k] < lane.finish[k - 1])
          error(path + ": " + name(u) + " starts (" + ms(lane.start[k]) + ") before " +
                name(lane.units[k - 1]) + " finishes (" + ms(lane.finish[k - 1]) +
                ") on the same stream");
        planned[index(u)] = std::pair(lane.start[k], lane.finish[k]);
      }
    }
    for (const ir::UnitEdge& e : g_.edges()) {
      const auto &pu = planned[index(e.from)], &pv = planned[index(e.to)];
      if (pu && pv && pv->first < pu->second)
        warning("planned start of " + name(e.to) + " (" + ms(pv->first) +
                ") precedes the planned finish of its producer " + name(e.from) + " (" +
                ms(pu->second) + ")");
    }
  }

  const ir::UnitGraph& g_;
  const Schedule& s_;
  const size_t n_;
  std::vector<Diagnostic> out_;
  size_t errors_ = 0;
  std::vector<std::optional<Placement>> where_;
  std::set<std::pair<UnitId, UnitId>> transfers_;
  std::vector<HbEdge> hb_;
  std::vector<std::vector<uint64_t>> ancestors_;  // per happens-before node, bits over units
};

}  // namespace

std::vector<Diagnostic> check(const ir::UnitGraph& graph, const Schedule& schedule) {
  return Checker(graph, schedule).run();
}

void validate_or_throw(const ir::UnitGraph& graph, const Schedule& schedule) {
  for (const Diagnostic& d : check(graph, schedule))
    if (d.severity == Severity::kError)
      BRAID_THROW(ErrorCode::kInvalidSchedule, "invalid schedule: ", d.message);
}

}  // namespace braid::sched
