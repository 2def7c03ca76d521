// Strong ids: a NodeId is not a ValueId is not a UnitId. Each is an index into the owning
// container; index() turns it back into a size_t.
#pragma once

#include <cstddef>
#include <cstdint>

namespace braid {

enum class NodeId : uint32_t {};   // an operator of ir::Graph
enum class ValueId : uint32_t {};  // a tensor of ir::Graph (activation, input or parameter)
enum class UnitId : uint32_t {};   // a schedule unit (fused operators) of ir::UnitGraph

template <typename Id>
constexpr size_t index(Id id) {
  return static_cast<size_t>(id);
}
template <typename Id>
constexpr Id make_id(size_t i) {
  return static_cast<Id>(static_cast<uint32_t>(i));
}

}  // namespace braid
