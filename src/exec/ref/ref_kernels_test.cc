// The oracle checked by hand: small cases whose answers are worked out in the comments, so the
// reference kernels are trusted on their own before anything is compared against them.
#include "exec/ref/ref_kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "base/error.h"
#include "exec/ref/ref_executor.h"
#include "ir/weights.h"

namespace braid::exec::ref {
namespace {

using ir::OpKind;
using ir::Shape;

ir::TensorType f32(Shape shape) {
  return {ir::DType::kFloat32, std::move(shape)};
}

// Element-wise comparison that names the first differing index (gmock is not linked here).
void expect_near(const std::vector<float>& got, const std::vector<float>& want,
                 float tolerance = 0.0f) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], tolerance) << "at index " << i;
}

std::vector<float> iota(size_t n, float start = 0.0f) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), start);
  return v;
}

// Builds a one-op graph whose inputs are all graph inputs, runs the op on `inputs`.
std::vector<std::vector<float>> run_one(OpKind kind, ir::OpAttrs attrs, std::vector<Shape> shapes,
                                        std::vector<std::vector<float>> inputs,
                                        size_t num_outputs = 1) {
  ir::GraphBuilder b("one");
  std::vector<ValueId> in;
  for (size_t i = 0; i < shapes.size(); ++i)
    in.push_back(b.add_input("x" + std::to_string(i), f32(shapes[i])));
  const NodeId n = b.add_node(kind, std::move(attrs), in, "op", num_outputs);
  for (size_t i = 0; i < num_outputs; ++i) b.mark_output(b.output(n, i));
  const ir::Graph g = std::move(b).build();
  return run_reference(g, ir::Weights(g.num_values()), inputs);
}

TEST(RefKernels, Conv3x3On4x4ByHand) {
  // x = 1..16 in a 4x4 grid, w = all ones: each output is the sum of a 3x3 window.
  // Top-left window 1+2+3+5+6+7+9+10+11 = 54; one step right adds 3*1 = 3 per row -> 63;
  // one step down adds 3*4 per column -> 54 + 36 = 90, 99.
  const auto y =
      run_one(OpKind::Conv, ir::ConvAttrs{.kernel = {3, 3}}, {{1, 1, 4, 4}, {1, 1, 3, 3}},
              {iota(16, 1.0f), std::vector<float>(9, 1.0f)});
  expect_near(y[0], {54, 63, 90, 99});
}

TEST(RefKernels, ConvPaddingStrideBiasRelu) {
  // Pads 1, stride 2 on the same grid: windows at rows/cols {-1, 1}. Corner (-1,-1) sees
  // 1+2+5+6 = 14; (-1,1) sees 2+3+4+6+7+8 = 30; (1,-1) sees 5+6+9+10+13+14 = 57;
  // (1,1) sees 6+7+8+10+11+12+14+15+16 = 99. Bias -40, then ReLU.
  const auto y = run_one(OpKind::Conv,
                         ir::ConvAttrs{.kernel = {3, 3},
                                       .stride = {2, 2},
                                       .pads = {1, 1, 1, 1},
                                       .activation = ir::Activation::kRelu},
                         {{1, 1, 4, 4}, {1, 1, 3, 3}, {1}},
                         {iota(16, 1.0f), std::vector<float>(9, 1.0f), {-40.0f}});
  expect_near(y[0], {0, 0, 17, 59});
}

TEST(RefKernels, GroupedDilatedConv) {
  // Two groups of one channel; dilation 2 with a 2x2 kernel reads corners of a 3x3 window.
  // Channel 0 = 0..8, channel 1 = 9..17 (3x3 each); weights group0 = 1s, group1 = [1,0,0,-1].
  // Group 0: 0+2+6+8 = 16. Group 1: 9 - 17 = -8.
  std::vector<float> x = iota(18);
  const auto y =
      run_one(OpKind::Conv, ir::ConvAttrs{.kernel = {2, 2}, .dilation = {2, 2}, .groups = 2},
              {{1, 2, 3, 3}, {2, 1, 2, 2}}, {x, {1, 1, 1, 1, 1, 0, 0, -1}});
  expect_near(y[0], {16, -8});
}

