#include "base/error.h"
#include "models/zoo.h"

namespace braid::models {

ir::Graph build_inception_v3_torchvision(const ZooOptions&) {
  BRAID_THROW(ErrorCode::kUnsupported, "zoo model builder build_inception_v3_torchvision is not written yet");
}

}  // namespace braid::models
