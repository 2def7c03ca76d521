#include "base/error.h"
#include "models/zoo.h"

namespace braid::models {

ir::Graph build_inception_v3_ios(const ZooOptions&) {
  BRAID_THROW(ErrorCode::kUnsupported, "zoo model builder build_inception_v3_ios is not written yet");
}

}  // namespace braid::models
