// ONNX import, attribute readers: typed access to one node's attributes, with messages that name
// the node.
//
//   NodeAttributes a(node, "node 'conv1'");
//   int64_t groups = a.get_int("group", 1);
//   auto strides = a.get_array<2>("strides", {1, 1}, /*positive=*/true);
//
// Internal to the importer; not part of the models API.
#pragma once

#include <onnx/onnx_pb.h>

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "models/onnx_tensor.h"

namespace braid::models::onnx_detail {

class NodeAttributes {
 public:
  // `who` names the node in messages ("node 'conv1'", "node #3 (Conv)").
  NodeAttributes(const onnx::NodeProto& node, std::string who)
      : node_(node), who_(std::move(who)) {}

  const std::string& who() const { return who_; }

  // The attribute, or nullptr when absent; kInvalidModel when present with another type.
  const onnx::AttributeProto* find(std::string_view name,
                                   onnx::AttributeProto::AttributeType type) const;
  int64_t get_int(std::string_view name, int64_t fallback) const;
  float get_float(std::string_view name, float fallback) const;
  std::string get_string(std::string_view name, std::string fallback) const;
  std::optional<std::vector<int64_t>> get_ints(std::string_view name) const;

  // An INTS attribute of exactly N entries, each positive (or non-negative), at most kMaxSize.
  template <size_t N>
  std::array<int64_t, N> get_array(std::string_view name, std::array<int64_t, N> fallback,
                                   bool positive) const {
    auto v = get_ints(name);
    if (!v) return fallback;
    BRAID_CHECK(v->size() == N, N <= 2 ? ErrorCode::kUnsupported : ErrorCode::kInvalidModel, who_,
                ": attribute '", name, "' has ", v->size(),
                " entries; braid supports 2-D windows only (", N, " entries)");
    std::array<int64_t, N> out;
    for (size_t k = 0; k < N; ++k) {
      BRAID_CHECK((positive ? (*v)[k] > 0 : (*v)[k] >= 0) && (*v)[k] <= kMaxSize,
                  ErrorCode::kInvalidModel, who_, ": attribute '", name, "' has a bad entry ",
                  (*v)[k]);
      out[k] = (*v)[k];
    }
    return out;
  }

  // Sizes from an attribute or constant (split sizes, pads, reshape dims) stay in a sane range.
  const std::vector<int64_t>& bounded(std::string_view role, const std::vector<int64_t>& v) const;

  // Every attribute must be in `known`: anything else could change the semantics (kUnsupported).
  void check_known(std::span<const std::string_view> known) const;

 private:
  const onnx::NodeProto& node_;
  std::string who_;
};

}  // namespace braid::models::onnx_detail
