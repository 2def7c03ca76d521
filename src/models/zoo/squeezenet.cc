#include "base/error.h"
#include "models/zoo.h"

namespace braid::models {

ir::Graph build_squeezenet_ios(const ZooOptions&) {
  BRAID_THROW(ErrorCode::kUnsupported, "zoo model builder build_squeezenet_ios is not written yet");
}

}  // namespace braid::models
