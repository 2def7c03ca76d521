// The GEMM calls a MatMul or a Gemm becomes (gemm_plan.h), multiplied out on the host exactly as
// cuBLAS defines its column-major, strided-batched GEMM, against the reference executor's
// MatMul and Gemm (the oracle): the offsets, leading dimensions, transpositions, the folded
// linear layer and the strided batch. No GPU: on one, the zoo tests and
// CudaExecutor.GemmEpiloguesMatchTheCpuExecutor run the same calls through cuBLASLt.
#include "exec/cuda/gemm_plan.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "exec/ref/ref_executor.h"
#include "ir/graph.h"
#include "ir/weights.h"

namespace braid::exec::cuda {
namespace {

// cuBLAS's C[m,n] = op(A) op(B), column-major, `s.batch` times with the strides.
void host_gemm(const GemmShape& s, const float* a, const float* b, float* c) {
  for (int64_t t = 0; t < s.batch; ++t)
    for (int64_t i = 0; i < s.m; ++i)
      for (int64_t j = 0; j < s.n; ++j) {
        double sum = 0;
        for (int64_t p = 0; p < s.k; ++p) {
          const float av =
              s.trans_a ? a[t * s.stride_a + p + i * s.lda] : a[t * s.stride_a + i + p * s.lda];
          const float bv =
              s.trans_b ? b[t * s.stride_b + j + p * s.ldb] : b[t * s.stride_b + p + j * s.ldb];
          sum += double(av) * bv;
        }
        c[t * s.stride_c + i + j * s.ldc] = float(sum);
      }
}

std::vector<float> values(const ir::Shape& s, int seed) {
  std::vector<float> v(size_t(ir::num_elements(s)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(int(i * 7 + seed * 13) % 11) - 5.0f;
  return v;
}

// The reference executor's output of one node over inputs a and b.
std::vector<float> reference(ir::OpKind kind, ir::OpAttrs attrs, const ir::Shape& as,
                             const ir::Shape& bs, const std::vector<float>& a,
                             const std::vector<float>& b) {
  ir::GraphBuilder g("gemm");
  const ValueId va = g.add_input("a", {ir::DType::kFloat32, as});
  const ValueId vb = g.add_input("b", {ir::DType::kFloat32, bs});
  g.mark_output(g.add_op(kind, std::move(attrs), {va, vb}, "op"));
  const ir::Graph graph = std::move(g).build();
  const std::vector<std::vector<float>> inputs{a, b};
  return ref::run_reference(graph, ir::Weights::generate(graph, 1), inputs)[0];
}

void expect_equal(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-3) << "element " << i;
}

enum class Calls { kOne, kFolded, kStrided, kEach };

TEST(GemmPlan, MatMulCallsMultiplyAsTheReferenceDoes) {
  struct Case {
    ir::Shape a, b, y;
    Calls calls;
  };
  const Case cases[] = {
      {{3, 8}, {8, 5}, {3, 5}, Calls::kOne},
      {{2, 3, 8}, {8, 16}, {2, 3, 16}, Calls::kFolded},             // a linear layer
      {{4, 3, 8}, {1, 8, 5}, {4, 3, 5}, Calls::kFolded},            // B's batch of 1
      {{2, 4, 3, 8}, {2, 4, 8, 5}, {2, 4, 3, 5}, Calls::kStrided},  // attention
      {{1, 3, 8}, {2, 8, 5}, {2, 3, 5}, Calls::kEach},              // A shared
      {{2, 1, 3, 8}, {1, 4, 8, 5}, {2, 4, 3, 5}, Calls::kEach},     // crossed broadcasts
      {{3, 2, 3, 8}, {2, 8, 5}, {3, 2, 3, 5}, Calls::kEach},        // B batched, fewer dims
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message() << "a rank " << c.a.size() << " b rank " << c.b.size()
                                      << " y elements " << ir::num_elements(c.y));
    const std::vector<float> a = values(c.a, 1), b = values(c.b, 2);
    const MatmulGemms g = matmul_gemms(c.a, c.b, c.y, 4);
    switch (c.calls) {
      case Calls::kOne:
      case Calls::kFolded:
        EXPECT_EQ(g.pairs.size(), 1u);
        EXPECT_EQ(g.shape.batch, 1);
        break;
      case Calls::kStrided:
        EXPECT_EQ(g.pairs.size(), 1u);
        EXPECT_EQ(g.shape.batch, ir::num_elements(c.y) / (c.y[c.y.size() - 2] * c.y.back()));
        break;
      case Calls::kEach:
        EXPECT_EQ(int64_t(g.pairs.size()),
                  ir::num_elements(c.y) / (c.y[c.y.size() - 2] * c.y.back()));
        break;
    }
    std::vector<float> y(size_t(ir::num_elements(c.y)), NAN);
    for (size_t t = 0; t < g.pairs.size(); ++t)
      host_gemm(g.shape, b.data() + g.pairs[t].second, a.data() + g.pairs[t].first,
                y.data() + int64_t(t) * g.y_stride);
    expect_equal(y, reference(ir::OpKind::MatMul, {}, c.a, c.b, a, b));
  }
}

TEST(GemmPlan, GemmCallMultipliesAsTheReferenceDoesInEveryTransposition) {
  for (const bool ta : {false, true})
    for (const bool tb : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "trans_a " << ta << " trans_b " << tb);
      const int64_t m = 3, k = 8, n = 5;
      const ir::Shape as = ta ? ir::Shape{k, m} : ir::Shape{m, k};
      const ir::Shape bs = tb ? ir::Shape{n, k} : ir::Shape{k, n};
      const std::vector<float> a = values(as, 3), b = values(bs, 4);
      const ir::GemmAttrs attrs{.beta = 0.0f, .trans_a = ta, .trans_b = tb};
      const GemmShape s = gemm_shape(attrs, as, {m, n});
      std::vector<float> y(size_t(m * n), NAN);
      host_gemm(s, b.data(), a.data(), y.data());
      expect_equal(y, reference(ir::OpKind::Gemm, attrs, as, bs, a, b));
    }
}

// Every matrix's byte offset bounds the alignment cuBLASLt is told: 2-byte elements with
// matrices of 3 x 5 are only 2-byte aligned after the first.
TEST(GemmPlan, AlignmentIsThatOfTheLeastAlignedMatrix) {
  EXPECT_EQ(matmul_gemms({2, 4, 3, 8}, {2, 4, 8, 5}, {2, 4, 3, 5}, 2).alignment, 2);
  EXPECT_EQ(matmul_gemms({2, 4, 8, 8}, {2, 4, 8, 8}, {2, 4, 8, 8}, 4).alignment, 256);
  EXPECT_EQ(power_of_two_alignment(0), 256);
  EXPECT_EQ(power_of_two_alignment(96), 32);
}

}  // namespace
}  // namespace braid::exec::cuda
