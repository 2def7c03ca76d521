// RandWire (large) as the IOS authors define it (python/ios/models/randwire.py; peers.md §2.4):
// a 3x3/2 conv to C/2 = 77 channels, four random-wired stages of C = 154, 308, 616, 1232, then
// Relu -> 1x1 conv to 1280 -> global average pool. 6 blocks, 120 ops, 1280x1x1 out.
//
// A stage turns a DAG into ops: every node is a ReluSepConv 3x3 with C outputs; a source reads
// the stage input with stride 2 (halving H and W), any other node reads the unweighted sum of
// its predecessors' outputs (a Sum op inside its unit); the stage output is the sum of the
// sinks (an IOS Identity: a Sum op, its own unit). Nodes are created in IOS's order, Kahn's
// algorithm with a LIFO stack, so unit order matches IOS's op names.
#include <string>
#include <vector>

#include "base/error.h"
#include "models/zoo.h"
#include "models/zoo/ios_layers.h"
#include "models/zoo/watts_strogatz.h"

namespace braid::models {
namespace {

using ios::IosNetBuilder;
using ios::Terms;
using ios::Window;

constexpr int64_t kDefaultImageSize = 224;
constexpr int64_t kChannels = 154;  // C of randwire_large
constexpr int64_t kNumStages = 4;
constexpr int64_t kTailChannels = 1280;

ValueId randwire_stage(IosNetBuilder& net, const std::string& stage, ValueId x, int64_t channels,
                       const WsGraph& dag) {
  const auto n = static_cast<size_t>(dag.num_nodes);
  std::vector<std::vector<size_t>> ins(n), outs(n);
  std::vector<size_t> in_degree(n, 0);
  for (auto [u, v] : dag.edges) {
    outs[u].push_back(v);
    ins[v].push_back(u);
    ++in_degree[v];
  }
  std::vector<ValueId> output(n);
  std::vector<size_t> stack;
  for (size_t u = 0; u < n; ++u)
    if (in_degree[u] == 0) stack.push_back(u);
  while (!stack.empty()) {
    const size_t u = stack.back();
    stack.pop_back();
    const std::string name = stage + "/node" + std::to_string(u);
    if (ins[u].empty()) {
      output[u] = net.relu_sep_conv(name, {{x}}, channels,
                                    {.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}});
    } else {
      Terms in(1);
      for (size_t p : ins[u]) in[0].push_back(output[p]);
      output[u] = net.relu_sep_conv(name, in, channels, {.kernel = {3, 3}, .padding = {1, 1}});
    }
    for (size_t v : outs[u])
      if (--in_degree[v] == 0) stack.push_back(v);
  }
  Terms sinks(1);
  for (size_t u = 0; u < n; ++u)
    if (outs[u].empty()) sinks[0].push_back(output[u]);
  return net.identity(stage + "/out", sinks);
}

WsGraph stage_graph(const ZooOptions& options, int64_t stage) {
  if (options.randwire_nodes == 0) {
    const EmbeddedWsGraph& file = randwire_large_graphs()[static_cast<size_t>(stage)];
    return parse_ws_graph(file.text, file.file_name);
  }
  BRAID_CHECK(options.randwire_nodes > 0, ErrorCode::kInvalidArgument,
              "randwire_nodes must be >= 0 (0 = IOS's graph files), got ", options.randwire_nodes);
  return watts_strogatz(options.randwire_nodes, options.randwire_k, options.randwire_p,
                        options.randwire_seed + static_cast<uint64_t>(stage));
}

}  // namespace

ir::Graph build_randwire_ios(const ZooOptions& options) {
  const bool from_files = options.randwire_nodes == 0;
  IosNetBuilder net(
      from_files ? "randwire" : "randwire_ws" + std::to_string(options.randwire_nodes), options,
      kDefaultImageSize);
  ValueId v = net.conv2d("conv1", {{net.input()}}, kChannels / 2,
                         {.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}},
                         ir::Activation::kNone);  // 77 x 112 x 112
  for (int64_t s = 0; s < kNumStages; ++s) {
    // 154 x 56 x 56 -> 308 x 28 x 28 -> 616 x 14 x 14 -> 1232 x 7 x 7
    v = randwire_stage(net, "stage" + std::to_string(s + 1), v, kChannels << s,
                       stage_graph(options, s));
  }
  v = net.relu("relu", {{v}});
  v = net.conv2d("conv2", {{v}}, kTailChannels, {}, ir::Activation::kNone);
  ValueId out = net.global_avg_pool("avgpool", {{v}});  // 1280 x 1 x 1
  return std::move(net).finish(out);
}

}  // namespace braid::models
