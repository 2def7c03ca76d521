// libFuzzer entry point for the weighted-DAG parser (.dag.json, dag_json.h). Any bytes must end
// in a UnitGraph or a braid::Error; a crash, an abort, a sanitizer report or any other exception
// is a bug. A parsed graph must survive the round trip: to_dag_json, then parse again, gives the
// same units and edges. scripts/fuzz.sh runs it.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "base/error.h"
#include "models/dag_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  braid::ir::UnitGraph g;
  try {
    g = braid::models::parse_dag_json_text(text, "fuzz.dag.json");
  } catch (const braid::Error&) {
    return 0;  // rejected with a message: fine
  }
  // What the parser accepted, the writer must write and the parser read back unchanged. An
  // exception here escapes and is reported.
  braid::ir::UnitGraph again =
      braid::models::parse_dag_json(braid::models::to_dag_json(g), "round trip");
  if (again.num_units() != g.num_units() || again.edges().size() != g.edges().size()) std::abort();
  return 0;
}
