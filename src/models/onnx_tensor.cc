#include "models/onnx_tensor.h"

#include <bit>
#include <cstring>
#include <unordered_map>

#include "base/error.h"
#include "base/float16.h"

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

std::optional<ir::DType> dtype_of_onnx(int t) {
  switch (t) {
    case onnx::TensorProto::FLOAT:
    case onnx::TensorProto::FLOAT16:
    case onnx::TensorProto::BFLOAT16:
      return ir::DType::kFloat32;
    case onnx::TensorProto::INT64:
      return ir::DType::kInt64;
    case onnx::TensorProto::BOOL:
      return ir::DType::kBool;
    default:
      return std::nullopt;
  }
}

int onnx_type_of(ir::DType t) {
  switch (t) {
    case ir::DType::kFloat32:
      return onnx::TensorProto::FLOAT;
    case ir::DType::kInt64:
      return onnx::TensorProto::INT64;
    case ir::DType::kBool:
      return onnx::TensorProto::BOOL;
  }
  return onnx::TensorProto::UNDEFINED;
}

int widened(int t) {
  return t == onnx::TensorProto::FLOAT16 || t == onnx::TensorProto::BFLOAT16
             ? onnx::TensorProto::FLOAT
             : t;
}

DeclaredTypes declared_types(const onnx::GraphProto& g, const ir::Graph& graph) {
  DeclaredTypes d;
  bool float16 = false, bfloat16 = false;
  auto note = [&](int t) {
    float16 = float16 || t == onnx::TensorProto::FLOAT16;
    bfloat16 = bfloat16 || t == onnx::TensorProto::BFLOAT16;
  };
  // The file's type where it is a 16-bit float braid holds as float32, else braid's own.
  auto declared = [](const onnx::ValueInfoProto* v, ir::DType dtype) {
    const int t = v ? v->type().tensor_type().elem_type() : 0;
    if (dtype != ir::DType::kFloat32 || widened(t) == t) return element_type_of(dtype);
    return t == onnx::TensorProto::FLOAT16 ? ElementType::kFloat16 : ElementType::kBFloat16;
  };
  std::unordered_map<std::string, const onnx::ValueInfoProto*> inputs;
  for (const auto& v : g.input()) inputs[v.name()] = &v;
  for (ValueId id : graph.inputs()) {
    auto it = inputs.find(graph.value(id).name);
    d.inputs.push_back(
        declared(it == inputs.end() ? nullptr : it->second, graph.value(id).type.dtype));
  }
  for (size_t i = 0; i < graph.outputs().size(); ++i)  // marked in the file's order
    d.outputs.push_back(
        declared(static_cast<int>(i) < g.output_size() ? &g.output(static_cast<int>(i)) : nullptr,
                 graph.value(graph.outputs()[i]).type.dtype));
  for (const auto* list : {&g.input(), &g.output(), &g.value_info()})
    for (const onnx::ValueInfoProto& v : *list) note(v.type().tensor_type().elem_type());
  for (const onnx::TensorProto& t : g.initializer()) note(t.data_type());
  for (const onnx::NodeProto& n : g.node())
    for (const onnx::AttributeProto& a : n.attribute()) {
      if (a.type() == onnx::AttributeProto::TENSOR) note(a.t().data_type());
      if (n.op_type() == "Cast" && a.name() == "to") note(static_cast<int>(a.i()));
    }
  d.floats = float16    ? ElementType::kFloat16
             : bfloat16 ? ElementType::kBFloat16
                        : ElementType::kFloat32;
  return d;
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
    case onnx::TensorProto::INT32: {
      out.dtype = ir::DType::kInt64;
      const auto v = read_payload<int32_t>(t, t.int32_data(), n, what);
      out.ints.assign(v.begin(), v.end());
      break;
    }
    case onnx::TensorProto::BOOL: {  // raw_data: one byte each; int32_data: one int each
      out.dtype = ir::DType::kInt64;
      if (t.has_raw_data()) {
        const auto v = read_payload<uint8_t>(t, t.int32_data(), n, what);
        for (uint8_t b : v) out.ints.push_back(b != 0);
      } else {
        const auto v = read_payload<int32_t>(t, t.int32_data(), n, what);
        for (int32_t b : v) out.ints.push_back(b != 0);
      }
      break;
    }
    case onnx::TensorProto::FLOAT16:
    case onnx::TensorProto::BFLOAT16: {  // widened to float32, exactly
      float (*const widen)(uint16_t) =
          t.data_type() == onnx::TensorProto::FLOAT16 ? float16_to_float : bfloat16_to_float;
      out.floats.reserve(n);
      if (t.has_raw_data()) {
        for (uint16_t h : read_payload<uint16_t>(t, t.int32_data(), n, what))
          out.floats.push_back(widen(h));
      } else {  // the bit pattern in each int32's low 16 bits
        for (int32_t h : read_payload<int32_t>(t, t.int32_data(), n, what))
          out.floats.push_back(widen(static_cast<uint16_t>(h)));
      }
      break;
    }
    default:
      BRAID_THROW(kUnsupported, what, " has element type ", onnx_type_name(t.data_type()),
                  "; braid reads float32, float16, bfloat16, int64, int32 and bool constants only");
  }
  out.elem_type = widened(t.data_type());
  return out;
}

Tensor make_tensor(int32_t elem_type, ir::Shape shape) {
  Tensor t;
  t.elem_type = elem_type;
  t.dtype = elem_type == onnx::TensorProto::FLOAT ? ir::DType::kFloat32 : ir::DType::kInt64;
  t.shape = std::move(shape);
  if (t.is_float()) {
    t.floats.resize(t.elements());
  } else {
    t.ints.resize(t.elements());
  }
  return t;
}

void write_tensor(const Tensor& t, onnx::TensorProto* out) {
  out->set_data_type(t.elem_type);
  for (int64_t d : t.shape) out->add_dims(d);
  std::string& raw = *out->mutable_raw_data();
  auto append = [&raw](const auto& v) { raw.append(reinterpret_cast<const char*>(&v), sizeof(v)); };
  switch (t.elem_type) {
    case onnx::TensorProto::FLOAT:
      for (float v : t.floats) append(v);
      break;
    case onnx::TensorProto::INT64:
      for (int64_t v : t.ints) append(v);
      break;
    case onnx::TensorProto::INT32:
      for (int64_t v : t.ints) append(static_cast<int32_t>(v));
      break;
    default:  // BOOL
      for (int64_t v : t.ints) append(static_cast<uint8_t>(v != 0));
  }
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