TEST(RefKernels, PoolCeilModeSizesAndValues) {
  // 5x5 grid 0..24, kernel 2, stride 2: floor gives 2x2, ceil gives 3x3 (the last window
  // holds column/row 4 only).
  const ir::PoolAttrs floor{.kernel = {2, 2}, .stride = {2, 2}};
  ir::PoolAttrs ceil = floor;
  ceil.ceil_mode = true;
  EXPECT_EQ(run_one(OpKind::MaxPool, floor, {{1, 1, 5, 5}}, {iota(25)})[0].size(), 4u);
  const auto max = run_one(OpKind::MaxPool, ceil, {{1, 1, 5, 5}}, {iota(25)});
  expect_near(max[0], {6, 8, 9, 16, 18, 19, 21, 23, 24});
  // Average: window (0,2) covers {4, 9} -> 6.5; the corner window covers {24} only.
  const auto avg = run_one(OpKind::AveragePool, ceil, {{1, 1, 5, 5}}, {iota(25)});
  EXPECT_FLOAT_EQ(avg[0][2], 6.5f);
  EXPECT_FLOAT_EQ(avg[0][8], 24.0f);
}

TEST(RefKernels, AveragePoolCountIncludePad) {
  // 3x3 grid 1..9, kernel 2, stride 1, pads 1 on all sides: output 4x4. The corner window
  // covers {1} and three pads: 1/1 excluding padding, 1/4 including it.
  ir::PoolAttrs a{.kernel = {2, 2}, .stride = {1, 1}, .pads = {1, 1, 1, 1}};
  EXPECT_FLOAT_EQ(run_one(OpKind::AveragePool, a, {{1, 1, 3, 3}}, {iota(9, 1)})[0][0], 1.0f);
  a.count_include_pad = true;
  const auto y = run_one(OpKind::AveragePool, a, {{1, 1, 3, 3}}, {iota(9, 1)});
  EXPECT_FLOAT_EQ(y[0][0], 0.25f);
  EXPECT_FLOAT_EQ(y[0][5], (1 + 2 + 4 + 5) / 4.0f);
  ir::PoolAttrs c{.kernel = {3, 3}, .stride = {2, 2}, .ceil_mode = true, .count_include_pad = true};
  // With ceil_mode, a window reaching past the padded input divides by its clipped size:
  // 4x4 grid 0..15, kernel 3, stride 2, no pads, ceil: output 2x2 (window at 2 covers [2, 5),
  // clipped to [2, 4)). Window (1,1) covers rows/cols 2..3: {10, 11, 14, 15} / (2*2) = 12.5.
  const auto z = run_one(OpKind::AveragePool, c, {{1, 1, 4, 4}}, {iota(16)});
  ASSERT_EQ(z[0].size(), 4u);
  EXPECT_FLOAT_EQ(z[0][3], 12.5f);
  EXPECT_FLOAT_EQ(z[0][0], (0 + 1 + 2 + 4 + 5 + 6 + 8 + 9 + 10) / 9.0f);
}

TEST(RefKernels, GlobalAveragePool) {
  const auto y = run_one(OpKind::GlobalAveragePool, {}, {{1, 2, 2, 2}}, {iota(8)});
  expect_near(y[0], {1.5f, 5.5f});
}

TEST(RefKernels, SoftmaxRowsSumToOne) {
  // softmax(1, 2, 3) = e^i / (e + e^2 + e^3).
  const auto y = run_one(OpKind::Softmax, ir::AxisAttrs{-1}, {{2, 3}}, {{1, 2, 3, 0, 0, 0}});
  expect_near(
      y[0], std::vector<float>{0.09003057f, 0.24472847f, 0.66524096f, 1 / 3.0f, 1 / 3.0f, 1 / 3.0f},
      1e-6f);
  // Opset 13: axis 0 of a [2, 3] tensor normalizes each column.
  const auto z = run_one(OpKind::Softmax, ir::AxisAttrs{0}, {{2, 3}}, {iota(6)});
  for (int c = 0; c < 3; ++c) EXPECT_NEAR(z[0][c] + z[0][3 + c], 1.0f, 1e-6f);
  EXPECT_NEAR(z[0][0], 1.0f / (1.0f + std::exp(3.0f)), 1e-6f);
}

