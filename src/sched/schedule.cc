#include "sched/schedule.h"

#include <algorithm>
#include <map>
#include <sstream>

namespace braid::sched {

std::string_view to_string(StageKind k) {
  switch (k) {
    case StageKind::kConcurrent:
      return "concurrent";
    case StageKind::kMerge:
      return "merge";
  }
  return "?";
}

std::vector<std::optional<Placement>> placements(const Schedule& s, size_t num_units) {
  std::vector<std::optional<Placement>> where(num_units);
  auto place = [&](UnitId u, Placement p) {
    if (index(u) < num_units && !where[index(u)]) where[index(u)] = p;
  };
  for (size_t i = 0; i < s.stages.size(); ++i) {
    const Stage& st = s.stages[i];
    for (size_t g = 0; g < st.groups.size(); ++g)
      for (size_t k = 0; k < st.groups[g].size(); ++k)
        place(st.groups[g][k], {st.device, static_cast<int>(g), i, k});
  }
  for (size_t i = 0; i < s.lanes.size(); ++i) {
    const Lane& lane = s.lanes[i];
    for (size_t k = 0; k < lane.units.size(); ++k)
      place(lane.units[k], {lane.device, lane.stream, i, k});
  }
  return where;
}

std::vector<UnitId> scheduled_units(const Schedule& s) {
  std::vector<UnitId> all;
  for (const Stage& st : s.stages)
    for (const auto& group : st.groups) all.insert(all.end(), group.begin(), group.end());
  for (const Lane& lane : s.lanes) all.insert(all.end(), lane.units.begin(), lane.units.end());
  return all;
}

std::vector<int> unit_threads(const Schedule& s, size_t num_units, int fallback) {
  std::vector<int> threads(num_units, fallback);
  auto give = [&](UnitId u, int k) {
    if (index(u) < num_units) threads[index(u)] = k;
  };
  for (const Stage& st : s.stages)
    for (size_t g = 0; g < st.groups.size() && g < st.threads.size(); ++g)
      for (UnitId u : st.groups[g]) give(u, st.threads[g]);
  for (const Lane& lane : s.lanes)
    for (size_t k = 0; k < lane.units.size() && k < lane.threads.size(); ++k)
      give(lane.units[k], lane.threads[k]);
  return threads;
}

int num_streams(const Schedule& s) {
  std::map<int, int> per_device;
  for (const Stage& st : s.stages)
    per_device[st.device] = std::max(per_device[st.device], static_cast<int>(st.groups.size()));
  for (const Lane& lane : s.lanes) ++per_device[lane.device];
  int most = 0;
  for (const auto& [device, n] : per_device) most = std::max(most, n);
  return most;
}

std::string to_string(const Schedule& s, const ir::UnitGraph& graph) {
  auto name = [&](UnitId u) {
    return index(u) < graph.num_units() ? graph.unit(u).name : "#" + std::to_string(index(u));
  };
  std::ostringstream out;
  out << s.algorithm << " schedule of '" << s.model << "': ";
  if (s.is_stage_based())
    out << s.stages.size() << " stages";
  else
    out << s.lanes.size() << " lanes, " << s.syncs.size() << " syncs";
  if (s.num_devices > 1)
    out << ", " << s.num_devices << " devices, " << s.transfers.size() << " transfers";
  if (s.has_allotment()) out << ", " << s.cores << " cores";
  if (s.predicted_latency) out << ", predicted " << Millis(*s.predicted_latency).count() << " ms";
  out << "\n";
  for (size_t i = 0; i < s.stages.size(); ++i) {
    const Stage& st = s.stages[i];
    out << "  stage " << i << " (dev " << st.device << ", " << to_string(st.kind) << "):";
    for (size_t g = 0; g < st.groups.size(); ++g) {
      out << " [";
      for (size_t k = 0; k < st.groups[g].size(); ++k)
        out << (k ? " " : "") << name(st.groups[g][k]);
      out << "]";
      if (g < st.threads.size()) out << "x" << st.threads[g];
    }
    out << "\n";
  }
  for (const Lane& lane : s.lanes) {
    out << "  stream " << lane.device << ":" << lane.stream << ":";
    for (size_t k = 0; k < lane.units.size(); ++k) {
      out << " " << name(lane.units[k]);
      if (k < lane.threads.size()) out << "x" << lane.threads[k];
    }
    out << "\n";
  }
  for (const SyncEdge& e : s.syncs)
    out << "  sync " << name(e.from) << " -> " << name(e.to) << "\n";
  for (const Transfer& t : s.transfers)
    out << "  transfer " << name(t.from) << " -> " << name(t.to) << " (dev " << t.src_device
        << " -> " << t.dst_device << ")\n";
  return out.str();
}

}  // namespace braid::sched
