// A BERT-base encoder (Devlin et al. 2019; the layer as HuggingFace's BertLayer exports it to
// ONNX), from the hidden states after the embeddings to the last layer's output; no attention
// mask. Options: layers (12), seq_len (128), hidden (768; heads = hidden / 64, FFN 4 x hidden).
// Input "input" [batch, seq_len, hidden] float32; output [batch, seq_len, hidden].
//
// One layer, as ops (names follow HuggingFace's parameter names):
//   Q, K, V = MatMul + bias Add -> Reshape [B, S, heads, 64] -> Transpose [B, heads, S, 64]
//             (K to [B, heads, 64, S])
//   scores  = MatMul(Q, K) -> Mul by 1/sqrt(64) -> Softmax(-1);  ctx = MatMul(scores, V)
//             -> Transpose [B, S, heads, 64] -> Reshape [B, S, hidden]
//   attn    = MatMul + bias Add -> Add residual -> LayerNormalization
//   ffn     = MatMul + bias Add -> Gelu -> MatMul + bias Add -> Add residual -> LayerNormalization
// ir::fuse makes 13 units of a layer: Q, K and V (MatMul-Add-Reshape-Transpose each), MatMul-Mul,
// Softmax, MatMul-Transpose-Reshape, MatMul-Add (attention output), Add, LayerNormalization,
// MatMul-Add-Gelu, MatMul-Add, Add, LayerNormalization; 17 edge references. The three Q/K/V
// units are the layer's only inter-operator parallelism.
#include <cmath>
#include <string>
#include <vector>

#include "base/error.h"
#include "models/zoo.h"
#include "models/zoo/torch_layers.h"

namespace braid::models {
namespace {

using ir::OpKind;
using torch::TorchNetBuilder;

constexpr int64_t kHeadSize = 64;            // BERT's per-head width
constexpr int64_t kFfnFactor = 4;            // intermediate size = 4 x hidden
constexpr float kLayerNormEpsilon = 1e-12f;  // BERT's layer_norm_eps

struct Dims {
  int64_t batch, seq_len, hidden, heads;
};

// Q, K or V: dense projection, then split into heads. `perm` orders [B, S, heads, 64].
ValueId project_heads(TorchNetBuilder& net, const std::string& name, ValueId x, const Dims& d,
                      std::vector<int64_t> perm) {
  ValueId y = net.matmul_bias(name, x, d.hidden);
  y = net.op(OpKind::Reshape, ir::ReshapeAttrs{.shape = {d.batch, d.seq_len, d.heads, kHeadSize}},
             {y}, name + "/reshape");
  return net.op(OpKind::Transpose, ir::TransposeAttrs{.perm = std::move(perm)}, {y},
                name + "/transpose");
}

ValueId layer_norm(TorchNetBuilder& net, const std::string& name, ValueId x, int64_t hidden) {
  ir::GraphBuilder& b = net.builder();
  ValueId scale = b.add_parameter(name + ".weight", {ir::DType::kFloat32, {hidden}},
                                  ir::ParamInit::constant({1.0f}));
  ValueId bias = b.add_parameter(name + ".bias", {ir::DType::kFloat32, {hidden}},
                                 ir::ParamInit::constant({0.0f}));
  return net.op(OpKind::LayerNormalization,
                ir::LayerNormAttrs{.axis = -1, .epsilon = kLayerNormEpsilon}, {x, scale, bias},
                name);
}

ValueId encoder_layer(TorchNetBuilder& net, const std::string& m, ValueId x, const Dims& d) {
  const std::string self = m + ".attention.self";
  ValueId q = project_heads(net, self + ".query", x, d, {0, 2, 1, 3});  // [B, h, S, 64]
  ValueId k = project_heads(net, self + ".key", x, d, {0, 2, 3, 1});    // [B, h, 64, S]
  ValueId v = project_heads(net, self + ".value", x, d, {0, 2, 1, 3});  // [B, h, S, 64]

  ValueId scores = net.op(OpKind::MatMul, {}, {q, k}, self + "/scores");  // [B, h, S, S]
  // One scalar per layer, as an exporter writes the constant of each layer's scaling.
  ValueId scale = net.builder().add_parameter(
      self + ".scale", {ir::DType::kFloat32, {1}},
      ir::ParamInit::constant({1.0f / std::sqrt(static_cast<float>(kHeadSize))}));
  scores = net.op(OpKind::Mul, {}, {scores, scale}, self + "/scale");
  ValueId probs = net.op(OpKind::Softmax, ir::AxisAttrs{.axis = -1}, {scores}, self + "/softmax");

  ValueId ctx = net.op(OpKind::MatMul, {}, {probs, v}, self + "/context");  // [B, h, S, 64]
  ctx = net.op(OpKind::Transpose, ir::TransposeAttrs{.perm = {0, 2, 1, 3}}, {ctx},
               self + "/context/transpose");  // [B, S, h, 64]
  ctx = net.op(OpKind::Reshape, ir::ReshapeAttrs{.shape = {d.batch, d.seq_len, d.hidden}}, {ctx},
               self + "/context/reshape");

  const std::string out = m + ".attention.output";
  ValueId attn = net.matmul_bias(out + ".dense", ctx, d.hidden);
  attn = net.add(out + "/residual", attn, x);
  attn = layer_norm(net, out + ".LayerNorm", attn, d.hidden);

  ValueId ffn = net.matmul_bias(m + ".intermediate.dense", attn, kFfnFactor * d.hidden);
  ffn = net.op(OpKind::Gelu, ir::GeluAttrs{}, {ffn}, m + ".intermediate/gelu");
  ffn = net.matmul_bias(m + ".output.dense", ffn, d.hidden);
  ffn = net.add(m + ".output/residual", ffn, attn);
  return layer_norm(net, m + ".output.LayerNorm", ffn, d.hidden);
}

}  // namespace

ir::Graph build_bert(const ZooOptions& options) {
  BRAID_CHECK(options.layers >= 1, ErrorCode::kInvalidArgument, "bert: layers must be >= 1, got ",
              options.layers);
  BRAID_CHECK(options.seq_len >= 1, ErrorCode::kInvalidArgument, "bert: seq_len must be >= 1, got ",
              options.seq_len);
  BRAID_CHECK(options.hidden >= kHeadSize && options.hidden % kHeadSize == 0,
              ErrorCode::kInvalidArgument, "bert: hidden must be a positive multiple of ",
              kHeadSize, " (heads of 64), got ", options.hidden);
  TorchNetBuilder net("bert", options);
  const Dims d{options.batch, options.seq_len, options.hidden, options.hidden / kHeadSize};
  ValueId x =
      net.builder().add_input("input", {ir::DType::kFloat32, {d.batch, d.seq_len, d.hidden}});
  for (int64_t i = 0; i < options.layers; ++i)
    x = encoder_layer(net, "encoder.layer." + std::to_string(i), x, d);
  return std::move(net).finish(x);
}

}  // namespace braid::models
