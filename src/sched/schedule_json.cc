// Schedule <-> JSON ("braid.schedule/1", docs/schedule-format.md). Units travel by name;
// every parse error names its JSON path so a hand-edited schedule is easy to fix.
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <unordered_map>
#include <utility>

#include "base/error.h"
#include "sched/schedule.h"

namespace braid::sched {

namespace {

using nlohmann::json;

std::string at_key(const std::string& at, std::string_view key) {
  return at.empty() ? std::string(key) : at + "." + std::string(key);
}
std::string at_item(const std::string& at, size_t i) {
  return at + "[" + std::to_string(i) + "]";
}

class Parser {
 public:
  explicit Parser(const ir::UnitGraph& graph) : graph_(graph) {
    for (size_t i = 0; i < graph.num_units(); ++i) {
      auto [it, inserted] =
          by_name_.emplace(graph.unit(make_id<UnitId>(i)).name, make_id<UnitId>(i));
      BRAID_CHECK(inserted, ErrorCode::kInvalidModel, "graph '", graph.name(),
                  "' has two units named '", it->first,
                  "'; schedules name units, so names must be unique");
    }
  }

  [[noreturn]] static void fail(const std::string& at, const std::string& what) {
    BRAID_THROW(ErrorCode::kInvalidSchedule, at.empty() ? "" : at + ": ", what);
  }

  static void expect_object(const json& j, const std::string& at,
                            std::initializer_list<std::string_view> keys) {
    if (!j.is_object()) fail(at, std::string("expected an object, got ") + j.type_name());
    for (const auto& [key, value] : j.items()) {
      bool known = false;
      for (std::string_view k : keys) known = known || key == k;
      if (!known) fail(at, "unknown key '" + key + "'");
    }
  }
  static const json& require(const json& obj, std::string_view key, const std::string& at) {
    auto it = obj.find(key);
    if (it == obj.end()) fail(at, "missing key '" + std::string(key) + "'");
    return *it;
  }
  static const json& array(const json& j, const std::string& at) {
    if (!j.is_array()) fail(at, std::string("expected an array, got ") + j.type_name());
    return j;
  }
  static std::string string(const json& j, const std::string& at) {
    if (!j.is_string()) fail(at, std::string("expected a string, got ") + j.type_name());
    return j.get<std::string>();
  }
  static int integer(const json& j, const std::string& at) {
    if (!j.is_number_integer()) fail(at, "expected an integer, got " + j.dump());
    // An unsigned value past int64 would read as a negative one.
    if (j.is_number_unsigned() ? !std::in_range<int>(j.get<uint64_t>())
                               : !std::in_range<int>(j.get<int64_t>()))
      fail(at, "integer out of range: " + j.dump());
    return static_cast<int>(j.get<int64_t>());
  }
  static double number(const json& j, const std::string& at) {
    if (!j.is_number()) fail(at, std::string("expected a number, got ") + j.type_name());
    return j.get<double>();
  }
  // Optional integer member with a default.
  static int integer_or(const json& obj, std::string_view key, const std::string& at,
                        int fallback) {
    auto it = obj.find(key);
    return it == obj.end() ? fallback : integer(*it, at_key(at, key));
  }

  UnitId unit(const json& j, const std::string& at) const {
    std::string name = string(j, at);
    auto it = by_name_.find(name);
    if (it == by_name_.end())
      fail(at, "unknown unit '" + name + "' (graph '" + graph_.name() + "')");
    return it->second;
  }
  std::vector<UnitId> units(const json& j, const std::string& at) const {
    std::vector<UnitId> out;
    for (size_t i = 0; i < array(j, at).size(); ++i) out.push_back(unit(j[i], at_item(at, i)));
    return out;
  }
  static std::vector<int> integers(const json& j, const std::string& at) {
    std::vector<int> out;
    for (size_t i = 0; i < array(j, at).size(); ++i) out.push_back(integer(j[i], at_item(at, i)));
    return out;
  }
  static std::vector<Micros> times(const json& j, const std::string& at) {
    std::vector<Micros> out;
    for (size_t i = 0; i < array(j, at).size(); ++i)
      out.push_back(Millis(number(j[i], at_item(at, i))));
    return out;
  }

