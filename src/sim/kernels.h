// sim::Kernel — what a unit becomes on a simulated GPU: one or more kernels, each a grid of
// identical blocks with per-block resources (what decides occupancy) and per-block work (what
// decides how long a block takes once it runs).
//
//   sim::DeviceSpec v100 = sim::load_device("v100");
//   std::vector<sim::Kernel> ks = sim::unit_kernels(units, u, v100);   // "conv1: igemm 64x64"
//   std::vector<sim::Kernel> m = sim::merged_kernels(units, {a, b}, v100);
//
// The tiling heuristic (docs/simulator.md) follows what cuDNN's implicit-GEMM convolutions and
// CUTLASS's SIMT GEMMs do:
//  - Conv, MatMul, Gemm are a GEMM (conv: M = N*OH*OW, N = Cout/groups, K = Cin/groups*KH*KW).
//    The candidates are CUTLASS-like thread-block tiles (128x128 ... 32x32, each with its
//    threads, registers, shared memory and the fraction of the SM's peak its inner loop
//    reaches) times split-K factors 1..16 (a split-K kernel is followed by a reduction
//    kernel). The chosen candidate is the one a single kernel on an idle device would finish
//    first (waves of resident blocks x time per block): what cudnnFind picks by measuring.
//  - Depthwise convolutions, pooling, element-wise ops, Concat, Split, Softmax, LayerNorm,
//    GlobalAveragePool: one thread per few output elements, 256-thread blocks.
//  - Activations, BatchNormalization (folded at compile time) and bias/scale Add/Mul that
//    follow a kernel inside a unit run in its epilogue: no kernel of their own. View ops
//    (Reshape, Flatten, Identity) and a Pad fused into its consumer launch nothing.
// A merged convolution (ios.txt §4.2) is one GEMM with N = sum of Cout and the largest kernel
// (smaller kernels zero-padded: their wasted FLOPs are counted), then a split kernel.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "base/ids.h"
#include "ir/unit_graph.h"
#include "sim/device_spec.h"

namespace braid::sim {

struct Kernel {
  std::string name;         // "conv1 igemm 64x64 splitk 2"
  UnitId unit{};            // the unit it belongs to
  int64_t blocks = 1;       // grid size
  int threads = 256;        // per block
  int registers = 32;       // per thread
  int shared_memory = 0;    // bytes per block
  double efficiency = 0.6;  // fraction of the SM's FP32 peak the kernel's inner loop reaches
  double flops = 0;         // per block
  // DRAM bytes per block when what the kernel reuses stays in L2 (compulsory traffic) and when
  // nothing does (every tile load misses). The engine interpolates by the L2 miss ratio.
  double dram_bytes = 0;
  double uncached_bytes = 0;
  double working_set = 0;     // bytes the kernel keeps in L2 (inputs, weights, outputs)
  bool gemm = false;          // a GEMM tile loop (compute-bound; see KernelModel::co_resident_gemm)
  bool library_call = false;  // launched by a cuDNN/cuBLAS call (its host cost, eager)

  int warps() const { return (threads + 31) / 32; }
  // Blocks of this kernel an empty SM holds at once (0: the kernel cannot run on `spec`).
  int blocks_per_sm(const DeviceSpec& spec) const;
};

// The built-in CUTLASS-like tile table, used where a device's kernel_model lists no gemm_tiles.
std::span<const GemmTileSpec> builtin_gemm_tiles();

// The kernels of one unit, in launch order. Empty for units that launch nothing (views).
// Units of a weighted DAG (no operators) become one kernel whose work takes the unit's
// latency on an idle device.
std::vector<Kernel> unit_kernels(const ir::UnitGraph& units, UnitId unit, const DeviceSpec& spec);

// The kernels of an operator-merge stage: one wider convolution, then a split. Requires units
// that sched::mergeable_conv accepts (asserts otherwise).
std::vector<Kernel> merged_kernels(const ir::UnitGraph& units, std::span<const UnitId> merge,
                                   const DeviceSpec& spec);

// The time `kernel` takes alone on an idle `spec` in the engine's model (waves of resident
// blocks, each at the SM's share of compute and bandwidth): the estimate the tiling
// heuristic ranks candidates by. Microseconds.
double idle_kernel_us(const Kernel& kernel, const DeviceSpec& spec);

// Constants of the execution model shared by the tiling heuristic and the engine.
struct SmModel {
  // Resident warps an SM needs to reach its peak issue rate (4 per warp scheduler): with fewer,
  // latency is not hidden and the SM's throughput falls in proportion.
  static constexpr double kWarpsForPeakCompute = 8;
  // Resident warps an SM needs to keep enough loads in flight for its bandwidth share.
  static constexpr double kWarpsForPeakMemory = 16;
  // One SM may draw this many times its even share (DRAM bandwidth / SMs) when others idle.
  static constexpr double kSmBandwidthShare = 3;
  // A block's fixed latency besides its work (start-up, address set-up, epilogue, drain):
  // it holds the block's resources but not the SM's issue slots or bandwidth. A block with no
  // work at all (an empty kernel) has none. The default of KernelModel::block_latency_us; a
  // device file may fit its own.
  static constexpr double kBlockLatencyUs = 2.2;
};

}  // namespace braid::sim
