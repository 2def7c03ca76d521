// sim::DeviceSpec — a GPU as the simulator sees it, read from devices/NAME.json (issue 5):
// SMs and their per-SM limits (what decides occupancy), peak FLOP/s, DRAM bandwidth, L2, host
// costs of launches and events, and inter-GPU links.
//
//   sim::DeviceSpec v100 = sim::load_device("v100");          // devices/v100.json
//   sim::DeviceSpec mine = sim::load_device("path/to/x.json");
//   v100.sms; v100.per_sm.max_warps; v100.peak_fp32_flops();
//   for (std::string name : sim::device_names()) ...
//
// Names resolve in BRAID_DEVICES_DIR when set, else in the source tree's devices/. A missing
// device is kNotFound (the message lists the known ones); a malformed or inconsistent file is
// kInvalidArgument naming the file and the field.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/precision.h"

namespace braid::sim {

struct SmLimits {
  int max_threads = 0;
  int max_warps = 0;
  int registers = 0;  // 32-bit registers
  int shared_memory_bytes = 0;
  int max_blocks = 0;
};

struct HostCosts {
  double launch_us = 0;        // one kernel launch from the host, eager
  double graph_launch_us = 0;  // per kernel under graph replay
  double event_record_us = 0;
  double event_wait_us = 0;
  // Device side, eager launches: from a kernel reaching its stream's head to its first block
  // starting (launch latency); streams pay it concurrently. Under graph replay graph_launch_us
  // takes its place. The file's kernel_latency_us, else 4 us.
  double kernel_latency_us = 4;
};

// How the device's kernel library turns units into kernels, when it differs from the built-in
// model (a "kernel_model" object in the device file; absent: the defaults below, which are the
// papers' fused kernels and CUTLASS-like tiles). devices/h100.json fits these to what braid's
// CUDA executor with cuDNN's heuristic really launched (devices/measured/h100_kernels.json).
struct GemmTileSpec {
  int m = 0, n = 0, threads = 0, registers = 0, shared_memory = 0;
  double efficiency = 0;  // fraction of the SM's FP32 peak its inner loop reaches
};
// How convolutions run on tensor cores when braid's tensors are NCHW (KernelModel::tensor_cores).
// Absent: the FP32 tiles at the tensor-core peak, nothing else.
struct TensorCoreModel {
  // The fraction of the dense tensor-core peak a GEMM tile's inner loop reaches, in place of the
  // tile's FP32 efficiency (0: the tile's).
  double efficiency = 0;
  // cuDNN's tensor-core convolutions read NHWC activations and KRSC filters: on NCHW tensors it
  // transposes the input and the filter before the GEMM and the output back after it (cuDNN's
  // Legacy API guide, "Tensor Core operations": NCHW-to-NHWC transformations). Each is one
  // memory-bound kernel over the tensor, launched inside the library call (per_op_kernels
  // only: the kernels of braid's CUDA executor).
  bool convert_input = false;
  bool convert_filter = false;
  bool convert_output = false;
};

struct KernelModel {
  // One kernel per op as braid's CUDA executor launches them (cuda_executor.cc): a Conv fuses
  // its BatchNormalization and a ReLU (cuDNN), any other activation or bias is a kernel of its
  // own, asymmetric pads a pad kernel, Concat one copy per input, Split one per output, Add a
  // kernel per extra input. False: the papers' fused epilogues and one kernel per Concat.
  bool per_op_kernels = false;
  std::vector<GemmTileSpec> gemm_tiles;  // empty: the built-in CUTLASS-like table
  std::vector<int> split_k;              // empty: 1, 2, 4
  int elements_per_thread = 4;           // element-wise kernels (256-thread blocks)
  // A block's fixed latency besides its work (start-up, address set-up, epilogue, drain); a
  // block without work has none. 2.2 us: the H100's kernels as Nsight Compute measured them
  // (docs/simulator.md), the one GPU whose kernels were measured one by one.
  double block_latency_us = 2.2;
  // Host time of one cuDNN/cuBLAS call, eager, in place of launch_us (0: launch_us). The
  // library's descriptor checks and heuristics run on every call.
  double library_call_us = 0;
  // Device side: what resolving one cross-stream event wait costs the waiting stream before
  // its next kernel may start (eager waits and the dependency edges of a replayed graph).
  double wait_latency_us = 0;
  // An operator merge (ios.txt 4.2) runs as one wider convolution (merged_kernels). False: as
  // braid's CUDA executor runs it, each convolution's own kernels one after another on the
  // merge's stream.
  bool merged_convolution = true;
  // Programs issue what braid's CUDA executor issues around a plan: a fork from a main stream
  // (a record, a wait per lane) and a join back to it, and under graph replay the inputs'
  // host-to-device and outputs' device-to-host copies (they are in the captured graph and
  // timed; eager timing starts after them), over the device's PCIe link.
  bool fork_join = false;
  // Blocks of two or more different GEMM kernels on one SM contend for its L1, shared-memory
  // bandwidth and register-file ports (Opara's compute-compute interference, opara.txt §3.3):
  // their issue rate is scaled by this. A GEMM beside memory-bound kernels is not. Fitted with
  // the other global constants on the calibration rows of devices/published.json.
  double co_resident_gemm = 0.95;
  // Tensor-core kernels (TF32, FP16, BF16: DeviceSpec::precision), a "tensor_cores" object.
  TensorCoreModel tensor_cores;
};

struct Link {
  std::string kind;  // nvlink2, pcie4x16, ...
  double gbps_per_direction = 0;
  // One transfer's fixed cost (driver, DMA set-up): the file's latency_us, else 2 us for
  // NVLink and 5 us for PCIe (typical cudaMemcpyPeerAsync figures; calibrate on a real pair).
  double latency_us = 0;
};

struct DeviceSpec {
  std::string name, title, architecture, source;
  int sms = 0;
  double clock_mhz = 0;
  double peak_fp32_tflops = 0;
  double peak_tensor_fp16_tflops = 0;  // dense, FP32 accumulation; 0: no tensor cores
  double peak_tensor_tf32_tflops = 0;  // dense; 0: none (the file's, optional)
  double peak_tensor_bf16_tflops = 0;  // dense, FP32 accumulation; 0: none (optional)
  double dram_gbps = 0;
  long long l2_bytes = 0;
  SmLimits per_sm;
  HostCosts host;
  int max_resident_grids = 0;  // kernels resident at once (CUDA guide, per compute capability)
  int hardware_queues = 0;     // Hyper-Q connections
  std::vector<Link> links;

