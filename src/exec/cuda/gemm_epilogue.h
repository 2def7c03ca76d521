// Which ops after a GEMM the CUDA executor computes in cuBLASLt's epilogue (issue 29), apart from
// the cuBLASLt calls, so the choice can be tested where there is no GPU.
//
//   GemmChain c = match_gemm(graph, unit_ops.subspan(i));   // ops[i] a MatMul or a Gemm
//   c.epilogue;   // kNone, or the bias (then a ReLU or a tanh GELU) cuBLASLt adds
//   c.used;       // ops of the unit the one cublasLtMatmul computes
//
// A bias is N values added to every row of the GEMM's row-major output Y [..., M, N]: the
// parameter of an Add after a MatMul (BERT's and ViT's Linear layers: MatMul, then Add of a
// [N] bias) or a Gemm's C of shape [N] or [1, N]. cuBLASLt computes the column-major D = Y^T
// [N, M], so that bias is its CUBLASLT_EPILOGUE_BIAS vector: one value per row of D, broadcast
// to every column of D, in D's type, added before the epilogue's activation. A batched MatMul's
// matrices (gemm_plan.h) each add the same vector. After the bias, a ReLU is
// CUBLASLT_EPILOGUE_RELU_BIAS and a Gelu with approximate="tanh" CUBLASLT_EPILOGUE_GELU_BIAS:
// cuBLASLt's GELU is the tanh approximation (PyTorch runs gelu(x, "tanh") where it cannot use the
// epilogue). ONNX's default Gelu (erf, BERT's) is not fused: the two differ by up to 4.7e-4 (at
// x = -2.7, where GELU is -0.0094: 5%), far past FP32's tolerance (1e-5 + 1e-4 |y|), and a
// tolerance is for rounding, not for another function; it runs as our kernel after the GEMM.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "base/ids.h"
#include "ir/graph.h"

namespace braid::exec::cuda {

enum class GemmEpilogue : uint8_t { kNone, kBias, kReluBias, kGeluBias };
std::string_view to_string(GemmEpilogue e);  // "none", "bias", "relu_bias", "gelu_bias"

// A MatMul or Gemm and the ops after it in its unit that its epilogue computes.
struct GemmChain {
  size_t used = 1;  // ops of the unit taken: the GEMM, the bias Add if any, the activation if any
  ValueId y{};      // the value the last op taken writes: what the GEMM writes
  GemmEpilogue epilogue = GemmEpilogue::kNone;
  // The float parameter of N elements added to every row (kNone: none): the Add's other input,
  // or the Gemm's C, which the Gemm's beta scales (1 for an Add).
  std::optional<ValueId> bias;
  float bias_scale = 1.0f;
  const ir::Node* bias_add = nullptr;    // the Add taken; null for a Gemm's C
  const ir::Node* activation = nullptr;  // the Relu or Gelu taken
};

// The chain at the start of `ops` (one unit's ops, in order; ops[0] a MatMul or a Gemm, else
// nothing is taken). An op joins only when it is the unit's next op and the sole reader of the
// chain's value, which is no graph output. A Gemm with a C that is no per-column parameter (a
// [M, N] or [M, 1] C, a scalar, an activation) takes nothing: C is then broadcast into Y and
// accumulated with beta, as before. `tanh_gelu` false: a tanh Gelu does not join (FP32 plans:
// cuBLASLt documents no error bound for its GELU, and FP32 is held to 1e-4 of the CPU's).
GemmChain match_gemm(const ir::Graph& g, std::span<const NodeId> ops, bool tanh_gelu = true);

}  // namespace braid::exec::cuda
