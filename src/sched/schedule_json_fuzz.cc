// libFuzzer entry point for schedule JSON text (parse_schedule_text, which read_schedule_file and
// so `braid run --schedule` use) and the validator behind it. The
// graph is tests/golden/diamond.dag.json (a -> {b, c} -> d), so the golden diamond schedules are
// valid seeds. Any bytes must end in a braid::Error or a Schedule; a schedule that check() finds
// no error in must lower (lower.h asserts on what validation should have refused: a deadlock, a
// block order) and survive the JSON round trip. A crash, an abort (BRAID_ASSERT), a sanitizer
// report or any other exception is a bug. scripts/fuzz.sh runs it.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "base/error.h"
#include "models/dag_json.h"
#include "sched/lower.h"
#include "sched/schedule.h"
#include "sched/validate.h"

namespace {

constexpr std::string_view kDiamond = R"({
  "format": "braid.dag/1", "name": "diamond",
  "nodes": [
    {"name": "a", "latency_ms": 1.0, "kind": "compute",
     "resources": {"threads": 256, "registers": 32, "shared_memory": 4096}},
    {"name": "b", "latency_ms": 2.0, "kind": "compute"},
    {"name": "c", "latency_ms": 3.0, "kind": "memory"},
    {"name": "d", "latency_ms": 1.5}],
  "edges": [
    {"from": "a", "to": "b", "transfer_ms": 0.1}, {"from": "a", "to": "c", "transfer_ms": 0.1},
    {"from": "b", "to": "d", "transfer_ms": 0.2}, {"from": "c", "to": "d", "transfer_ms": 0.3}]})";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const braid::ir::UnitGraph graph = braid::models::parse_dag_json_text(kDiamond, "diamond");
  braid::sched::Schedule s;
  try {
    s = braid::sched::parse_schedule_text(
        std::string_view(reinterpret_cast<const char*>(data), size), graph, "fuzz.schedule.json");
  } catch (const braid::Error&) {
    return 0;  // rejected with a message naming the JSON path or position: fine
  }
  if (braid::sched::has_errors(braid::sched::check(graph, s))) return 0;
  // Valid: every consumer may rely on it. An exception or an assertion here is a bug.
  braid::sched::ExecutionPlan plan = braid::sched::lower(graph, s);
  (void)plan;
  braid::sched::Schedule again =
      braid::sched::schedule_from_json(braid::sched::to_json(s, graph), graph);
  if (braid::sched::has_errors(braid::sched::check(graph, again))) std::abort();
  return 0;
}
