// ONNX import, tensor payloads: constants read from initializers and Constant nodes.
//
//   Tensor t = read_tensor(initializer, "initializer 'shape'");   // dims checked, data copied
//   if (t.dtype == ir::DType::kInt64) use(t.ints);
//
// Internal to the importer (onnx_import.cc and its helpers); not part of the models API.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/graph.h"
#include "ir/tensor_type.h"
#include "models/onnx_import.h"

namespace braid::models::onnx_detail {

// Larger constants cannot come from a model under protobuf's 2 GiB limit; the bound keeps
// element counts far from int64 overflow.
constexpr int64_t kMaxElements = int64_t{1} << 40;
// Bound on sizes given by attributes and int64 constants (windows, pads, shapes), so that
// braid's shape arithmetic on them cannot overflow.
constexpr int64_t kMaxSize = int64_t{1} << 32;

// "FLOAT", "INT64", ... or "#42" for a number ONNX does not define.
std::string onnx_type_name(int elem_type);
// The braid dtype of an ONNX element type of graph inputs and Cast (FLOAT, INT64, BOOL; FLOAT16
// and BFLOAT16 computed as float32), or nullopt for the others; onnx_type_of is its inverse (FLOAT
// for float32).
std::optional<ir::DType> dtype_of_onnx(int elem_type);
int onnx_type_of(ir::DType dtype);
// FLOAT for FLOAT16 and BFLOAT16, which braid computes in float32 (issue 29); other types as given.
int widened(int elem_type);

// The element types the file `g` declares where braid computes in others (onnx_import.h), for
// the graph `graph` imported from it.
DeclaredTypes declared_types(const onnx::GraphProto& g, const ir::Graph& graph);

// A constant read from an initializer or a Constant node, or computed by folding (onnx_fold).
// FLOAT data lives in `floats`; INT64, INT32 and BOOL data in `ints` (bool as 0/1). FLOAT16 and
// BFLOAT16 data are widened to FLOAT when read (exactly), so no Tensor holds those types.
struct Tensor {
  ir::DType dtype = ir::DType::kFloat32;         // storage: kFloat32 -> floats, kInt64 -> ints
  int32_t elem_type = onnx::TensorProto::FLOAT;  // the ONNX element type
  ir::Shape shape;
  std::vector<float> floats;
  std::vector<int64_t> ints;

  int64_t elements() const { return ir::num_elements(shape); }
  bool is_float() const { return dtype == ir::DType::kFloat32; }
};

// An empty tensor of `elem_type` (FLOAT, INT64, INT32 or BOOL) with room for `shape`.
Tensor make_tensor(int32_t elem_type, ir::Shape shape);

// Throws kUnsupported for external or segmented data and element types braid does not read,
// kInvalidModel when the payload does not match the dims. `what` names the tensor in messages.
// FLOAT16 and BFLOAT16 payloads (raw_data: little-endian uint16s; int32_data: one bit pattern in
// the low 16 bits of each) come back as FLOAT.
Tensor read_tensor(const onnx::TensorProto& t, const std::string& what);
// `t` as a TensorProto (raw data), e.g. for ONNX shape inference.
void write_tensor(const Tensor& t, onnx::TensorProto* out);

// A named constant the graph walk has seen but not (yet) turned into a braid value.
struct Constant {
  const onnx::TensorProto* proto = nullptr;  // initializer or Constant's `value`
  std::shared_ptr<const Tensor> tensor;      // otherwise: the data itself
  std::string canonical;                     // the constant an alias (Identity, Dropout) names
  std::string what;                          // for messages
};

Tensor read_constant(const Constant& c);

// ONNX name -> constant. A constant used as an operand becomes a parameter under its canonical
// name (`materialize`); from then on that name is a value, not a constant.
class Constants {
 public:
  bool contains(const std::string& name) const { return map_.count(name) != 0; }
  // nullptr when `name` is not a constant, or was materialized as a value.
  const Constant* find(const std::string& name) const;
  const Constant& at(const std::string& name) const { return map_.at(name); }
  void set(const std::string& name, Constant c) { map_[name] = std::move(c); }
  void materialize(const std::string& name) { materialized_.insert(name); }

 private:
  std::unordered_map<std::string, Constant> map_;
  std::unordered_set<std::string> materialized_;
};

}  // namespace braid::models::onnx_detail
