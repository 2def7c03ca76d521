#include "runtime/step.h"

#include <fmt/format.h>

#include <algorithm>

#include "runtime/combined.h"

namespace braid::runtime {

std::string describe(const Step& step) {
  std::string s = step.kind == StepKind::kCombined ? "comb" : "ind";
  // Piece indices where a combined block other than the first begins.
  std::vector<size_t> starts;
  size_t at = 0;
  for (const CombinedSchedule* c : step.schedules) {
    if (at > 0) starts.push_back(at);
    at += c->sub_blocks.size();
  }
  for (size_t i = 0; i < step.pieces.size(); ++i) {
    const Piece& p = step.pieces[i];
    if (std::find(starts.begin(), starts.end(), i) != starts.end()) s += " |";
    if (step.kind == StepKind::kCombined)
      s += fmt::format(" {}:{}", p.model, p.first_block);
    else
      s += fmt::format(" {}:{}-{}", p.model, p.first_block, p.last_block);
  }
  return s;
}

}  // namespace braid::runtime
