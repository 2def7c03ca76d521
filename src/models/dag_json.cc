#include "models/dag_json.h"

#include <fstream>
#include <initializer_list>
#include <map>
#include <sstream>
#include <string>

#include "base/error.h"

namespace braid::models {

namespace {

using nlohmann::json;

// Reads one JSON document, remembering the source for messages. `at` is the JSON path of the
// value being read ("nodes[3].latency_ms").
class Reader {
 public:
  explicit Reader(std::string_view source) : source_(source) {}

  [[noreturn]] void fail(const std::string& at, const std::string& what) const {
    BRAID_THROW(ErrorCode::kInvalidModel, source_, ": ", at.empty() ? "" : at + ": ", what);
  }

  void expect_object(const json& j, const std::string& at,
                     std::initializer_list<std::string_view> keys) const {
    if (!j.is_object()) fail(at, std::string("expected an object, got ") + j.type_name());
    for (const auto& [key, value] : j.items()) {
      bool known = false;
      for (std::string_view k : keys) known = known || key == k;
      if (!known) fail(at, "unknown key '" + key + "'");
    }
  }
  const json& array(const json& obj, std::string_view key, const std::string& at) const {
    auto it = obj.find(key);
    if (it == obj.end()) fail(at, "missing key '" + std::string(key) + "'");
    if (!it->is_array())
      fail(join(at, key), std::string("expected an array, got ") + it->type_name());
    return *it;
  }
  std::string string(const json& j, const std::string& at) const {
    if (!j.is_string()) fail(at, std::string("expected a string, got ") + j.type_name());
    return j.get<std::string>();
  }
  double non_negative(const json& j, const std::string& at) const {
    if (!j.is_number()) fail(at, std::string("expected a number, got ") + j.type_name());
    double v = j.get<double>();
    if (!(v >= 0)) fail(at, "must be >= 0, got " + j.dump());
    return v;
  }
  int64_t count(const json& j, const std::string& at) const {
    if (!j.is_number_integer() || j.get<int64_t>() < 0)
      fail(at, "expected an integer >= 0, got " + j.dump());
    return j.get<int64_t>();
  }

  static std::string join(const std::string& at, std::string_view key) {
    return at.empty() ? std::string(key) : at + "." + std::string(key);
  }
  static std::string item(std::string_view array, size_t i) {
    return std::string(array) + "[" + std::to_string(i) + "]";
  }

