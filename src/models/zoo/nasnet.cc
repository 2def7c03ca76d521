#include "base/error.h"
#include "models/zoo.h"

namespace braid::models {

ir::Graph build_nasnet_ios(const ZooOptions&) {
  BRAID_THROW(ErrorCode::kUnsupported, "zoo model builder build_nasnet_ios is not written yet");
}

}  // namespace braid::models