  Stage stage(const json& j, const std::string& at) const {
    expect_object(j, at, {"device", "kind", "groups", "threads"});
    Stage st;
    st.device = integer_or(j, "device", at, 0);
    if (auto it = j.find("kind"); it != j.end()) {
      std::string kind = string(*it, at_key(at, "kind"));
      if (kind == "concurrent")
        st.kind = StageKind::kConcurrent;
      else if (kind == "merge")
        st.kind = StageKind::kMerge;
      else
        fail(at_key(at, "kind"), "expected \"concurrent\" or \"merge\", got '" + kind + "'");
    }
    std::string gat = at_key(at, "groups");
    const json& groups = array(require(j, "groups", at), gat);
    for (size_t g = 0; g < groups.size(); ++g)
      st.groups.push_back(units(groups[g], at_item(gat, g)));
    if (auto it = j.find("threads"); it != j.end())
      st.threads = integers(*it, at_key(at, "threads"));
    return st;
  }

  Lane lane(const json& j, const std::string& at) const {
    expect_object(j, at, {"device", "stream", "units", "start_ms", "finish_ms", "threads"});
    Lane lane;
    lane.device = integer_or(j, "device", at, 0);
    lane.stream = integer(require(j, "stream", at), at_key(at, "stream"));
    lane.units = units(require(j, "units", at), at_key(at, "units"));
    if (auto it = j.find("start_ms"); it != j.end())
      lane.start = times(*it, at_key(at, "start_ms"));
    if (auto it = j.find("finish_ms"); it != j.end())
      lane.finish = times(*it, at_key(at, "finish_ms"));
    if (auto it = j.find("threads"); it != j.end())
      lane.threads = integers(*it, at_key(at, "threads"));
    return lane;
  }

