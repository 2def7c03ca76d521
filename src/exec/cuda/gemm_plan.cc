#include "exec/cuda/gemm_plan.h"

#include <algorithm>

namespace braid::exec::cuda {

int64_t power_of_two_alignment(uint64_t address) {
  return address == 0 ? 256 : std::min<int64_t>(256, int64_t(address & (~address + 1)));
}

MatmulGemms matmul_gemms(const ir::Shape& as, const ir::Shape& bs, const ir::Shape& ys,
                         int64_t esize) {
  const int64_t m = ys[ys.size() - 2], nn = ys.back(), k = as.back();
  const size_t rank = ys.size() - 2;  // batch dims
  // Per output batch dim, how many matrices of A (of B) one step along it skips: numpy
  // broadcasting, missing and size-1 dims skipping none.
  auto steps = [&](const ir::Shape& s) {
    std::vector<int64_t> step(rank, 0);
    const size_t own = s.size() - 2;  // its batch dims, the output's last ones
    int64_t matrices = 1;
    for (size_t j = own; j-- > 0;) {
      if (s[j] != 1) step[rank - own + j] = matrices;
      matrices *= s[j];
    }
    return step;
  };
  const std::vector<int64_t> a_step = steps(as), b_step = steps(bs);
  int64_t batches = 1;
  for (size_t d = 0; d < rank; ++d) batches *= ys[d];
  MatmulGemms g{.shape = {.m = nn, .n = m, .k = k, .lda = nn, .ldb = k, .ldc = nn},
                .y_stride = m * nn};
  for (int64_t t = 0; t < batches; ++t) {
    int64_t rest = t, ao = 0, bo = 0;
    for (size_t i = rank; i-- > 0;) {
      const int64_t at = rest % ys[i];
      rest /= ys[i];
      ao += at * a_step[i];
      bo += at * b_step[i];
    }
    g.pairs.emplace_back(ao * m * k, bo * k * nn);
  }
  for (size_t t = 0; t < g.pairs.size(); ++t)
    for (int64_t offset : {g.pairs[t].first, g.pairs[t].second, int64_t(t) * g.y_stride})
      g.alignment = std::min(g.alignment, power_of_two_alignment(uint64_t(offset * esize)));
  if (batches <= 1) return g;
  // Whether matrix t of A (of B) is at t * step elements for every t.
  auto at_steps = [&](bool of_a, int64_t step) {
    for (size_t t = 0; t < g.pairs.size(); ++t)
      if ((of_a ? g.pairs[t].first : g.pairs[t].second) != int64_t(t) * step) return false;
    return true;
  };
  if (at_steps(false, 0) && at_steps(true, m * k)) {
    g.shape.n = batches * m;
    g.pairs = {{0, 0}};
  } else if (at_steps(true, m * k) && at_steps(false, k * nn)) {
    g.shape.batch = batches;
    g.shape.stride_a = k * nn;  // cuBLAS's A is the MatMul's B
    g.shape.stride_b = m * k;
    g.shape.stride_c = m * nn;
    g.pairs = {{0, 0}};
  }
  return g;
}

GemmShape gemm_shape(const ir::GemmAttrs& attrs, const ir::Shape& as, const ir::Shape& ys) {
  const int64_t m = ys[0], nn = ys[1], k = attrs.trans_a ? as[0] : as[1];
  const bool ta = attrs.trans_a, tb = attrs.trans_b;
  return {.trans_a = tb,
          .trans_b = ta,
          .m = nn,
          .n = m,
          .k = k,
          .lda = tb ? k : nn,
          .ldb = ta ? m : k,
          .ldc = nn};
}

}  // namespace braid::exec::cuda
