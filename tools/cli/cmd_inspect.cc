#include <fmt/core.h>

#include <algorithm>
#include <iostream>

#include "commands.h"
#include "ir/analysis.h"
#include "models/zoo.h"
#include "summary.h"

namespace braid::cli {
namespace {

void print_table_header() {
  fmt::print("{:<18} {:>6} {:>6} {:>9} {:>6} {:>6} {:>8} {:>9}\n", "model", "units", "edges",
             "distinct", "blocks", "width", "GFLOPs", "params(M)");
}

void print_table_row(const nlohmann::json& s) {
  fmt::print("{:<18} {:>6} {:>6} {:>9} {:>6} {:>6} {:>8.2f} {:>9.2f}\n",
             s["name"].get<std::string>(), s["units"].get<size_t>(), s["edges"].get<size_t>(),
             s["distinct_edges"].get<size_t>(), s["blocks"].get<size_t>(), s["width"].get<size_t>(),
             s["flops"].get<double>() / 1e9, s["params"].get<double>() / 1e6);
}

// The inputs' and outputs' types, each named once: "float16", "float32" for an FP16 model
// converted with keep_io_types, "int64/float16" for one with int64 ids in.
std::string io_types(const models::DeclaredTypes& d) {
  std::vector<std::string> names;
  for (const auto* list : {&d.inputs, &d.outputs})
    for (models::ElementType t : *list) {
      const std::string name(models::to_string(t));
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    }
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : "/") + n;
  return out;
}

void print_details(const models::LoadedModel& m, const nlohmann::json& s) {
  print_table_header();
  print_table_row(s);
  fmt::print("\nblock sizes:");
  for (size_t n : s["block_sizes"]) fmt::print(" {}", n);
  fmt::print("\n");
  if (s.contains("sequential_ms"))
    fmt::print("sequential {:.3f} ms, critical path {:.3f} ms\n", s["sequential_ms"].get<double>(),
               s["critical_path_ms"].get<double>());
  if (m.graph) {
    // A float32 model's I/O are float32 unless said; an int64 or bool one, or any of an upcast
    // model, names its dtype.
    auto dtype = [&](const nlohmann::json& t) {
      const std::string d = t["dtype"].get<std::string>();
      return d == "float32" && !m.declared.upcast() ? std::string() : " " + d;
    };
    for (const auto& t : s["inputs"])
      fmt::print("input  {} {}{}\n", t["name"].get<std::string>(), t["shape"].dump(), dtype(t));
    for (const auto& t : s["outputs"])
      fmt::print("output {} {}{}\n", t["name"].get<std::string>(), t["shape"].dump(), dtype(t));
    if (m.declared.upcast())
      fmt::print("precision: {} model, run upcast to FP32 on the CPU (inputs/outputs {})\n",
                 models::to_string(m.declared.floats), io_types(m.declared));
  }
}

}  // namespace

void add_inspect_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("inspect", "Report a model's units, edges, blocks, width, FLOPs");
  static ModelFlags flags;
  static bool json = false, units = false;
  add_model_flags(*cmd, flags);
  cmd->add_flag("--json", json, "Print a JSON object");
  cmd->add_flag("--units", units, "Also list every unit with its ops and successors");
  flags.options.with_weights = false;
  cmd->callback([] {
    models::LoadedModel m = models::load_model(flags.spec, flags.options);
    nlohmann::json s = summarize(m);
    if (units) {
      nlohmann::json list = nlohmann::json::array();
      for (size_t i = 0; i < m.units.num_units(); ++i) {
        UnitId id = make_id<UnitId>(i);
        nlohmann::json succ = nlohmann::json::array();
        for (UnitId v : m.units.successors(id)) succ.push_back(m.units.unit(v).name);
        list.push_back({{"name", m.units.unit(id).name},
                        {"kind", m.units.signature(id)},
                        {"flops", m.units.unit(id).flops},
                        {"successors", succ}});
      }
      s["unit_list"] = list;
    }
    if (json) {
      std::cout << s.dump(2) << "\n";
      return;
    }
    print_details(m, s);
    if (units)
      for (const auto& u : s["unit_list"])
        fmt::print("  {:<40} {:<22} -> {}\n", u["name"].get<std::string>(),
                   u["kind"].get<std::string>(), u["successors"].dump());
  });
}

}  // namespace braid::cli
