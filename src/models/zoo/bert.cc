#include "base/error.h"
#include "models/zoo.h"

namespace braid::models {

ir::Graph build_bert(const ZooOptions&) {
  BRAID_THROW(ErrorCode::kUnsupported, "zoo model builder build_bert is not written yet");
}

}  // namespace braid::models
