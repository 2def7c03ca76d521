// The transformer ops on the CPU executor against the reference: Sub/Div/Pow (oneDNN binary
// or the broadcast loop), Erf/Sqrt, and the plain-loop kernels of cpu_kernels_tensor.cc
// (Where, Equal, Expand, Gather, Cast, Slice) with int64 and bool tensors, as graph inputs and
// as values inside the graph. Random cases with replayable seeds (the seed is in every message);
// each runs under a sequential and a random multi-lane schedule, so int64/bool values also go
// through the memory plan's buffer reuse.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "exec/cpu/cpu_executor.h"
#include "exec/ref/ref_executor.h"
#include "ir/shape_inference.h"
#include "sched/lower.h"
#include "sched/random_schedule.h"
#include "sched/registry.h"

namespace braid::exec {
namespace {

using ir::DType;
using ir::OpKind;
using ir::Shape;

constexpr int kCases = 30;
constexpr double kTolerance = 2e-6;  // relative to max(1, |want|): float vs double, erf/pow

struct Rng {
  explicit Rng(uint64_t seed) : gen(seed) {}
  int64_t uniform(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(gen);
  }
  bool coin(double p = 0.5) { return std::bernoulli_distribution(p)(gen); }
  Shape shape(int64_t rank, int64_t lo, int64_t hi) {
    Shape s;
    for (int64_t i = 0; i < rank; ++i) s.push_back(uniform(lo, hi));
    return s;
  }
  // A shape that numpy-broadcasts to `out`: a suffix of it with some dims set to 1.
  Shape broadcastable(const Shape& out) {
    Shape s(out.begin() + uniform(0, static_cast<int64_t>(out.size())), out.end());
    for (int64_t& d : s)
      if (coin(0.3)) d = 1;
    return s;
  }
  std::mt19937_64 gen;
};

// Inputs in [-3, 3]; int64 inputs in [lo, hi] (valid indices), bool inputs 0/1.
std::vector<std::vector<float>> make_inputs(const ir::Graph& g, Rng& r, int64_t lo, int64_t hi) {
  std::vector<std::vector<float>> inputs;
  for (ValueId v : g.inputs()) {
    const ir::TensorType& t = g.value(v).type;
    std::vector<float>& x = inputs.emplace_back(t.elements());
    for (float& f : x) {
      switch (t.dtype) {
        case DType::kFloat32:
          f = std::uniform_real_distribution<float>(-3, 3)(r.gen);
          break;
        case DType::kInt64:
          f = static_cast<float>(r.uniform(lo, hi));
          break;
        case DType::kBool:
          f = r.coin() ? 1.0f : 0.0f;
          break;
      }
    }
  }
  return inputs;
}

// Reference vs the CPU executor under sequential and a random multi-lane schedule.
void check(ir::GraphBuilder b, Rng& r, const std::string& what, int64_t lo = 0, int64_t hi = 0) {
  auto graph = std::make_shared<const ir::Graph>(std::move(b).build());
  auto weights = std::make_shared<const ir::Weights>(ir::Weights::generate(*graph, 3));
  const ir::UnitGraph units = ir::fuse(graph);
  const auto inputs = make_inputs(*graph, r, lo, hi);
  const auto want = ref::run_reference(*graph, *weights, inputs);
  std::vector<sched::Schedule> schedules = {sched::make_scheduler("sequential")->schedule(units)};
  schedules.push_back(sched::random_stream_schedule(units, 3, r.gen()));
  for (size_t s = 0; s < schedules.size(); ++s) {
    const sched::ExecutionPlan plan = sched::lower(units, schedules[s]);
    auto model = make_cpu_executor()->prepare({graph, weights, &units, &plan});
    auto request = model->new_request();
    for (size_t i = 0; i < inputs.size(); ++i) model->set_input(*request, i, inputs[i]);
    model->run(*request);
    for (size_t i = 0; i < want.size(); ++i) {
      const auto got = model->output(*request, i);
      ASSERT_EQ(got.size(), want[i].size()) << what;
      for (size_t k = 0; k < got.size(); ++k) {
        const double scale = std::max(1.0, std::abs(double(want[i][k])));
        ASSERT_LE(std::abs(double(got[k]) - want[i][k]), kTolerance * scale)
            << what << (s == 0 ? " sequential" : " random lanes") << ": output " << i << " [" << k
            << "] got " << got[k] << " want " << want[i][k];
      }
    }
  }
}

uint64_t seed_of(OpKind kind, int i) {
  return 7000 * (static_cast<uint64_t>(kind) + 1) + i;
}

TEST(CpuTensorOps, SubDivPowBroadcast) {
  for (int i = 0; i < 3 * kCases; ++i) {
    const OpKind kind = std::array{OpKind::Sub, OpKind::Div, OpKind::Pow}[i % 3];
    const uint64_t seed = seed_of(kind, i);
    Rng r(seed);
    const Shape out = r.shape(r.uniform(1, 4), 1, 5);
    const Shape a = r.coin(0.6) ? out : r.broadcastable(out);
    const Shape c = r.coin(0.4) ? out : r.broadcastable(out);
    ir::GraphBuilder b("binary");
    ValueId x = b.add_input("a", {DType::kFloat32, a});
    const ValueId y =
        r.coin(0.4) ? b.add_parameter("b", {DType::kFloat32, c}, ir::ParamInit::uniform(0.5f, 2.0f))
                    : b.add_input("b", {DType::kFloat32, c});
    if (kind == OpKind::Pow) x = b.add_op(OpKind::Sigmoid, {}, {x}, "positive");  // real powers
    ValueId z = b.add_op(kind, {}, {x, y}, "op");
    if (r.coin(0.3)) z = b.add_op(OpKind::Relu, {}, {z}, "relu");  // a oneDNN post-op
    b.mark_output(z);
    check(std::move(b), r,
          "seed=" + std::to_string(seed) + " " + std::string(ir::to_string(kind)) + " " +
              ir::to_string(a) + " , " + ir::to_string(c));
  }
}

TEST(CpuTensorOps, ErfSqrt) {
  for (int i = 0; i < kCases; ++i) {
    const uint64_t seed = seed_of(OpKind::Erf, i);
    Rng r(seed);
    ir::GraphBuilder b("unary");
    const ValueId x = b.add_input("x", {DType::kFloat32, r.shape(r.uniform(0, 4), 1, 7)});
    b.mark_output(b.add_op(OpKind::Erf, {}, {x}, "erf"));
    b.mark_output(b.add_op(OpKind::Sqrt, {}, {b.add_op(OpKind::Sigmoid, {}, {x}, "s")}, "sqrt"));
    check(std::move(b), r, "seed=" + std::to_string(seed));
  }
}

// Equal on int64 graph inputs (BERT's ids) and on float values, every other case negated by
// Not, then Where on the bool.
TEST(CpuTensorOps, WhereEqual) {
  for (int i = 0; i < kCases; ++i) {
    const uint64_t seed = seed_of(OpKind::Where, i);
    Rng r(seed);
    const Shape out = r.shape(r.uniform(1, 4), 1, 5);
    const Shape sa = r.broadcastable(out), sb = r.coin() ? out : r.broadcastable(out);
    ir::GraphBuilder b("where");
    const bool ints = r.coin();
    const DType t = ints ? DType::kInt64 : DType::kFloat32;
    ValueId a = b.add_input("a", {t, sa}), c = b.add_input("b", {t, sb});
    if (!ints) {  // rounded floats so that some compare equal
      a = b.add_op(OpKind::Cast, ir::CastAttrs{DType::kFloat32},
                   {b.add_op(OpKind::Cast, ir::CastAttrs{DType::kInt64}, {a}, "ia")}, "fa");
      c = b.add_op(OpKind::Cast, ir::CastAttrs{DType::kFloat32},
                   {b.add_op(OpKind::Cast, ir::CastAttrs{DType::kInt64}, {c}, "ib")}, "fb");
    }
    ValueId cond = b.add_op(OpKind::Equal, {}, {a, c}, "eq");
    if (i % 2 == 1) cond = b.add_op(OpKind::Not, {}, {cond}, "ne");  // Swin's masked_fill(m != 0)
    const ValueId x = b.add_input("x", {DType::kFloat32, r.broadcastable(out)});
    const ValueId y = r.coin() ? b.add_parameter("y", {DType::kFloat32, r.broadcastable(out)},
                                                 ir::ParamInit::normal(1.0f))
                               : b.add_input("y", {DType::kFloat32, out});
    b.mark_output(b.add_op(OpKind::Where, {}, {cond, x, y}, "where"));
    b.mark_output(b.add_op(OpKind::Cast, ir::CastAttrs{DType::kFloat32}, {cond}, "mask"));
    check(std::move(b), r, "seed=" + std::to_string(seed) + " out=" + ir::to_string(out), 0, 2);
  }
}

TEST(CpuTensorOps, Expand) {
  for (int i = 0; i < kCases; ++i) {
    const uint64_t seed = seed_of(OpKind::Expand, i);
    Rng r(seed);
    const Shape out = r.shape(r.uniform(1, 5), 1, 4);
    const Shape x = r.broadcastable(out);
    // The target may itself be shorter or hold 1s where x has a dim (numpy broadcast both ways).
    Shape target(out.begin() + r.uniform(0, static_cast<int64_t>(out.size()) - 1), out.end());
    for (size_t d = 0; d < target.size(); ++d)
      if (r.coin(0.2)) target[d] = 1;
    ir::GraphBuilder b("expand");
    const bool ints = r.coin(0.3);
    const ValueId in = b.add_input("x", {ints ? DType::kInt64 : DType::kFloat32, x});
    ValueId y = b.add_op(OpKind::Expand, ir::ExpandAttrs{target}, {in}, "expand");
    if (ints) y = b.add_op(OpKind::Cast, ir::CastAttrs{DType::kFloat32}, {y}, "f");
    b.mark_output(y);
    check(std::move(b), r,
          "seed=" + std::to_string(seed) + " x=" + ir::to_string(x) +
              " shape=" + ir::to_string(target),
          -5, 5);
  }
}

TEST(CpuTensorOps, Gather) {
  for (int i = 0; i < kCases; ++i) {
    const uint64_t seed = seed_of(OpKind::Gather, i);
    Rng r(seed);
    const Shape x = r.shape(r.uniform(1, 4), 2, 5);
    const int64_t axis = r.uniform(0, static_cast<int64_t>(x.size()) - 1);
    const Shape indices = r.shape(r.uniform(0, 2), 1, 4);
    ir::GraphBuilder b("gather");
    const ValueId data = b.add_input("x", {DType::kFloat32, x});
    ir::GatherAttrs a{.axis = r.coin() ? axis : axis - static_cast<int64_t>(x.size())};
    std::vector<ValueId> in = {data};
    if (r.coin()) {  // indices a graph input, as BERT's input_ids
      in.push_back(b.add_input("indices", {DType::kInt64, indices}));
    } else {  // constant indices, as ViT's class-token select
      a.indices_shape = indices;
      for (int64_t k = 0; k < ir::num_elements(indices); ++k)
        a.indices.push_back(r.uniform(-x[axis], x[axis] - 1));
    }
    b.mark_output(b.add_op(OpKind::Gather, a, in, "gather"));
    check(std::move(b), r, "seed=" + std::to_string(seed) + " x=" + ir::to_string(x), -x[axis],
          x[axis] - 1);
  }
}

TEST(CpuTensorOps, Slice) {
  int checked = 0;
  for (int i = 0; i < 2 * kCases; ++i) {
    const uint64_t seed = seed_of(OpKind::Slice, i);
    Rng r(seed);
    const Shape x = r.shape(r.uniform(1, 4), 1, 7);
    ir::SliceAttrs a;
    std::string what = "seed=" + std::to_string(seed) + " x=" + ir::to_string(x);
    for (int64_t d = 0; d < static_cast<int64_t>(x.size()); ++d) {
      if (r.coin(0.3)) continue;
      const int64_t step = r.coin(0.3) ? -r.uniform(1, 3) : r.uniform(1, 3);
      // Starts and ends out of range too (they clamp), INT64_MAX/MIN as exporters write them.
      int64_t start = r.uniform(-x[d] - 2, x[d] + 1), end = r.uniform(-x[d] - 2, x[d] + 2);
      if (r.coin(0.2)) end = step > 0 ? INT64_MAX : INT64_MIN;
      a.axes.push_back(r.coin() ? d : d - static_cast<int64_t>(x.size()));
      a.starts.push_back(start);
      a.ends.push_back(end);
      a.steps.push_back(step);
    }
    bool empty = false;
    for (const ir::SliceDim& d : ir::slice_dims(a, x, "s")) empty = empty || d.size == 0;
    if (empty) continue;  // zero-size tensors are refused at build
    ir::GraphBuilder b("slice");
    const bool ints = r.coin(0.3);
    ValueId y = b.add_op(OpKind::Slice, a,
                         {b.add_input("x", {ints ? DType::kInt64 : DType::kFloat32, x})}, "slice");
    if (ints) y = b.add_op(OpKind::Cast, ir::CastAttrs{DType::kFloat32}, {y}, "f");
    b.mark_output(y);
    check(std::move(b), r, what, -100, 100);
    ++checked;
  }
  EXPECT_GE(checked, kCases / 2) << "most random slices came out empty";
}

TEST(CpuTensorOps, CastRoundTrips) {
  for (int i = 0; i < kCases; ++i) {
    const uint64_t seed = seed_of(OpKind::Cast, i);
    Rng r(seed);
    const Shape s = r.shape(r.uniform(0, 3), 1, 6);
    ir::GraphBuilder b("cast");
    const ValueId x = b.add_input("x", {DType::kFloat32, s});
    const ValueId flag = b.add_input("flag", {DType::kBool, s});
    const ValueId id = b.add_input("id", {DType::kInt64, s});
    auto cast = [&](ValueId v, DType to, const std::string& name) {
      return b.add_op(OpKind::Cast, ir::CastAttrs{to}, {v}, name);
    };
    b.mark_output(cast(cast(x, DType::kInt64, "x_i"), DType::kFloat32, "x_if"));  // truncation
    b.mark_output(cast(cast(x, DType::kBool, "x_b"), DType::kFloat32, "x_bf"));
    b.mark_output(cast(cast(flag, DType::kInt64, "f_i"), DType::kFloat32, "f_if"));
    b.mark_output(cast(cast(id, DType::kBool, "i_b"), DType::kFloat32, "i_bf"));
    b.mark_output(b.add_op(OpKind::Mul, {}, {cast(id, DType::kFloat32, "i_f"), x}, "mul"));
    check(std::move(b), r, "seed=" + std::to_string(seed), -9, 9);
  }
}

}  // namespace
}  // namespace braid::exec