TEST(RefKernels, LayerNormalization) {
  // Row (1, 2, 3): mean 2, variance 2/3 -> (-1.2247, 0, 1.2247); scale 2, bias 1.
  ir::GraphBuilder b("ln");
  const ValueId x = b.add_input("x", f32({1, 3}));
  const ValueId s = b.add_parameter("s", f32({3}), ir::ParamInit::constant({2.0f}));
  const ValueId t = b.add_parameter("t", f32({3}), ir::ParamInit::constant({1.0f}));
  b.mark_output(
      b.add_op(OpKind::LayerNormalization, ir::LayerNormAttrs{-1, 0.0f}, {x, s, t}, "ln"));
  const ir::Graph g = std::move(b).build();
  const std::vector<std::vector<float>> in{{1, 2, 3}};
  const auto y = run_reference(g, ir::Weights::generate(g, 0), in);
  const float k = 2.0f * 1.2247449f;
  expect_near(y[0], std::vector<float>{1 - k, 1, 1 + k}, 1e-5f);
}

TEST(RefKernels, BatchNormalization) {
  // One channel: (x - mean) / sqrt(var + eps) * scale + shift = (x - 1) / 2 * 3 + 0.5.
  const auto y = run_one(OpKind::BatchNormalization, ir::BatchNormAttrs{0.0f},
                         {{1, 1, 2}, {1}, {1}, {1}, {1}}, {{1, 5}, {3}, {0.5f}, {1}, {4}});
  expect_near(y[0], {0.5f, 6.5f});
}

TEST(RefKernels, Activations) {
  EXPECT_EQ(relu(-1.0f), 0.0f);
  EXPECT_NEAR(sigmoid(0.0f), 0.5f, 1e-7f);
  EXPECT_NEAR(gelu(1.0f, false), 0.8413447f, 1e-6f);  // x * Phi(x)
  EXPECT_NEAR(gelu(1.0f, true), 0.8411920f, 1e-6f);
  EXPECT_NEAR(apply_activation(ir::Activation::kTanh, 1.0f), 0.7615942f, 1e-6f);
}

TEST(RefKernels, BroadcastAddMulSum) {
  // [2, 3] + [3] adds the row to each row; [2, 1] * [1, 3] is an outer product.
  expect_near(run_one(OpKind::Add, {}, {{2, 3}, {3}}, {iota(6), {10, 20, 30}})[0],
              {10, 21, 32, 13, 24, 35});
  expect_near(run_one(OpKind::Mul, {}, {{2, 1}, {1, 3}}, {{1, 2}, {1, 2, 3}})[0],
              {1, 2, 3, 2, 4, 6});
  expect_near(run_one(OpKind::Sum, {}, {{2}, {1}, {2}}, {{1, 2}, {10}, {100, 200}})[0], {111, 212});
}

TEST(RefKernels, MatMulBatchBroadcast) {
  // a: two 1x2 matrices [1 2], [3 4]; b: one 2x2 matrix [[1 0], [1 1]] shared by both.
  const auto y = run_one(OpKind::MatMul, {}, {{2, 1, 2}, {2, 2}}, {{1, 2, 3, 4}, {1, 0, 1, 1}});
  expect_near(y[0], {3, 2, 7, 4});
}

TEST(RefKernels, GemmTransposesAlphaBeta) {
  // A' = A^T = [[1 3], [2 4]], B' = B^T = [[5 7], [6 8]]; A'B' = [[23 31], [34 46]].
  // Y = 2 * A'B' + 0.5 * C with C = [10, 20] broadcast over rows.
  const auto y = run_one(OpKind::Gemm, ir::GemmAttrs{2.0f, 0.5f, true, true}, {{2, 2}, {2, 2}, {2}},
                         {{1, 2, 3, 4}, {5, 6, 7, 8}, {10, 20}});
  expect_near(y[0], {51, 72, 73, 102});
}

