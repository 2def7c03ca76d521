#include "exec/cuda/cuda_kernel_census.h"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <map>
#include <set>

#include "exec/cuda/cuda_check.h"

namespace braid::exec {
namespace {

// The driver's functions, looked up once through the runtime (cudaGetDriverEntryPointByVersion)
// rather than by linking libcuda: the runtime braid links already loads the driver, the build
// machines have only libcuda's stub, and asking for CUDA 12.0's versions pins the layout of
// CUDA_KERNEL_NODE_PARAMS_v2 (func, or kern for a context-free CUkernel) compiled here.
struct Driver {
  PFN_cuGraphKernelNodeGetParams_v12000 kernel_node_params = nullptr;
  PFN_cuKernelGetFunction_v12000 kernel_function = nullptr;
  PFN_cuFuncGetAttribute_v2020 function_attribute = nullptr;
  PFN_cuOccupancyMaxActiveBlocksPerMultiprocessor_v6050 occupancy = nullptr;
  PFN_cuFuncGetName_v12030 function_name = nullptr;  // optional (drivers >= 12.3): for reports
  bool complete() const {
    return kernel_node_params != nullptr && kernel_function != nullptr &&
           function_attribute != nullptr && occupancy != nullptr;
  }
};

// A failed runtime call that only asks is no error of the caller's: it is cleared from the
// runtime's last error (the kernels' launchers check cudaGetLastError).
bool succeeded(cudaError_t e) {
  if (e == cudaSuccess) return true;
  cudaGetLastError();
  return false;
}

template <typename Function>
void look_up(const char* symbol, unsigned int cuda_version, Function& f) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  if (succeeded(
          cudaGetDriverEntryPointByVersion(symbol, &p, cuda_version, cudaEnableDefault, &found)) &&
      found == cudaDriverEntryPointSuccess)
    f = reinterpret_cast<Function>(p);
}

const Driver& driver() {
  static const Driver d = [] {
    Driver d;
    look_up("cuGraphKernelNodeGetParams", 12000, d.kernel_node_params);
    look_up("cuKernelGetFunction", 12000, d.kernel_function);
    look_up("cuFuncGetAttribute", 2020, d.function_attribute);
    look_up("cuOccupancyMaxActiveBlocksPerMultiprocessor", 6050, d.occupancy);
    look_up("cuFuncGetName", 12030, d.function_name);
    return d;
  }();
  return d;
}

// The graph's nodes in a topological order, ties in the order cudaGraphGetNodes lists them (the
// order they were captured in): one stream's capture is a chain, so this is its launch order.
std::optional<std::vector<cudaGraphNode_t>> launch_order(cudaGraph_t graph) {
  size_t n = 0;
  if (!succeeded(cudaGraphGetNodes(graph, nullptr, &n))) return std::nullopt;
  std::vector<cudaGraphNode_t> nodes(n);
  if (n > 0 && !succeeded(cudaGraphGetNodes(graph, nodes.data(), &n))) return std::nullopt;
  std::map<cudaGraphNode_t, size_t> position;
  for (size_t i = 0; i < n; ++i) position[nodes[i]] = i;
  std::vector<size_t> waiting(n);
  std::vector<std::vector<size_t>> dependents(n);
  for (size_t i = 0; i < n; ++i) {
    size_t count = 0;
    if (!succeeded(cudaGraphNodeGetDependentNodes(nodes[i], nullptr, nullptr, &count)))
      return std::nullopt;
    // Edge data asked for too: programmatic (non-default) edges would otherwise fail the query.
    std::vector<cudaGraphNode_t> next(count);
    std::vector<cudaGraphEdgeData> edges(count);
    if (count > 0 &&
        !succeeded(cudaGraphNodeGetDependentNodes(nodes[i], next.data(), edges.data(), &count)))
      return std::nullopt;
    for (size_t k = 0; k < count; ++k) {
      const auto it = position.find(next[k]);
      if (it == position.end()) return std::nullopt;
      dependents[i].push_back(it->second);
      ++waiting[it->second];
    }
  }
  std::set<size_t> ready;
  for (size_t i = 0; i < n; ++i)
    if (waiting[i] == 0) ready.insert(i);
  std::vector<cudaGraphNode_t> order;
  while (!ready.empty()) {
    const size_t i = *ready.begin();
    ready.erase(ready.begin());
    order.push_back(nodes[i]);
    for (size_t j : dependents[i])
      if (--waiting[j] == 0) ready.insert(j);
  }
  if (order.size() != n) return std::nullopt;
  return order;
}

std::optional<LaunchedKernel> read_kernel(cudaGraphNode_t node, const Driver& d) {
  CUDA_KERNEL_NODE_PARAMS_v2 p{};
  if (d.kernel_node_params(node, &p) != CUDA_SUCCESS) return std::nullopt;
  CUfunction f = p.func;  // null where the node holds a CUkernel: its function in this context
  if (f == nullptr && (p.kern == nullptr || d.kernel_function(&f, p.kern) != CUDA_SUCCESS))
    return std::nullopt;
  LaunchedKernel k;
  k.blocks = int64_t(p.gridDimX) * p.gridDimY * p.gridDimZ;
  k.threads = int64_t(p.blockDimX) * p.blockDimY * p.blockDimZ;
  int registers = 0, static_shared = 0, resident = 0;
  if (d.function_attribute(&registers, CU_FUNC_ATTRIBUTE_NUM_REGS, f) != CUDA_SUCCESS ||
      d.function_attribute(&static_shared, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f) !=
          CUDA_SUCCESS ||
      d.occupancy(&resident, f, int(k.threads), p.sharedMemBytes) != CUDA_SUCCESS)
    return std::nullopt;
  k.registers = registers;
  k.shared_memory = int64_t(static_shared) + p.sharedMemBytes;
  k.blocks_per_sm = resident;
  const char* name = nullptr;
  if (d.function_name != nullptr && d.function_name(&name, f) == CUDA_SUCCESS && name != nullptr)
    k.name = name;
  return k;
}

// Appends the kernels of `graph` (and of its child graphs, in place) in launch order.
bool append_kernels(cudaGraph_t graph, const Driver& d, std::vector<LaunchedKernel>& out) {
  const std::optional<std::vector<cudaGraphNode_t>> order = launch_order(graph);
  if (!order) return false;
  for (cudaGraphNode_t node : *order) {
    cudaGraphNodeType type{};
    if (!succeeded(cudaGraphNodeGetType(node, &type))) return false;
    if (type == cudaGraphNodeTypeGraph) {
      cudaGraph_t child = nullptr;
      if (!succeeded(cudaGraphChildGraphNodeGetGraph(node, &child)) ||
          !append_kernels(child, d, out))
        return false;
    } else if (type == cudaGraphNodeTypeKernel) {
      std::optional<LaunchedKernel> k = read_kernel(node, d);
      if (!k) return false;
      out.push_back(std::move(*k));
    }
  }
  return true;
}

// FP32 lanes an SM sustains, by compute capability: the CUDA C Programming Guide's throughput
// table (32-bit add, multiply, multiply-add per clock per SM: 64 on 6.0, 7.x and 8.0, 128
// elsewhere), except GA10x/AD10x (8.6, 8.7, 8.9), whose second FP32 datapath is shared with
// INT32: half of it, as devices/a40.json's and rtx3080.json's sustained_fp32_fraction = 0.5 say.
int fp32_lanes_per_sm(int major, int minor) {
  if ((major == 6 && minor == 0) || major == 7) return 64;
  if (major == 8) return 64;  // 8.0; 8.6, 8.7, 8.9: 128 at peak, 64 sustained (above)
  return 128;
}

}  // namespace

