#include "runtime/step.h"

#include <fmt/format.h>

namespace braid::runtime {

std::string describe(const Step& step) {
  std::string s = step.kind == StepKind::kCombined ? "comb" : "ind";
  for (const Piece& p : step.pieces) {
    if (step.kind == StepKind::kCombined)
      s += fmt::format(" {}:{}", p.model, p.first_block);
    else
      s += fmt::format(" {}:{}-{}", p.model, p.first_block, p.last_block);
  }
  return s;
}

}  // namespace braid::runtime
