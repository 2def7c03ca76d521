// Reference kernels: the oracle every other executor is compared against. Naive loops, one
// thread, double accumulators, ONNX semantics, no fusion and no cleverness: when a CPU or CUDA
// kernel disagrees with these, the other kernel is presumed wrong. Never optimize this file.
//
//   std::vector<const float*> in = {x.data(), w.data()};
//   std::vector<float*> out = {y.data()};
//   ref::run_op(graph, conv_node, in, out);   // y = Conv(x, w) as ONNX defines it
//
// Parameters are passed exactly like activations: one pointer per node input, in node input
// order; one pointer per node output. Shapes come from the graph (shape inference has already
// put them on every Value). Buffers must not overlap. A value of dtype int64 or bool is passed
// through the same pointer type: it points at the value's bytes (8 or 1 per element), and the
// few ops that take such values (Gather, Cast, Equal, Not, Where, Expand, Slice, the views) read
// and write it as its dtype.
//
// Where ONNX leaves a choice open, the reference follows ONNX Runtime / PyTorch:
//  - AveragePool with count_include_pad=1 divides by the part of the window that lies inside
//    the padded input [-pad_begin, in + pad_end) (only differs from kernel size with ceil_mode);
//  - a Conv's fused Activation::kGelu is the exact (erf) GELU, like ONNX Gelu's default.
#pragma once

#include <span>

#include "base/ids.h"
#include "ir/graph.h"

namespace braid::exec::ref {

void run_op(const ir::Graph& graph, NodeId node, std::span<const float* const> inputs,
            std::span<float* const> outputs);

// The element-wise functions, shared with tests that need them.
float relu(float x);
float sigmoid(float x);
float gelu(float x, bool tanh_approximation);
float hard_sigmoid(float x, float alpha, float beta);  // max(0, min(1, alpha * x + beta))
float apply_activation(ir::Activation activation, float x);

}  // namespace braid::exec::ref
