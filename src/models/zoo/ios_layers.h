// Builder helpers for the IOS benchmark networks, mirroring python/ios/models/common.py of the
// IOS authors' code (peers.md §1.2, §2) so that every IOS op becomes exactly one braid unit.
//
//   IosNetBuilder net("tiny", options, /*default_image_size=*/224);
//   ValueId a = net.conv2d("a", {{net.input()}}, 64, {.kernel = {3, 3}, .padding = {1, 1}});
//   ValueId b = net.relu_sep_conv("b", {{net.input()}}, 64, {.kernel = {3, 3}, .padding = {1, 1}});
//   ValueId s = net.identity("sum", {{a, b}});          // one term, two values: a Sum
//   ir::Graph g = std::move(net).finish(net.global_avg_pool("avgpool", {{s}}));
//
// IOS feeds every op a list of *terms*: the values inside a term are summed element-wise and the
// terms are concatenated along channels (ios/ir.py). The braid IR has no such input, so each
// helper emits an input prologue (one Sum per multi-value term, one Concat over several terms)
// and puts it in the op's unit hint, as IOS recomputes the sum in every consumer. Compound ops
// (IOS "Sequential": ReluSepConv, ReluConv, SepConv) are one unit hint as well, so the fused
// UnitGraph has one unit per IOS op and one edge reference per IOS input value.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "models/zoo.h"

namespace braid::models::ios {

using Term = std::vector<ValueId>;  // values summed
using Terms = std::vector<Term>;    // terms concatenated along channels

// A convolution or pooling window; IOS pads symmetrically.
struct Window {
  std::array<int64_t, 2> kernel{1, 1};
  std::array<int64_t, 2> stride{1, 1};
  std::array<int64_t, 2> padding{0, 0};
};

enum class PoolType : uint8_t { kMax, kAvg };

class IosNetBuilder {
 public:
  // Input "input" of shape [batch, 3, S, S], S = options.image_size or `default_image_size`.
  IosNetBuilder(std::string graph_name, const ZooOptions& options, int64_t default_image_size);

  ValueId input() const { return input_; }
  int64_t channels(ValueId v) const { return b_.type(v).shape.at(1); }
  ir::GraphBuilder& builder() { return b_; }

  // IOS conv2d: Conv with bias and fused activation (act='relu' by default, kNone = 'identity').
  ValueId conv2d(std::string name, const Terms& in, int64_t out_channels, Window w,
                 ir::Activation act = ir::Activation::kRelu, int64_t groups = 1);
  // IOS pool2d 'max' / 'avg'; avg counts the padding, as cuDNN's INCLUDE_PADDING mode does.
  ValueId pool2d(std::string name, const Terms& in, PoolType type, Window w);
  ValueId global_avg_pool(std::string name, const Terms& in);
  // IOS identity: no kernel of its own; it is its input's sum (a Sum op) or concat (Concat op,
  // with the summed terms' Sum ops in its unit).
  ValueId identity(std::string name, const Terms& in);
  // A standalone IOS Relu: hinted so the fusion pass does not fold it into its producer.
  ValueId relu(std::string name, const Terms& in);
  // SepConv: depthwise k x k (groups = Cin, no act) -> pointwise 1x1 (no act), one unit.
  ValueId sep_conv(std::string name, const Terms& in, int64_t out_channels, Window w);
  // ReluSepConv: Relu -> SepConv, one unit named after the Relu (`name`).
  ValueId relu_sep_conv(std::string name, const Terms& in, int64_t out_channels, Window w);
  // ReluConv: Relu -> Conv (no act), one unit named after the Relu (`name`).
  ValueId relu_conv(std::string name, const Terms& in, int64_t out_channels, Window w);

  // Marks `output` as the graph output and builds the graph.
  ir::Graph finish(ValueId output) &&;

 private:
  // Adds one op named exactly `name` and appends it to `ops`.
  NodeId add(ir::OpKind kind, ir::OpAttrs attrs, std::vector<ValueId> inputs, std::string name,
             std::vector<NodeId>& ops);
  // Emits the input prologue of an op named `name` into `ops`; returns the value the op reads.
  ValueId gather(const std::string& name, const Terms& in, std::vector<NodeId>& ops);
  ValueId add_conv(std::string name, ValueId src, int64_t out_channels, const Window& w,
                   ir::Activation act, int64_t groups, std::vector<NodeId>& ops);
  ValueId add_relu(std::string name, ValueId src, std::vector<NodeId>& ops);
  ValueId separable(const std::string& name, ValueId src, int64_t out_channels, const Window& w,
                    std::vector<NodeId>& ops);
  // Registers `ops` as one unit when fusion could otherwise split or merge them.
  void commit(std::vector<NodeId> ops);

  ir::GraphBuilder b_;
  ValueId input_{};
};

}  // namespace braid::models::ios
