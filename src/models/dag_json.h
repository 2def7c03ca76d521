// Weighted DAGs as JSON (.dag.json): the papers' toy examples (LIOS Fig. 3, HIOS Fig. 4) and
// generated graphs, with no operators behind them. Each node is one schedule unit with a
// latency; each edge may carry a cross-device transfer time (HIOS).
//
//   {"format": "braid.dag/1", "name": "diamond",
//    "nodes": [{"name": "a", "latency_ms": 3, "kind": "compute",
//               "resources": {"threads": 256, "registers": 32, "shared_memory": 0}}, ...],
//    "edges": [{"from": "a", "to": "b", "transfer_ms": 0.1}, ...]}
//
//   ir::UnitGraph g = load_dag_json_file("tests/golden/diamond.dag.json");
//   nlohmann::json j = to_dag_json(g);   // parse_dag_json(j, "x") gives g back
//
// Node keys: name (required, unique), latency_ms (>= 0; absent = unknown), kind
// ("compute" | "memory" | "unknown", default unknown), resources (Opara's per-launch demand,
// integers >= 0), flops and bytes (integers >= 0). Edge keys: from, to (node names; required),
// transfer_ms (>= 0), bytes. Unknown keys are errors, so a typo never passes silently.
// Units are renumbered topologically (ties by file order), see ir::UnitGraph::from_dag.
#pragma once

#include <filesystem>
#include <string_view>

#include <nlohmann/json.hpp>

#include "ir/unit_graph.h"

namespace braid::models {

inline constexpr std::string_view kDagFormat = "braid.dag/1";

// Throws braid::Error(kInvalidModel) naming `source`, the node or edge index and the field
// ("dag.json: nodes[3].latency_ms: must be >= 0, got -1").
ir::UnitGraph parse_dag_json(const nlohmann::json& json, std::string_view source);
// As parse_dag_json, from text; malformed JSON reports nlohmann's byte position.
ir::UnitGraph parse_dag_json_text(std::string_view text, std::string_view source);
// kNotFound for a missing file; the DAG's name defaults to the file name without ".dag.json".
ir::UnitGraph load_dag_json_file(const std::filesystem::path& path);

// Writes every unit and edge of `graph` (a fused model too: units without a latency omit it).
nlohmann::json to_dag_json(const ir::UnitGraph& graph);
void write_dag_json_file(const ir::UnitGraph& graph, const std::filesystem::path& path);

}  // namespace braid::models