 private:
  const ir::UnitGraph& graph_;
  std::unordered_map<std::string, UnitId> by_name_;
};

std::string unit_name(const ir::UnitGraph& graph, UnitId u) {
  BRAID_CHECK(index(u) < graph.num_units(), ErrorCode::kInvalidSchedule, "unit id ", index(u),
              " is out of range: graph '", graph.name(), "' has ", graph.num_units(), " units");
  return graph.unit(u).name;
}

template <typename Json>
Json names(const ir::UnitGraph& graph, const std::vector<UnitId>& units) {
  Json out = Json::array();
  for (UnitId u : units) out.push_back(unit_name(graph, u));
  return out;
}

template <typename Json>
Json millis(const std::vector<Micros>& times) {
  Json out = Json::array();
  for (Micros t : times) out.push_back(Millis(t).count());
  return out;
}

// The JSON of a schedule, as nlohmann::json (keys sorted) or ordered_json (keys in the
// documented order, for files people read).
template <typename Json>
Json build(const Schedule& s, const ir::UnitGraph& graph) {
  Json j = {{"format", kScheduleFormat},
            {"model", s.model},
            {"algorithm", s.algorithm},
            {"devices", s.num_devices},
            {"num_units", graph.num_units()}};
  if (s.has_allotment()) j["cores"] = s.cores;
  if (!s.stages.empty()) {
    Json stages = Json::array();
    for (const Stage& st : s.stages) {
      Json groups = Json::array();
      for (const auto& group : st.groups) groups.push_back(names<Json>(graph, group));
      Json stage = {
          {"device", st.device}, {"kind", to_string(st.kind)}, {"groups", std::move(groups)}};
      if (!st.threads.empty()) stage["threads"] = st.threads;
      stages.push_back(std::move(stage));
    }
    j["stages"] = std::move(stages);
  }
  if (!s.lanes.empty()) {
    Json lanes = Json::array();
    for (const Lane& lane : s.lanes) {
      Json l = {{"device", lane.device},
                {"stream", lane.stream},
                {"units", names<Json>(graph, lane.units)}};
      if (!lane.start.empty()) l["start_ms"] = millis<Json>(lane.start);
      if (!lane.finish.empty()) l["finish_ms"] = millis<Json>(lane.finish);
      if (!lane.threads.empty()) l["threads"] = lane.threads;
      lanes.push_back(std::move(l));
    }
    j["streams"] = std::move(lanes);
  }
  if (!s.syncs.empty()) {
    Json syncs = Json::array();
    for (const SyncEdge& e : s.syncs)
      syncs.push_back({{"from", unit_name(graph, e.from)}, {"to", unit_name(graph, e.to)}});
    j["syncs"] = std::move(syncs);
  }
  if (!s.launch_order.empty()) j["launch_order"] = names<Json>(graph, s.launch_order);
  if (!s.transfers.empty()) {
    Json transfers = Json::array();
    for (const Transfer& t : s.transfers)
      transfers.push_back({{"from", unit_name(graph, t.from)},
                           {"to", unit_name(graph, t.to)},
                           {"src_device", t.src_device},
                           {"dst_device", t.dst_device}});
    j["transfers"] = std::move(transfers);
  }
  if (s.predicted_latency) j["predicted_ms"] = Millis(*s.predicted_latency).count();
  if (!s.stats.is_null() && !s.stats.empty()) j["stats"] = Json::parse(s.stats.dump());
  return j;
}

// Pretty-prints like dump(2), but a value whose compact form is short stays on one line.
void format(const nlohmann::ordered_json& j, int indent, std::string& out) {
  constexpr size_t kInlineWidth = 96;
  std::string compact = j.dump();
  if (!j.is_structured() || j.empty() ||
      compact.size() + static_cast<size_t>(indent) <= kInlineWidth) {
    out += compact;
    return;
  }
  const std::string pad(static_cast<size_t>(indent) + 2, ' ');
  out += j.is_object() ? "{\n" : "[\n";
  size_t k = 0;
  for (auto it = j.begin(); it != j.end(); ++it, ++k) {
    out += pad;
    if (j.is_object()) out += json(it.key()).dump() + ": ";
    format(*it, indent + 2, out);
    out += k + 1 < j.size() ? ",\n" : "\n";
  }
  out += std::string(static_cast<size_t>(indent), ' ') + (j.is_object() ? "}" : "]");
}

}  // namespace

std::string to_json_text(const Schedule& s, const ir::UnitGraph& graph) {
  std::string out;
  format(build<nlohmann::ordered_json>(s, graph), 0, out);
  return out + "\n";
}

nlohmann::json to_json(const Schedule& s, const ir::UnitGraph& graph) {
  return build<json>(s, graph);
}

Schedule schedule_from_json(const nlohmann::json& j, const ir::UnitGraph& graph) {
  using P = Parser;
  P p(graph);
  P::expect_object(j, "",
                   {"format", "model", "algorithm", "devices", "num_units", "stages", "streams",
                    "syncs", "launch_order", "transfers", "predicted_ms", "stats", "cores"});
  std::string format = P::string(P::require(j, "format", ""), "format");
  if (format != kScheduleFormat) {
    constexpr std::string_view kFamily = "braid.schedule/";
    P::fail("format", format.starts_with(kFamily)
                          ? "unsupported version '" + format + "' (this build reads " +
                                std::string(kScheduleFormat) + ")"
                          : "unknown format '" + format + "', expected \"" +
                                std::string(kScheduleFormat) + "\"");
  }
  Schedule s;
  if (auto it = j.find("model"); it != j.end()) s.model = P::string(*it, "model");
  if (auto it = j.find("algorithm"); it != j.end()) s.algorithm = P::string(*it, "algorithm");
  s.num_devices = P::integer_or(j, "devices", "", 1);
  if (auto it = j.find("num_units"); it != j.end()) {
    int n = P::integer(*it, "num_units");
    if (n < 0 || static_cast<size_t>(n) != graph.num_units())
      P::fail("num_units", "the schedule is for " + std::to_string(n) + " units, graph '" +
                               graph.name() + "' has " + std::to_string(graph.num_units()));
  }
  s.cores = P::integer_or(j, "cores", "", 0);
  const bool has_stages = j.contains("stages"), has_streams = j.contains("streams");
  if (has_stages == has_streams)
    P::fail("", "expected exactly one of 'stages' (stage-based) and 'streams' (stream-based)");
  if (has_stages) {
    const json& stages = P::array(j["stages"], "stages");
    for (size_t i = 0; i < stages.size(); ++i)
      s.stages.push_back(p.stage(stages[i], at_item("stages", i)));
  } else {
    const json& lanes = P::array(j["streams"], "streams");
    for (size_t i = 0; i < lanes.size(); ++i)
      s.lanes.push_back(p.lane(lanes[i], at_item("streams", i)));
  }
  if (auto it = j.find("syncs"); it != j.end()) {
    for (size_t i = 0; i < P::array(*it, "syncs").size(); ++i) {
      std::string at = at_item("syncs", i);
      P::expect_object((*it)[i], at, {"from", "to"});
      s.syncs.push_back({p.unit(P::require((*it)[i], "from", at), at_key(at, "from")),
                         p.unit(P::require((*it)[i], "to", at), at_key(at, "to"))});
    }
  }
  if (auto it = j.find("launch_order"); it != j.end())
    s.launch_order = p.units(*it, "launch_order");
  if (auto it = j.find("transfers"); it != j.end()) {
    for (size_t i = 0; i < P::array(*it, "transfers").size(); ++i) {
      std::string at = at_item("transfers", i);
      const json& t = (*it)[i];
      P::expect_object(t, at, {"from", "to", "src_device", "dst_device"});
      s.transfers.push_back(
          {p.unit(P::require(t, "from", at), at_key(at, "from")),
           p.unit(P::require(t, "to", at), at_key(at, "to")),
           P::integer(P::require(t, "src_device", at), at_key(at, "src_device")),
           P::integer(P::require(t, "dst_device", at), at_key(at, "dst_device"))});
    }
  }
  if (auto it = j.find("predicted_ms"); it != j.end())
    s.predicted_latency = Millis(P::number(*it, "predicted_ms"));
  if (auto it = j.find("stats"); it != j.end()) {
    if (!it->is_object())
      P::fail("stats", std::string("expected an object, got ") + it->type_name());
    s.stats = *it;
  }
  return s;
}

Schedule parse_schedule_text(std::string_view text, const ir::UnitGraph& graph,
                             std::string_view source) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number overflow
    BRAID_THROW(ErrorCode::kInvalidSchedule, source, ": malformed JSON: ", e.what());
  }
  try {
    return schedule_from_json(j, graph);
  } catch (const Error& e) {
    BRAID_THROW(e.code(), source, ": ", e.what());
  }
}

Schedule read_schedule_file(const std::filesystem::path& path, const ir::UnitGraph& graph) {
  std::ifstream in(path, std::ios::binary);
  BRAID_CHECK(in.good() && !std::filesystem::is_directory(path), ErrorCode::kNotFound,
              "cannot open schedule file '", path.string(), "'");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_schedule_text(text.str(), graph, path.string());
}

void write_schedule_file(const Schedule& s, const ir::UnitGraph& graph,
                         const std::filesystem::path& path) {
  std::string text = to_json_text(s, graph);
  std::ofstream out(path, std::ios::binary);
  BRAID_CHECK(out.good(), ErrorCode::kInvalidArgument, "cannot write '", path.string(), "'");
  out << text;
  BRAID_CHECK(out.good(), ErrorCode::kInvalidArgument, "failed writing '", path.string(), "'");
}

}  // namespace braid::sched