 private:
  std::string source_;
};

std::optional<ir::UnitClass> unit_class_from_string(std::string_view s) {
  for (ir::UnitClass c : {ir::UnitClass::kUnknown, ir::UnitClass::kCompute, ir::UnitClass::kMemory})
    if (to_string(c) == s) return c;
  return std::nullopt;
}

std::string default_name(std::string_view source) {
  std::string name = std::filesystem::path(source).filename().string();
  for (std::string_view ext : {".dag.json", ".json"}) {
    if (name.size() > ext.size() && name.ends_with(ext)) {
      name.resize(name.size() - ext.size());
      break;
    }
  }
  return name.empty() ? "dag" : name;
}

ir::Unit parse_node(const Reader& r, const json& j, const std::string& at) {
  r.expect_object(j, at,
                  {"name", "latency_ms", "utilization", "kind", "resources", "flops", "bytes"});
  ir::Unit u;
  auto name = j.find("name");
  if (name == j.end()) r.fail(at, "missing key 'name'");
  u.name = r.string(*name, Reader::join(at, "name"));
  if (u.name.empty()) r.fail(Reader::join(at, "name"), "must not be empty");
  if (auto it = j.find("latency_ms"); it != j.end())
    u.latency = Millis(r.non_negative(*it, Reader::join(at, "latency_ms")));
  if (auto it = j.find("utilization"); it != j.end()) {
    u.utilization = r.non_negative(*it, Reader::join(at, "utilization"));
    if (*u.utilization > 1) r.fail(Reader::join(at, "utilization"), "must be in [0, 1]");
  }
  if (auto it = j.find("kind"); it != j.end()) {
    std::string kind = r.string(*it, Reader::join(at, "kind"));
    auto c = unit_class_from_string(kind);
    if (!c)
      r.fail(Reader::join(at, "kind"),
             "expected \"compute\", \"memory\" or \"unknown\", got '" + kind + "'");
    u.unit_class = *c;
  }
  if (auto it = j.find("resources"); it != j.end()) {
    std::string rat = Reader::join(at, "resources");
    r.expect_object(*it, rat, {"threads", "registers", "shared_memory"});
    ir::UnitResources res;
    auto field = [&](std::string_view key, int64_t& dst) {
      if (auto f = it->find(key); f != it->end()) dst = r.count(*f, Reader::join(rat, key));
    };
    field("threads", res.threads);
    field("registers", res.registers);
    field("shared_memory", res.shared_memory);
    u.resources = res;
  }
  if (auto it = j.find("flops"); it != j.end()) u.flops = r.count(*it, Reader::join(at, "flops"));
  if (auto it = j.find("bytes"); it != j.end()) u.bytes = r.count(*it, Reader::join(at, "bytes"));
  return u;
}

}  // namespace

ir::UnitGraph parse_dag_json(const nlohmann::json& j, std::string_view source) {
  Reader r(source);
  r.expect_object(j, "", {"format", "name", "nodes", "edges"});
  auto format = j.find("format");
  if (format == j.end())
    r.fail("", "missing key 'format' (expected \"" + std::string(kDagFormat) + "\")");
  if (std::string f = r.string(*format, "format"); f != kDagFormat)
    r.fail("format",
           "unsupported format '" + f + "', expected \"" + std::string(kDagFormat) + "\"");
  std::string name = default_name(source);
  if (auto it = j.find("name"); it != j.end()) name = r.string(*it, "name");

  const json& nodes = r.array(j, "nodes", "");
  if (nodes.empty()) r.fail("nodes", "a DAG needs at least one node");
  std::vector<ir::Unit> units;
  std::map<std::string, size_t, std::less<>> index_of;
  for (size_t i = 0; i < nodes.size(); ++i) {
    std::string at = Reader::item("nodes", i);
    units.push_back(parse_node(r, nodes[i], at));
    auto [it, inserted] = index_of.emplace(units.back().name, i);
    if (!inserted)
      r.fail(at + ".name", "duplicate node name '" + units.back().name + "' (also nodes[" +
                               std::to_string(it->second) + "])");
  }

  std::vector<ir::UnitEdge> edges;
  std::map<std::pair<size_t, size_t>, size_t> edge_index;
  if (j.contains("edges")) {
    const json& arr = r.array(j, "edges", "");
    for (size_t i = 0; i < arr.size(); ++i) {
      std::string at = Reader::item("edges", i);
      const json& e = arr[i];
      r.expect_object(e, at, {"from", "to", "transfer_ms", "bytes"});
      auto endpoint = [&](std::string_view key) {
        auto it = e.find(key);
        if (it == e.end()) r.fail(at, "missing key '" + std::string(key) + "'");
        std::string node = r.string(*it, Reader::join(at, key));
        auto found = index_of.find(node);
        if (found == index_of.end()) r.fail(Reader::join(at, key), "unknown node '" + node + "'");
        return found->second;
      };
      size_t from = endpoint("from"), to = endpoint("to");
      if (from == to) r.fail(at, "self-loop on node '" + units[from].name + "'");
      auto [dup, inserted] = edge_index.emplace(std::pair(from, to), i);
      if (!inserted)
        r.fail(at, "duplicate edge '" + units[from].name + "' -> '" + units[to].name +
                       "' (also edges[" + std::to_string(dup->second) + "])");
      ir::UnitEdge edge{make_id<UnitId>(from), make_id<UnitId>(to)};
      if (auto it = e.find("transfer_ms"); it != e.end())
        edge.transfer = Millis(r.non_negative(*it, Reader::join(at, "transfer_ms")));
      if (auto it = e.find("bytes"); it != e.end())
        edge.bytes = r.count(*it, Reader::join(at, "bytes"));
      edges.push_back(edge);
    }
  }
  try {
    return ir::UnitGraph::from_dag(std::move(name), std::move(units), std::move(edges));
  } catch (const Error& e) {  // a cycle: say which file it came from
    BRAID_THROW(e.code(), source, ": ", e.what());
  }
}

ir::UnitGraph parse_dag_json_text(std::string_view text, std::string_view source) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number overflow
    BRAID_THROW(ErrorCode::kInvalidModel, source, ": malformed JSON: ", e.what());
  }
  return parse_dag_json(j, source);
}

ir::UnitGraph load_dag_json_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  BRAID_CHECK(in.good() && !std::filesystem::is_directory(path), ErrorCode::kNotFound,
              "cannot open weighted DAG file '", path.string(), "'");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_dag_json_text(text.str(), path.string());
}

nlohmann::json to_dag_json(const ir::UnitGraph& graph) {
  json nodes = json::array();
  for (const ir::Unit& u : graph.units()) {
    json n = {{"name", u.name}};
    if (u.latency) n["latency_ms"] = Millis(*u.latency).count();
    if (u.utilization) n["utilization"] = *u.utilization;
    if (u.unit_class != ir::UnitClass::kUnknown) n["kind"] = to_string(u.unit_class);
    if (u.resources)
      n["resources"] = {{"threads", u.resources->threads},
                        {"registers", u.resources->registers},
                        {"shared_memory", u.resources->shared_memory}};
    if (u.flops != 0) n["flops"] = u.flops;
    if (u.bytes != 0) n["bytes"] = u.bytes;
    nodes.push_back(std::move(n));
  }
  json edges = json::array();
  for (const ir::UnitEdge& e : graph.edges()) {
    json o = {{"from", graph.unit(e.from).name}, {"to", graph.unit(e.to).name}};
    if (e.transfer) o["transfer_ms"] = Millis(*e.transfer).count();
    if (e.bytes != 0) o["bytes"] = e.bytes;
    edges.push_back(std::move(o));
  }
  return {{"format", kDagFormat},
          {"name", graph.name()},
          {"nodes", std::move(nodes)},
          {"edges", std::move(edges)}};
}

void write_dag_json_file(const ir::UnitGraph& graph, const std::filesystem::path& path) {
  std::ofstream out(path, std::ios::binary);
  BRAID_CHECK(out.good(), ErrorCode::kInvalidArgument, "cannot write '", path.string(), "'");
  out << to_dag_json(graph).dump(2) << "\n";
  BRAID_CHECK(out.good(), ErrorCode::kInvalidArgument, "failed writing '", path.string(), "'");
}

}  // namespace braid::models
