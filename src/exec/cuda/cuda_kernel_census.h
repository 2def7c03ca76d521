// The kernels a stretch of CUDA work launches, read from the device's driver (issue 31 item 3:
// Opara's resource demand under `--cost cuda:N`, opara.txt §3.3). The work is captured into a
// CUDA Graph, never run; each kernel node then gives its grid, block and dynamic shared memory,
// and its function gives registers per thread, static shared memory and how many of its blocks
// an SM holds at once. cuDNN's and cuBLAS's kernels are no functions of braid's, so the runtime's
// cudaFuncGetAttributes cannot name them; the driver's CUfunction can.
//
//   std::optional<std::vector<exec::LaunchedKernel>> ks = exec::capture_kernels(stream, [&] {
//     for (const cuda::Op& op : unit_ops) op(lane, arena);   // enqueued on `stream`
//   });
//   exec::CudaDeviceFigures d = exec::cuda_device_figures(0);
//
// This header needs no CUDA: the profiler above exec/ includes it in every build. Without CUDA
// cuda_device_figures throws braid::Error(kNotFound) and capture_kernels is not defined.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

struct CUstream_st;  // cudaStream_t, without including the runtime's headers

namespace braid::exec {

// One kernel node of a captured graph, as the driver reports it.
struct LaunchedKernel {
  std::string name;           // the function's (mangled) name; empty where the driver has none
  int64_t blocks = 0;         // grid size, x * y * z
  int64_t threads = 0;        // per block, x * y * z
  int64_t registers = 0;      // per thread (CU_FUNC_ATTRIBUTE_NUM_REGS)
  int64_t shared_memory = 0;  // per block: static (the function's) + dynamic (the launch's)
  int64_t blocks_per_sm = 0;  // resident on an empty SM (the driver's occupancy calculator)
  bool operator==(const LaunchedKernel&) const = default;
};

// What the unit-resource arithmetic needs of a device (profile::resources_of_kernels).
struct CudaDeviceFigures {
  int64_t sms = 0;
  int64_t max_warps_per_sm = 0;
  double fp32_flops = 0;        // sustained FP32 FLOP/s (see cuda_kernel_census.cc)
  double dram_bytes_per_s = 0;  // peak DRAM bandwidth
};

// From the device's attributes (clock, SMs, memory clock and bus width): braid has no device file
// for an arbitrary cuda:N (devices/*.json name models, not the GPU the runtime finds).
CudaDeviceFigures cuda_device_figures(int device);

// The kernels that `issue` enqueues on `stream` (and on streams forked from it), in launch
// order: captured on the calling thread (cudaStreamCaptureModeThreadLocal), then discarded
// unrun. nullopt where the driver cannot say: a driver older than CUDA 12.0's entry points, or
// a query that fails. An exception thrown by `issue` ends the capture and propagates. The
// device of `stream` must be current.
std::optional<std::vector<LaunchedKernel>> capture_kernels(CUstream_st* stream,
                                                           const std::function<void()>& issue);

}  // namespace braid::exec
