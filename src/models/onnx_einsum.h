// ONNX import, Einsum as a batched matrix product: the equations exporters write for attention
// (torchvision's MaxViT: "B G H I D, B G H J D -> B G H I J" for Q K^T and
// "B G H I J, B G H J D -> B G H I D" for P V) become braid's MatMul with a Transpose of the
// last two axes where an operand or the output is laid out the other way round.
//
//   EinsumMatMul e = parse_einsum_matmul("bij, bkj -> bik", "node 'attn'");
//   // e.batch_rank == 1, e.transpose_b == true: MatMul(A, Transpose(B))
//
// Only that form is accepted: two operands, the same batch letters in the same order leading
// both operands and the output, one contracted letter, and [i, k] x [k, j] -> [i, j] in the last
// two axes up to a transpose of either operand or of the output (ONNX Einsum-12). Implicit
// output (no "->"), ellipsis, repeated letters (diagonals), sums over a letter of one operand
// and other operand counts are refused with kUnsupported, naming the node and the equation.
// Internal to the importer.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "models/onnx_ops.h"

namespace braid::models::onnx_detail {

// What an accepted equation computes: out = A' @ B' (batched over the leading `batch_rank`
// axes), then transposed in its last two axes when `transpose_out`; A' is A transposed in its
// last two axes when `transpose_a`, B' likewise.
struct EinsumMatMul {
  int batch_rank = 0;
  bool transpose_a = false;
  bool transpose_b = false;
  bool transpose_out = false;
  std::string a, b;  // the operands' terms, spaces removed: one letter per axis
};

// Parses `equation` (spaces allowed); `who` names the node in errors. Throws braid::Error:
// kUnsupported for a valid equation of another form, kInvalidModel for a malformed one.
EinsumMatMul parse_einsum_matmul(std::string_view equation, std::string_view who);

// The braid ops for an Einsum node whose operands have `a` and `b` as shapes: Transposes and one
// MatMul, with the operands swapped when that saves Transposes ((A B)^T = B^T A^T). Checks the
// operands' ranks and that every letter has one size (kInvalidModel otherwise).
std::vector<RewriteStep> einsum_matmul_steps(const EinsumMatMul& e, const ir::Shape& a,
                                             const ir::Shape& b, std::string_view who);

}  // namespace braid::models::onnx_detail
