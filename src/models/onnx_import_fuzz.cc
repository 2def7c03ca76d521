// libFuzzer entry point for the ONNX importer (IREE style: the fuzzer sits beside the parser).
// Any bytes must end in a consistent ImportedModel or a braid::Error; a crash, an abort
// (BRAID_ASSERT), a sanitizer report or any other exception is a bug. scripts/fuzz.sh runs it.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/error.h"
#include "ir/unit_graph.h"
#include "models/onnx_import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  braid::models::ImportedModel m;
  try {
    m = braid::models::import_onnx_bytes(bytes, "fuzz.onnx");
  } catch (const braid::Error&) {
    return 0;  // rejected with a message: fine
  }
  // Once imported, the model must be usable as load_model uses it: the fusion pass accepts its
  // unit hints and every parameter has its data. A throw here escapes and is reported.
  braid::ir::fuse(m.graph);
  m.weights.check_complete(*m.graph);
  return 0;
}
