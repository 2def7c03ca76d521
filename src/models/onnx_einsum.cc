#include "models/onnx_einsum.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "base/error.h"

namespace braid::models::onnx_detail {
namespace {

constexpr auto kBad = ErrorCode::kInvalidModel;
constexpr auto kUnsupported = ErrorCode::kUnsupported;
constexpr const char* kSupported =
    "; braid imports Einsum as a batched matrix product only: two operands, the same batch "
    "letters in the same order leading both operands and the output, one contracted letter, "
    "e.g. 'bij,bjk->bik' (either operand's or the output's last two letters may be swapped)";

// Splits "ab,cd" at the commas.
std::vector<std::string> split_terms(const std::string& s) {
  std::vector<std::string> terms(1);
  for (char ch : s) {
    if (ch == ',') {
      terms.emplace_back();
    } else {
      terms.back() += ch;
    }
  }
  return terms;
}

bool has_repeated_letter(std::string term) {
  std::sort(term.begin(), term.end());
  return std::adjacent_find(term.begin(), term.end()) != term.end();
}

bool contains(const std::string& s, char ch) {
  return s.find(ch) != std::string::npos;
}

ir::TransposeAttrs swap_last_two(int batch_rank) {
  ir::TransposeAttrs t;
  for (int64_t d = 0; d < batch_rank; ++d) t.perm.push_back(d);
  t.perm.push_back(batch_rank + 1);
  t.perm.push_back(batch_rank);
  return t;
}

}  // namespace

EinsumMatMul parse_einsum_matmul(std::string_view equation, std::string_view who) {
  const std::string eq(equation);
  auto refuse = [&](ErrorCode code, const std::string& why) {
    BRAID_THROW(code, who, ": Einsum equation '", eq, "' ", why,
                code == kUnsupported ? kSupported : "");
  };
  std::string s;  // without spaces
  for (char ch : eq)
    if (!std::isspace(static_cast<unsigned char>(ch))) s += ch;
  if (s.find("...") != std::string::npos) refuse(kUnsupported, "uses an ellipsis ('...')");
  const size_t arrow = s.find("->");
  if (arrow == std::string::npos) refuse(kUnsupported, "has an implicit output (no '->')");
  const std::string lhs = s.substr(0, arrow), out = s.substr(arrow + 2);
  for (char ch : lhs + out)
    if (!std::isalpha(static_cast<unsigned char>(ch)) && ch != ',')
      refuse(kBad, std::string("is malformed: unexpected '") + ch + "'");
  if (contains(out, ',')) refuse(kBad, "is malformed: the output has a ','");
  const std::vector<std::string> terms = split_terms(lhs);
  if (terms.size() != 2)
    refuse(kUnsupported,
           "has " + std::to_string(terms.size()) + " operand" + (terms.size() == 1 ? "" : "s"));
  const std::string &a = terms[0], &b = terms[1];
  for (char ch : out)
    if (!contains(a, ch) && !contains(b, ch))
      refuse(kBad, std::string("is malformed: output letter '") + ch + "' is in no operand");
  for (const std::string* t : {&a, &b, &out})
    if (has_repeated_letter(*t))
      refuse(kUnsupported, "repeats a letter in '" + *t + "' (a diagonal)");
  if (a.size() != b.size() || a.size() != out.size() || a.size() < 2)
    refuse(kUnsupported, "has terms of ranks " + std::to_string(a.size()) + ", " +
                             std::to_string(b.size()) + " -> " + std::to_string(out.size()) +
                             "; braid needs one rank >= 2 for all three");
  EinsumMatMul e;
  e.batch_rank = static_cast<int>(a.size()) - 2;
  e.a = a;
  e.b = b;
  const std::string batch = a.substr(0, e.batch_rank);
  if (b.substr(0, e.batch_rank) != batch || out.substr(0, e.batch_rank) != batch)
    refuse(kUnsupported, "does not lead both operands and the output with the same batch letters");
  // The last two letters of each term: which one is contracted (k), which come out (i, j).
  const std::string a2 = a.substr(e.batch_rank), b2 = b.substr(e.batch_rank),
                    o2 = out.substr(e.batch_rank);
  std::string shared;
  for (char ch : a2)
    if (contains(b2, ch)) shared += ch;
  if (shared.size() != 1 || contains(o2, shared[0]))
    refuse(kUnsupported, "does not contract exactly one letter of the last two axes");
  const char k = shared[0];
  const char i = a2[0] == k ? a2[1] : a2[0];
  const char j = b2[0] == k ? b2[1] : b2[0];
  // The output's last two letters are now i and j: its letters come from the operands, and
  // the batch letters, already in its prefix, cannot repeat.
  BRAID_ASSERT(contains(o2, i) && contains(o2, j), "checked letters above");
  e.transpose_a = a2[0] == k;  // A laid out [k, i]
  e.transpose_b = b2[1] == k;  // B laid out [j, k]
  e.transpose_out = o2[0] == j;
  return e;
}

std::vector<RewriteStep> einsum_matmul_steps(const EinsumMatMul& e, const ir::Shape& a,
                                             const ir::Shape& b, std::string_view who) {
  BRAID_CHECK(a.size() == e.a.size() && b.size() == e.b.size(), kBad, who, ": Einsum operands of ",
              "shapes ", ir::to_string(a), " and ", ir::to_string(b), " do not fit the terms '",
              e.a, "' and '", e.b, "'");
  std::map<char, int64_t> size;
  for (size_t d = 0; d < a.size(); ++d) size[e.a[d]] = a[d];
  for (size_t d = 0; d < b.size(); ++d)
    BRAID_CHECK(!size.count(e.b[d]) || size[e.b[d]] == b[d], kBad, who, ": Einsum letter '", e.b[d],
                "' has size ", size[e.b[d]], " in '", e.a, "' ", ir::to_string(a), " but ", b[d],
                " in '", e.b, "' ", ir::to_string(b));
  // (A' B')^T = B'^T A'^T: with the operands swapped, each of the three transposes flips, so
  // the swap pays when two or three of them are needed.
  const bool swap = e.transpose_a + e.transpose_b + e.transpose_out >= 2;
  const int lhs = swap ? 1 : 0, rhs = swap ? 0 : 1;
  const bool transpose_lhs = swap ? !e.transpose_b : e.transpose_a;
  const bool transpose_rhs = swap ? !e.transpose_a : e.transpose_b;
  const bool transpose_out = swap ? !e.transpose_out : e.transpose_out;
  std::vector<RewriteStep> steps;
  auto add = [&](ir::OpKind kind, ir::OpAttrs attrs, std::vector<int> operands,
                 std::string suffix) {
    steps.push_back({kind, std::move(attrs), std::move(operands), std::move(suffix)});
    return -static_cast<int>(steps.size());  // the operand index of this step's output
  };
  const int x = transpose_lhs ? add(ir::OpKind::Transpose, swap_last_two(e.batch_rank), {lhs},
                                    swap ? "transpose_b" : "transpose_a")
                              : lhs;
  const int y = transpose_rhs ? add(ir::OpKind::Transpose, swap_last_two(e.batch_rank), {rhs},
                                    swap ? "transpose_a" : "transpose_b")
                              : rhs;
  const int product = add(ir::OpKind::MatMul, {}, {x, y}, "matmul");
  if (transpose_out)
    add(ir::OpKind::Transpose, swap_last_two(e.batch_rank), {product}, "transpose_out");
  return steps;
}

}  // namespace braid::models::onnx_detail
