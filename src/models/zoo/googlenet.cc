#include "base/error.h"
#include "models/zoo.h"

namespace braid::models {

ir::Graph build_googlenet(const ZooOptions&) {
  BRAID_THROW(ErrorCode::kUnsupported, "zoo model builder build_googlenet is not written yet");
}

}  // namespace braid::models