  // The fraction of the FP32 peak the SM sustains on real kernels' instruction mix: 0.5 on
  // GA10x (RTX 30xx, A40), whose second FP32 datapath is shared with INT32 (NVIDIA GA102
  // whitepaper), so address arithmetic takes half the doubled peak; 1 elsewhere (the file's
  // sustained_fp32_fraction, default 1).
  double sustained_fp32_fraction = 1;
  KernelModel kernel_model;
  // What simulated plans compute in (with_precision): GEMM kernels (convolutions, MatMul,
  // Gemm) on the tensor-core peak of that type, every tensor in its bytes. The tiles stay those
  // fitted to FP32; their efficiency and the convolutions' layout conversions are
  // KernelModel::tensor_cores where the device file fits them (docs/simulator.md).
  Precision precision = Precision::kFp32;

  double peak_fp32_flops() const { return peak_fp32_tflops * 1e12; }
  double sustained_fp32_flops() const { return peak_fp32_flops() * sustained_fp32_fraction; }
  double dram_bytes_per_s() const { return dram_gbps * 1e9; }
  // Sustained FP32 FLOPs per tensor-core FLOP of `precision` (1 in FP32): a GEMM kernel's work
  // is scaled by it, so the engine's FP32 issue model prices it at the datasheet's peak ratio.
  double gemm_flop_scale() const;
  // Bytes of a stored element over FP32's: 0.5 for FP16/BF16.
  double element_bytes_scale() const { return storage_bytes(precision) / 4.0; }
};

// `spec` computing in `p`; kUnsupported naming the device file's missing field when the device
// has no tensor-core peak for it (V100: no TF32 or BF16).
DeviceSpec with_precision(DeviceSpec spec, Precision p);

// The directory device names resolve in.
std::filesystem::path devices_dir();
// The devices in devices_dir(), sorted.
std::vector<std::string> device_names();
// `name_or_path`: a name in devices_dir() ("v100") or a path to a .json file.
DeviceSpec load_device(const std::string& name_or_path);
// A device file's text; `where` names it in errors. kInvalidArgument for what is not a valid
// braid.device/1 file (the message names the field).
DeviceSpec parse_device(std::string_view text, const std::string& where);

// The revision of the simulator's built-in constants (kernels.cc's tiles, KernelModel's
// defaults): part of what auto's cached decisions on a sim device are keyed by, beside the
// device file, so a refit (2: the 2026-11-29 calibration split) decides afresh.
inline constexpr int kModelRevision = 2;

// The file load_device reads (kNotFound for an unknown name).
std::filesystem::path device_path(const std::string& name_or_path);

// A device set "NAMExM" (HIOS's "2 x A40": "a40x2"): the device and the count; a device's own
// name (rtx3080) or a .json path is a set of one. load_device("a40x2") loads a40. Throws
// kInvalidArgument for a count M beyond 1..kMaxDeviceSetCount.
inline constexpr int kMaxDeviceSetCount = 64;
std::pair<std::string, int> parse_device_set(const std::string& spec);

}  // namespace braid::sim
