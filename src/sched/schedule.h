// sched::Schedule — the contract between schedulers and executors (docs/schedule-format.md).
// A schedule is data: serializable (JSON, units by name), diffable and checkable
// (sched/validate.h). A scheduler never calls an executor; an executor never re-decides it.
//
//   Schedule s;                                        // IOS: stage-based
//   s.stages.push_back({.groups = {{a}, {b, c}}});     // a ∥ (b then c)
//   s.stages.push_back({.kind = StageKind::kMerge, .groups = {{d}, {e}}});
//   validate_or_throw(units, s);
//   nlohmann::json j = to_json(s, units);              // {"format": "braid.schedule/1", ...}
//
//   Schedule t;                                        // LIOS / Opara: stream-based
//   t.lanes = {{.stream = 0, .units = {a, b}}, {.stream = 1, .units = {c}}};
//   t.syncs = {{.from = a, .to = c}};                  // c's stream waits for a
//
// Vocabulary (the papers' words):
//  - stage (ios.txt §3): a set of units run together; the stages of one device run in list
//    order with a barrier between consecutive stages of that device.
//  - group: an in-order list of units on one stream of a concurrent stage; the groups of a
//    stage run concurrently. Group i of a stage runs on stream i of its device.
//  - operator merge (ios.txt §3, §4.2): a stage whose units (each a group of one) become one
//    wider Conv; see validate.h for when that is legal.
//  - lane: the ordered units of one (device, stream), for stream-based schedulers (LIOS,
//    Nimble, Opara). Lanes need explicit syncs: `to` waits for an event recorded after `from`.
//  - launch order (opara.txt §3.3): the order in which one host thread issues every launch.
//  - transfer (hios.txt §III): a copy of `from`'s output from its device to `to`'s device;
//    `to` waits for it. Every graph edge between devices needs one.
//  - allotment (moldable tasks): how many threads each unit's kernels use, given per group of a
//    stage or per unit of a lane, within the plan's `cores`. Without it every unit runs at the
//    executor's threads per stream, as schedules always have. The validator rejects an
//    allotment whose units that may run at once ask for more than `cores` (validate.h rule 9).
// Exactly one of `stages` and `lanes` is non-empty: that is the schedule's form.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/ids.h"
#include "base/units.h"
#include "ir/unit_graph.h"

namespace braid::sched {

inline constexpr std::string_view kScheduleFormat = "braid.schedule/1";

enum class StageKind : uint8_t { kConcurrent, kMerge };
std::string_view to_string(StageKind);

struct Stage {
  int device = 0;
  StageKind kind = StageKind::kConcurrent;
  // Concurrent: groups run concurrently, group i on stream i; units of a group in order.
  // Merge: every group holds exactly one unit; all of them run as one kernel.
  std::vector<std::vector<UnitId>> groups;
  std::vector<int> threads;  // the allotment: empty, or one per group (each of its units)
};

struct Lane {
  int device = 0;
  int stream = 0;
  std::vector<UnitId> units;  // launch order on this stream
  // Planned times (LIOS's EST/EFT): empty, or one entry per unit.
  std::vector<Micros> start;
  std::vector<Micros> finish;
  std::vector<int> threads;  // the allotment: empty, or one per unit
};

// `to` waits for `from` (one event recorded after `from`, waited before `to`).
struct SyncEdge {
  UnitId from{};
  UnitId to{};
  bool operator==(const SyncEdge&) const = default;
};

// `from`'s output is copied from src_device to dst_device, and `to` waits for the copy.
struct Transfer {
  UnitId from{};
  UnitId to{};
  int src_device = 0;
  int dst_device = 0;
  bool operator==(const Transfer&) const = default;
};

struct Schedule {
  std::string algorithm;  // the scheduler that made it ("greedy", "ios_dp", ...)
  std::string model;      // the graph it is for (informational)
  int num_devices = 1;

  std::vector<Stage> stages;         // stage-based form
  std::vector<Lane> lanes;           // stream-based form
  std::vector<SyncEdge> syncs;       // stream-based form only
  std::vector<UnitId> launch_order;  // optional: empty, or a permutation of all units
  std::vector<Transfer> transfers;   // edges between devices
  // The cores the allotment shares; 0: no allotment (every stage and lane without threads).
  int cores = 0;

  std::optional<Micros> predicted_latency;          // from the cost model that produced it
  nlohmann::json stats = nlohmann::json::object();  // free-form: search time, transitions...

  bool is_stage_based() const { return !stages.empty(); }
  bool is_stream_based() const { return !lanes.empty(); }
  bool has_allotment() const { return cores > 0; }
};

// Each unit's threads under the schedule's allotment, indexed by UnitId; `fallback` for units
// it does not give (every unit, without an allotment).
std::vector<int> unit_threads(const Schedule& s, size_t num_units, int fallback);

// Where each unit is placed, for executors and checks. Entries of units not placed are
// nullopt. For a unit placed twice, the first placement wins (check() reports the duplicate).
struct Placement {
  int device = 0;
  int stream = 0;       // stage form: the group index
  size_t stage = 0;     // stage form: index into stages; stream form: index into lanes
  size_t position = 0;  // index inside the group or lane
};
std::vector<std::optional<Placement>> placements(const Schedule& s, size_t num_units);

// Every unit in schedule order: stage by stage, group by group; or lane by lane.
std::vector<UnitId> scheduled_units(const Schedule& s);

// The most streams any device uses (groups of its widest stage, or its lanes).
int num_streams(const Schedule& s);

// A human-readable dump, one line per stage or lane:
//   stage 0 (dev 0, concurrent): [conv1] [conv2 conv3]
std::string to_string(const Schedule& s, const ir::UnitGraph& graph);

// JSON (schedule_json.cc). Units are written by name; parsing resolves names against `graph`
// and throws braid::Error(kInvalidSchedule) naming the JSON path
// ("stages[3].groups[1][0]: unknown unit 'foo'"). Parsing checks the format, not the rules
// of validate.h: a parsed schedule may still be invalid.
nlohmann::json to_json(const Schedule& s, const ir::UnitGraph& graph);
Schedule schedule_from_json(const nlohmann::json& json, const ir::UnitGraph& graph);
// to_json as file text: two-space indent, with short arrays and objects kept on one line
// ({"device":0,"kind":"concurrent","groups":[["a"],["b","c"]]}). Ends with a newline.
std::string to_json_text(const Schedule& s, const ir::UnitGraph& graph);
// schedule_from_json on text; kInvalidSchedule for malformed JSON (with its position), every error
// prefixed with `source`.
Schedule parse_schedule_text(std::string_view text, const ir::UnitGraph& graph,
                             std::string_view source);
// Files: kNotFound for a missing file, kInvalidSchedule for malformed JSON (with its position).
Schedule read_schedule_file(const std::filesystem::path& path, const ir::UnitGraph& graph);
void write_schedule_file(const Schedule& s, const ir::UnitGraph& graph,
                         const std::filesystem::path& path);

}  // namespace braid::sched
