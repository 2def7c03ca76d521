#include "runtime/step.h"

#include <fmt/format.h>

#include <algorithm>

#include "runtime/combined.h"

namespace braid::runtime {

bool schedules_cover_pieces(const Step& step) {
  size_t at = 0;
  for (const CombinedSchedule* c : step.schedules) {
    if (c == nullptr) return false;
    std::vector<SubBlock> covered;
    for (size_t k = 0; k < c->sub_blocks.size() && at < step.pieces.size(); ++k, ++at)
      covered.push_back({step.pieces[at].model, step.pieces[at].first_block});
    std::sort(covered.begin(), covered.end());
    if (covered != c->sub_blocks) return false;
  }
  return at == step.pieces.size();
}

std::string describe(const Step& step) {
  std::string s = step.kind == StepKind::kCombined ? "comb" : "ind";
  // Piece indices where a combined block other than the first begins.
  std::vector<size_t> starts;
  size_t at = 0;
  for (const CombinedSchedule* c : step.schedules) {
    if (at > 0) starts.push_back(at);
    at += c != nullptr ? c->sub_blocks.size() : 0;
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
