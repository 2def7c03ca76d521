// Internal to the CUDA compiler's files (cuda_compiler.cc, cuda_compile_conv.cc,
// cuda_compile_ops.cc): the small helpers more than one of them uses.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "exec/cuda/cuda_check.h"
#include "exec/cuda/cuda_kernels.h"
#include "exec/cuda/gemm_plan.h"
#include "ir/graph.h"

namespace braid::exec::cuda {

// `shape` as a row-major strided view (a scalar as one element).
Strided row_major(const ir::Shape& shape);
// `shape` read over `out`'s dims with numpy broadcasting (size-1 and missing dims stride 0).
Strided broadcast_to(const ir::Shape& shape, const ir::Shape& out);
// A negative axis counted from the end.
int64_t normalize(int64_t axis, size_t rank);
// A constant tensor uploaded once (weights, folded weights, biases).
DeviceBuffer upload(std::span<const float> data);
// `data` stored as `as` (converted on the host: element_type), and back: `n` values of type
// `as` at device address `p` as floats (synchronous copies, for prepare).
DeviceBuffer upload_as(std::span<const float> data, Elem as);
std::vector<float> download_as(const std::byte* p, int64_t n, Elem as);
// Whether a call tried at prepare (`accepted`: it returned success) also ran on the device. A
// refusal or a failed launch is cleared from the runtime's last error, so the next call does not
// inherit it; a fault that poisons the context stays, and the next CUDA call reports it.
bool ran_on_device(bool accepted);
template <typename T>
DeviceBuffer upload_array(const std::vector<T>& data) {
  DeviceBuffer b(data.size() * sizeof(T));
  if (!data.empty())
    BRAID_CU(cudaMemcpy(b.get(), data.data(), data.size() * sizeof(T), cudaMemcpyHostToDevice));
  return b;
}

}  // namespace braid::exec::cuda
