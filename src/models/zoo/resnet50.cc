#include "base/error.h"
#include "models/zoo.h"

namespace braid::models {

ir::Graph build_resnet50(const ZooOptions&) {
  BRAID_THROW(ErrorCode::kUnsupported, "zoo model builder build_resnet50 is not written yet");
}

}  // namespace braid::models