TEST(RefKernels, ConcatTransposeSplitPad) {
  expect_near(
      run_one(OpKind::Concat, ir::AxisAttrs{1}, {{2, 1}, {2, 2}}, {{1, 2}, {3, 4, 5, 6}})[0],
      {1, 3, 4, 2, 5, 6});
  expect_near(run_one(OpKind::Transpose, ir::TransposeAttrs{}, {{2, 3}}, {iota(6)})[0],
              {0, 3, 1, 4, 2, 5});
  const auto parts = run_one(OpKind::Split, ir::SplitAttrs{1, {1, 2}}, {{2, 3}}, {iota(6)}, 2);
  expect_near(parts[0], {0, 3});
  expect_near(parts[1], {1, 2, 4, 5});
  // Pad [1, 2] with begins {0, 1} and ends {1, 0}: a 2x3 output.
  expect_near(run_one(OpKind::Pad, ir::PadAttrs{{0, 1, 1, 0}, -1.0f}, {{1, 2}}, {{7, 8}})[0],
              {-1, 7, 8, -1, -1, -1});
}

TEST(RefKernels, ClipHardSigmoidHardSwishByHand) {
  // ReLU6 as MobileNetV2 exports it: Clip(0, 6).
  expect_near(run_one(OpKind::Clip, ir::ClipAttrs{0.0f, 6.0f}, {{5}}, {{-1, 0, 3, 6, 7.5f}})[0],
              {0, 0, 3, 6, 6});
  // Default bounds are +-infinity: Clip is the identity.
  expect_near(run_one(OpKind::Clip, ir::ClipAttrs{}, {{2}}, {{-1e30f, 1e30f}})[0], {-1e30f, 1e30f});
  // 0.2x + 0.5 = -0.1, 0, 0.5, 0.7, 1.0, 1.1 before clamping to [0, 1].
  expect_near(run_one(OpKind::HardSigmoid, ir::HardSigmoidAttrs{0.2f, 0.5f}, {{6}},
                      {{-3, -2.5f, 0, 1, 2.5f, 3}})[0],
              {0, 0, 0.5f, 0.7f, 1, 1}, 1e-7f);
  // x * clamp(x / 6 + 1/2, 0, 1): -1 * 1/3, 1 * 2/3; saturates at |x| >= 3.
  expect_near(run_one(OpKind::HardSwish, {}, {{7}}, {{-4, -3, -1, 0, 1, 3, 4}})[0],
              {0, 0, -1.0f / 3, 0, 2.0f / 3, 3, 4}, 1e-7f);
}

TEST(RefKernels, ReduceMeanByHand) {
  // x[n, c, w] = 6n + 2c + w on [2, 3, 2]. Over c: 6n + 2 + w.
  const auto keep =
      run_one(OpKind::ReduceMean, ir::ReduceAttrs{{1}, true}, {{2, 3, 2}}, {iota(12)});
  expect_near(keep[0], {2, 3, 8, 9});
  // Over n and w (mean 3 + 0.5) without the reduced dims: 3.5 + 2c.
  const auto drop =
      run_one(OpKind::ReduceMean, ir::ReduceAttrs{{0, 2}, false}, {{2, 3, 2}}, {iota(12)});
  expect_near(drop[0], {3.5f, 5.5f, 7.5f});
}

TEST(RefKernels, ReduceMeanShapesAndRejections) {
  ir::GraphBuilder b("reduce");
  const ValueId x = b.add_input("x", f32({2, 3, 4, 5}));
  const ValueId kept = b.add_op(OpKind::ReduceMean, ir::ReduceAttrs{{2, 3}, true}, {x}, "kept");
  const ValueId flat = b.add_op(OpKind::ReduceMean, ir::ReduceAttrs{{2, 3}, false}, {x}, "flat");
  EXPECT_EQ(b.type(kept).shape, (Shape{2, 3, 1, 1}));
  EXPECT_EQ(b.type(flat).shape, (Shape{2, 3}));
  // Unsorted, repeated, out-of-range or missing axes would make the kernels index wrongly.
  for (const std::vector<int64_t>& axes :
       {std::vector<int64_t>{3, 2}, {1, 1}, {4}, {-1}, std::vector<int64_t>{}})
    EXPECT_THROW(b.add_op(OpKind::ReduceMean, ir::ReduceAttrs{axes, true}, {x}, "bad"), Error)
        << "axes of size " << axes.size();
}

