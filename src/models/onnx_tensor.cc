#include "models/onnx_tensor.h"

#include <bit>
#include <cstring>

#include "base/error.h"

namespace braid::models::onnx_detail {
namespace {

constexpr auto kBad = ErrorCode::kInvalidModel;
constexpr auto kUnsupported = ErrorCode::kUnsupported;

static_assert(std::endian::native == std::endian::little, "ONNX raw_data is little-endian");

template <typename T, typename Field>
std::vector<T> read_payload(const onnx::TensorProto& t, const Field& typed, int64_t n,
                            const std::string& what) {
  std::vector<T> out;
  if (t.has_raw_data()) {
    BRAID_CHECK(t.raw_data().size() == static_cast<size_t>(n) * sizeof(T), kBad, what,
                ": raw_data has ", t.raw_data().size(), " bytes, its shape needs ",
                n * static_cast<int64_t>(sizeof(T)));
    out.resize(n);
    std::memcpy(out.data(), t.raw_data().data(), t.raw_data().size());
  } else {
    BRAID_CHECK(typed.size() == n, kBad, what, ": has ", typed.size(), " values, its shape needs ",
                n);
    out.assign(typed.begin(), typed.end());
  }
  return out;
}

}  // namespace

std::string onnx_type_name(int t) {
  return onnx::TensorProto_DataType_IsValid(t)
             ? onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(t))
             : "#" + std::to_string(t);
}

Tensor read_tensor(const onnx::TensorProto& t, const std::string& what) {
  BRAID_CHECK(t.data_location() != onnx::TensorProto::EXTERNAL, kUnsupported, what,
              " keeps its data in an external file; braid reads only data embedded in the model");
  BRAID_CHECK(!t.has_segment(), kUnsupported, what, " is a segmented tensor");
  Tensor out;
  int64_t n = 1;
  for (int64_t d : t.dims()) {
    BRAID_CHECK(d >= 0, kBad, what, " has a negative dim ", d);
    BRAID_CHECK(d == 0 || n <= kMaxElements / d, kUnsupported, what, " is too large");
    out.shape.push_back(d);
    n *= d;
  }
  switch (t.data_type()) {
    case onnx::TensorProto::FLOAT:
      out.floats = read_payload<float>(t, t.float_data(), n, what);
      break;
    case onnx::TensorProto::INT64:
      out.dtype = ir::DType::kInt64;
      out.ints = read_payload<int64_t>(t, t.int64_data(), n, what);
      break;
    default:
      BRAID_THROW(kUnsupported, what, " has element type ", onnx_type_name(t.data_type()),
                  "; braid reads float32 and int64 constants only");
  }
  return out;
}

Tensor read_constant(const Constant& c) {
  return c.proto ? read_tensor(*c.proto, c.what) : *c.tensor;
}

const Constant* Constants::find(const std::string& name) const {
  if (materialized_.count(name)) return nullptr;
  auto it = map_.find(name);
  return it == map_.end() ? nullptr : &it->second;
}

}  // namespace braid::models::onnx_detail