CudaDeviceFigures cuda_device_figures(int device) {
  int sms = 0, threads_per_sm = 0, warp = 0, clock_khz = 0, memory_khz = 0, bus_bits = 0;
  int major = 0, minor = 0;
  BRAID_CU(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  BRAID_CU(cudaDeviceGetAttribute(&threads_per_sm, cudaDevAttrMaxThreadsPerMultiProcessor, device));
  BRAID_CU(cudaDeviceGetAttribute(&warp, cudaDevAttrWarpSize, device));
  BRAID_CU(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device));
  BRAID_CU(cudaDeviceGetAttribute(&memory_khz, cudaDevAttrMemoryClockRate, device));
  BRAID_CU(cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, device));
  BRAID_CU(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  BRAID_CU(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  CudaDeviceFigures f;
  f.sms = sms;
  f.max_warps_per_sm = warp > 0 ? threads_per_sm / warp : 0;
  // An FMA is 2 FLOPs; the peak clock (an H100 SXM: 132 x 128 x 2 x 1.98 GHz = 66.9 TFLOP/s,
  // devices/h100.json's peak).
  f.fp32_flops = double(sms) * fp32_lanes_per_sm(major, minor) * 2.0 * clock_khz * 1e3;
  // Double data rate: two transfers a memory clock (an H100 SXM: 2 x 2.619 GHz x 5120 bits / 8
  // = 3.35 TB/s, devices/h100.json's dram_gbps).
  f.dram_bytes_per_s = 2.0 * memory_khz * 1e3 * bus_bits / 8.0;
  return f;
}

std::optional<std::vector<LaunchedKernel>> capture_kernels(CUstream_st* stream,
                                                           const std::function<void()>& issue) {
  const Driver& d = driver();
  if (!d.complete()) return std::nullopt;
  BRAID_CU(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  cudaGraph_t graph = nullptr;
  try {
    issue();
  } catch (...) {
    cudaStreamEndCapture(stream, &graph);
    if (graph != nullptr) cudaGraphDestroy(graph);
    throw;
  }
  BRAID_CU(cudaStreamEndCapture(stream, &graph));
  std::vector<LaunchedKernel> kernels;
  const bool read = append_kernels(graph, d, kernels);
  cudaGraphDestroy(graph);
  if (!read) return std::nullopt;
  return kernels;
}

}  // namespace braid::exec
