#include "models/onnx_attributes.h"

#include <algorithm>

namespace braid::models::onnx_detail {

const onnx::AttributeProto* NodeAttributes::find(std::string_view name,
                                                 onnx::AttributeProto::AttributeType type) const {
  for (const auto& a : node_.attribute())
    if (a.name() == name) {
      BRAID_CHECK(a.type() == type, ErrorCode::kInvalidModel, who_, ": attribute '", name,
                  "' must be of type ", onnx::AttributeProto::AttributeType_Name(type));
      return &a;
    }
  return nullptr;
}

int64_t NodeAttributes::get_int(std::string_view name, int64_t fallback) const {
  const auto* a = find(name, onnx::AttributeProto::INT);
  return a ? a->i() : fallback;
}

float NodeAttributes::get_float(std::string_view name, float fallback) const {
  const auto* a = find(name, onnx::AttributeProto::FLOAT);
  return a ? a->f() : fallback;
}

std::string NodeAttributes::get_string(std::string_view name, std::string fallback) const {
  const auto* a = find(name, onnx::AttributeProto::STRING);
  return a ? a->s() : fallback;
}

std::optional<std::vector<int64_t>> NodeAttributes::get_ints(std::string_view name) const {
  const auto* a = find(name, onnx::AttributeProto::INTS);
  if (!a) return std::nullopt;
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

const std::vector<int64_t>& NodeAttributes::bounded(std::string_view role,
                                                    const std::vector<int64_t>& v) const {
  for (int64_t x : v)
    BRAID_CHECK(x >= -kMaxSize && x <= kMaxSize, ErrorCode::kInvalidModel, who_, ": ", role,
                " value ", x, " is out of range");
  return v;
}

void NodeAttributes::check_known(std::span<const std::string_view> known) const {
  for (const auto& a : node_.attribute())
    BRAID_CHECK(std::find(known.begin(), known.end(), a.name()) != known.end(),
                ErrorCode::kUnsupported, who_, ": attribute '", a.name(), "' of ", node_.op_type(),
                " is not supported");
}

}  // namespace braid::models::onnx_detail
