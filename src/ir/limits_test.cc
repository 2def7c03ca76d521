// Size limits and overflow: shapes whose byte size, FLOP count or total overflow int64 are
// refused with an error naming the value or node (inspect printed negative GFLOPs before), and
// check_limits names the tensor and the flag that raises the limit.
#include <gtest/gtest.h>

#include "base/error.h"
#include "ir/graph.h"
#include "ir/limits.h"
#include "ir/unit_graph.h"

namespace braid::ir {
namespace {

template <typename F>
std::string error_of(F&& f, ErrorCode code) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

TEST(Limits, ShapeWhoseBytesOverflowIsRefused) {
  GraphBuilder b("g");
  const std::string what = error_of(
      [&] {
        b.add_input("x", {DType::kFloat32, {INT64_MAX, 3, 299, 299}});
      },
      ErrorCode::kUnsupported);
  EXPECT_NE(what.find("value 'x'"), std::string::npos) << what;
  EXPECT_NE(what.find("does not fit in a 64-bit integer"), std::string::npos) << what;
}

// Each tensor fits (2^56 elements at most) but the MatMul's 2 * 2^32 * 2^32 FLOPs do not.
TEST(Limits, FlopCountOverflowIsRefusedByFuse) {
  GraphBuilder b("g");
  ValueId a = b.add_input("a", {DType::kFloat32, {int64_t{1} << 24, int64_t{1} << 32}});
  ValueId w = b.add_parameter("w", {DType::kFloat32, {int64_t{1} << 32, int64_t{1} << 8}});
  b.mark_output(b.add_op(OpKind::MatMul, {}, {a, w}, "mm"));
  auto g = std::make_shared<const Graph>(std::move(b).build());
  const std::string what = error_of([&] { fuse(g); }, ErrorCode::kUnsupported);
  EXPECT_NE(what.find("node 'mm'"), std::string::npos) << what;
  EXPECT_NE(what.find("FLOP count"), std::string::npos) << what;
}

TEST(Limits, CheckLimitsNamesTheTensorAndTheFlag) {
  GraphBuilder b("g");
  ValueId x = b.add_input("x", {DType::kFloat32, {1000, 1000}});
  b.mark_output(b.add_op(OpKind::Relu, {}, {x}, "relu"));
  const Graph g = std::move(b).build();
  EXPECT_NO_THROW(check_limits(g, {}));
  std::string what =
      error_of([&] { check_limits(g, {.max_tensor_elements = 999999}); }, ErrorCode::kUnsupported);
  EXPECT_NE(what.find("tensor 'x'"), std::string::npos) << what;
  EXPECT_NE(what.find("--max-tensor-elements"), std::string::npos) << what;
  // Two 4 MB activations: 8000000 bytes in all.
  EXPECT_NO_THROW(check_limits(g, {.max_activation_bytes = 8000000}));
  what = error_of([&] { check_limits(g, {.max_activation_bytes = 7999999}); },
                  ErrorCode::kUnsupported);
  EXPECT_NE(what.find("--max-activation-bytes"), std::string::npos) << what;
  error_of([&] { check_limits(g, {.max_tensor_elements = 0}); }, ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace braid::ir