TEST(RefKernels, LrnByHand) {
  // x = 1, 2, 3 on three channels; alpha / size = 1, beta = 1, bias = 1: y = x / (1 + sum).
  // size 3 windows: {0,1} 1+4 = 5; {0,1,2} 14; {1,2} 13.
  expect_near(
      run_one(OpKind::LRN, ir::LrnAttrs{3, 3.0f, 1.0f, 1.0f}, {{1, 3, 1, 1}}, {{1, 2, 3}})[0],
      {1.0f / 6, 2.0f / 15, 3.0f / 14}, 1e-7f);
  // size 2: ONNX takes floor((2-1)/2) = 0 channels below and ceil((2-1)/2) = 1 above:
  // {0,1} 5; {1,2} 13; {2} 9.
  expect_near(
      run_one(OpKind::LRN, ir::LrnAttrs{2, 2.0f, 1.0f, 1.0f}, {{1, 3, 1, 1}}, {{1, 2, 3}})[0],
      {1.0f / 6, 2.0f / 14, 3.0f / 10}, 1e-7f);
  // beta = 0.5, bias = 2, one channel of size 1: 4 / sqrt(2 + 16) at alpha / size = 1.
  expect_near(run_one(OpKind::LRN, ir::LrnAttrs{1, 1.0f, 0.5f, 2.0f}, {{1, 1, 1, 1}}, {{4}})[0],
              {4.0f / std::sqrt(18.0f)}, 1e-7f);
}

TEST(RefKernels, RunReferenceChainsNodesAndReportsOutputsInOrder) {
  ir::GraphBuilder b("chain");
  const ValueId x = b.add_input("x", f32({3}));
  const ValueId r = b.add_op(OpKind::Relu, {}, {x}, "relu");
  const ValueId m = b.add_op(OpKind::Mul, {}, {r, x}, "mul");
  b.mark_output(m);
  b.mark_output(r);
  const ir::Graph g = std::move(b).build();
  const std::vector<std::vector<float>> in{{-1, 2, 3}};
  const auto y = run_reference(g, ir::Weights(g.num_values()), in);
  ASSERT_EQ(y.size(), 2u);
  expect_near(y[0], {0, 4, 9});
  expect_near(y[1], {0, 2, 3});
  // Rejection: a wrong input size would read past the caller's buffer.
  const std::vector<std::vector<float>> short_in{{1, 2}};
  EXPECT_THROW(run_reference(g, ir::Weights(g.num_values()), short_in), Error);
}

// ---- transformer ops, with int64 and bool tensors (given and returned as float values) ----

// A one-op graph over inputs of the given types; outputs come back as float values.
std::vector<std::vector<float>> run_typed(OpKind kind, ir::OpAttrs attrs,
                                          std::vector<ir::TensorType> types,
                                          std::vector<std::vector<float>> inputs) {
  ir::GraphBuilder b("typed");
  std::vector<ValueId> in;
  for (size_t i = 0; i < types.size(); ++i)
    in.push_back(b.add_input("x" + std::to_string(i), types[i]));
  b.mark_output(b.add_op(kind, std::move(attrs), in, "op"));
  const ir::Graph g = std::move(b).build();
  return run_reference(g, ir::Weights(g.num_values()), inputs);
}

ir::TensorType i64(Shape shape) {
  return {ir::DType::kInt64, std::move(shape)};
}
ir::TensorType boolean(Shape shape) {
  return {ir::DType::kBool, std::move(shape)};
}

TEST(RefKernels, SubDivPowBroadcastByHand) {
  // x = [[1, 2, 3], [4, 5, 6]], y = [1, 2, 4] broadcast over rows.
  const std::vector<float> x = {1, 2, 3, 4, 5, 6}, y = {1, 2, 4};
  expect_near(run_one(OpKind::Sub, {}, {{2, 3}, {3}}, {x, y})[0], {0, 0, -1, 3, 3, 2});
  expect_near(run_one(OpKind::Sub, {}, {{3}, {2, 3}}, {y, x})[0], {0, 0, 1, -3, -3, -2});
  expect_near(run_one(OpKind::Div, {}, {{2, 3}, {3}}, {x, y})[0], {1, 1, 0.75f, 4, 2.5f, 1.5f});
  expect_near(run_one(OpKind::Pow, {}, {{2, 3}, {}}, {x, {2}})[0], {1, 4, 9, 16, 25, 36});
  expect_near(run_one(OpKind::Pow, {}, {{3}, {3}}, {{4, 9, 2}, {0.5f, -0.5f, 3}})[0],
              {2, 1.0f / 3, 8}, 1e-7f);
}

