// Which memory layout each 16-bit convolution of a CUDA plan runs in (issue 29), apart from the
// cuDNN calls that measure them, so the choice can be tested where there is no GPU.
//
//   std::vector<ConvSite> sites = ...;   // one per Conv as the compiler fuses it, with its times
//   ConvLayouts c = choose_conv_layouts(graph, sites, ConvLayoutMode::kMeasure);
//   c.layout[i];        // kNchw or kNhwc: how site i's cuDNN call sees x, w and y
//   c.stored_nhwc(v);   // whether value v lies in the arena as NHWC
//
// cuDNN's tensor-core convolutions in FP16/BF16 are often fastest on NHWC tensors, but not
// always (few channels, grouped and depthwise convolutions), and every other kernel of the
// CUDA executor reads NCHW. So each 16-bit convolution is timed in both layouts at prepare
// (the fastest algorithm of each, cudnnFindConvolutionForwardAlgorithmEx), and a value is
// stored NHWC only when an NHWC convolution writes it and NHWC convolutions alone read it.
// Everywhere else an NHWC convolution transforms (cudnnTransformTensor) its input from NCHW
// into scratch before it runs, or its output back to NCHW after: the boundary costs. A
// convolution keeps NHWC only when its NHWC time plus the transforms it then needs beats its
// NCHW time; turning one back to NCHW can only add transforms to its neighbours, so the choice
// repeats until none turns back. FP32 and TF32 plans, and convolutions cuDNN cannot run NHWC
// (asymmetric pads go through our NCHW pad kernel), stay NCHW.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "base/ids.h"
#include "ir/graph.h"

namespace braid::exec::cuda {

enum class ConvLayout : uint8_t { kNchw, kNhwc };
std::string_view to_string(ConvLayout layout);  // "NCHW", "NHWC"

// How layouts are chosen (CudaExecutorOptions::conv_layout): kMeasure, the default, as above;
// kNchw and kNhwc force every convolution that can run so (tests, and checking a measurement).
enum class ConvLayoutMode : uint8_t { kMeasure, kNchw, kNhwc };

// One convolution as the compiler fuses it (Conv [BatchNormalization] [activation] [residual
// Add] [activation]): it reads `x` (the Conv's first input) and writes `y` (the last fused op's
// output). A residual site's y is never stored NHWC: the Add's other input lies NCHW (no
// convolution alone reads it), and the addition runs on y as stored.
struct ConvSite {
  NodeId conv{};
  ValueId x{}, y{};
  bool residual = false;
  bool nhwc_ok = false;  // cuDNN runs it NHWC (16-bit storage, symmetric pads, an algorithm)
  // Measured: the fastest algorithm in each layout, and a cudnnTransformTensor between the
  // layouts of x and of y.
  double nchw_us = 0, nhwc_us = 0;
  double x_transform_us = 0, y_transform_us = 0;
};

struct ConvLayouts {
  std::vector<ConvLayout> layout;  // per site, in the sites' order
  std::vector<bool> nhwc_value;    // by value index: stored NHWC in the arena
  bool stored_nhwc(ValueId v) const { return nhwc_value.at(index(v)); }
};

// The layouts of `sites` (every Conv of `graph`, each once) under `mode`.
ConvLayouts choose_conv_layouts(const ir::Graph& graph, std::span<const ConvSite> sites,
                                ConvLayoutMode mode);

}  // namespace braid::exec::cuda