TEST(RefKernels, ErfSqrtByHand) {
  // erf(0) = 0, erf(-x) = -erf(x); erf(1) = 0.8427007929.
  expect_near(run_one(OpKind::Erf, {}, {{3}}, {{0, 1, -1}})[0], {0, 0.84270079f, -0.84270079f},
              1e-7f);
  expect_near(run_one(OpKind::Sqrt, {}, {{3}}, {{0, 4, 2.25f}})[0], {0, 2, 1.5f});
}

TEST(RefKernels, WhereEqualNotCastByHand) {
  // Equal on int64 [3] vs [1]: [5, 7, 5] == 5 -> [1, 0, 1]; Where picks x there, y elsewhere.
  expect_near(run_typed(OpKind::Equal, {}, {i64({3}), i64({1})}, {{5, 7, 5}, {5}})[0], {1, 0, 1});
  expect_near(run_typed(OpKind::Not, {}, {boolean({2, 2})}, {{1, 0, 0, 1}})[0], {0, 1, 1, 0});
  expect_near(run_typed(OpKind::Where, {}, {boolean({3}), f32({3}), f32({1})},
                        {{1, 0, 1}, {10, 20, 30}, {-1}})[0],
              {10, -1, 30});
  // Cast float -> int64 truncates toward zero; -> bool is "not zero".
  expect_near(run_typed(OpKind::Cast, ir::CastAttrs{ir::DType::kInt64}, {f32({4})},
                        {{2.7f, -2.7f, 0.5f, -0.5f}})[0],
              {2, -2, 0, 0});
  expect_near(
      run_typed(OpKind::Cast, ir::CastAttrs{ir::DType::kBool}, {f32({3})}, {{0.0f, -0.1f, 3}})[0],
      {0, 1, 1});
}

TEST(RefKernels, GatherByHand) {
  // An embedding table [4, 2] = rows [0,1], [2,3], [4,5], [6,7]; ids [[3, 0], [-1, 1]]
  // (-1 is the last row).
  expect_near(run_typed(OpKind::Gather, ir::GatherAttrs{}, {f32({4, 2}), i64({2, 2})},
                        {iota(8), {3, 0, -1, 1}})[0],
              {6, 7, 0, 1, 6, 7, 2, 3});
  // Constant scalar index 1 along axis 1 of [2, 3]: column 1 -> [1, 4].
  expect_near(run_typed(OpKind::Gather, ir::GatherAttrs{.axis = 1, .indices = {1}}, {f32({2, 3})},
                        {iota(6)})[0],
              {1, 4});
  // Rejection: an out-of-range index would read outside the table.
  EXPECT_THROW(
      run_typed(OpKind::Gather, ir::GatherAttrs{}, {f32({4, 2}), i64({1})}, {iota(8), {4}}), Error);
}

TEST(RefKernels, SliceAndExpandByHand) {
  // x = 0..11 as [3, 4]. Rows from the end backwards (start -1, end INT64_MIN, step -2): rows
  // 2, 0; columns 1..3 -> [[9, 10, 11], [1, 2, 3]].
  expect_near(
      run_one(
          OpKind::Slice,
          ir::SliceAttrs{
              .starts = {-1, 1}, .ends = {INT64_MIN, INT64_MAX}, .axes = {0, -1}, .steps = {-2, 1}},
          {{3, 4}}, {iota(12)})[0],
      {9, 10, 11, 1, 2, 3});
  // Expand [3, 1] -> [2, 3, 2]: each row value repeated, the block twice.
  expect_near(run_one(OpKind::Expand, ir::ExpandAttrs{{2, 1, 2}}, {{3, 1}}, {{1, 2, 3}})[0],
              {1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3});
}

// Rejection: arithmetic ops read their inputs as float32; an int64 one would be misread.
TEST(RefKernels, Int64IntoFloatOpIsUnsupported) {
  ir::GraphBuilder b("int");
  const ValueId x = b.add_input("x", i64({2}));
  try {
    b.add_op(OpKind::Add, {}, {x, x}, "add");
    FAIL() << "expected braid::Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("input #0 is int64"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace braid::exec::ref
