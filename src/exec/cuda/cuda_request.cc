#include "exec/cuda/cuda_request.h"

#include <algorithm>
#include <mutex>

namespace braid::exec::cuda {

CudaRequest::CudaRequest(const RequestLayout& layout)
    : device(layout.device),
      scratch_bytes_((std::max<int64_t>(layout.scratch_bytes, 256) + 255) / 256 * 256),
      precision_(layout.precision) {
  BRAID_CU(cudaSetDevice(device));
  arena = DeviceBuffer(size_t(std::max<Bytes>(layout.arena_bytes, 256)));
  if (layout.staging_bytes > 0) staging = DeviceBuffer(size_t(layout.staging_bytes));
  BRAID_CU(cudaStreamCreateWithFlags(&main, cudaStreamNonBlocking));
  BRAID_CU(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  BRAID_CU(cudaEventCreate(&started));
  BRAID_CU(cudaEventCreate(&finished));
  add_lanes(layout.num_lanes);
  for (uint32_t e = 0; e < layout.num_events; ++e) {
    cudaEvent_t ev;
    BRAID_CU(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    events.push_back(ev);
  }
  for (Bytes bytes : layout.pinned_bytes) {
    void* p = nullptr;
    BRAID_CU(cudaMallocHost(&p, size_t(std::max<Bytes>(bytes, 4))));
    pinned.push_back(static_cast<float*>(p));
  }
  given.assign(layout.num_inputs, Elem::kF32);
  widened.resize(layout.pinned_bytes.size() -
                 std::min(layout.num_inputs, layout.pinned_bytes.size()));
}

void CudaRequest::add_lanes(size_t n) {
  BRAID_CU(cudaSetDevice(device));
  while (lanes.size() < n) {
    LaneContext l;
    lane_workspaces.emplace_back(size_t(scratch_bytes_ + kCublasWorkspace));
    l.workspace = lane_workspaces.back().get();
    l.cublas_workspace = l.workspace + scratch_bytes_;
    BRAID_CU(cudaStreamCreateWithFlags(&l.stream, cudaStreamNonBlocking));
    lanes.push_back(l);  // owned from here: the destructor releases what was made
    LaneContext& owned = lanes.back();
    BRAID_CU(cudnnCreate(&owned.cudnn));
    BRAID_CU(cudnnSetStream(owned.cudnn, owned.stream));
    BRAID_CU(cublasCreate(&owned.cublas));
    BRAID_CU(cublasSetStream(owned.cublas, owned.stream));
    BRAID_CU(cublasSetMathMode(owned.cublas, precision_ == Precision::kTf32
                                                 ? CUBLAS_TF32_TENSOR_OP_MATH
                                                 : CUBLAS_DEFAULT_MATH));
    // Set explicitly so that cuBLAS never allocates during a capture (cuBLAS docs, CUDA Graphs).
    BRAID_CU(cublasSetWorkspace(owned.cublas, owned.cublas_workspace, kCublasWorkspace));
    cudaEvent_t join;
    BRAID_CU(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
    joins.push_back(join);
  }
}

void CudaRequest::clear_graphs() {
  for (auto& [range, exec] : graphs) cudaGraphExecDestroy(exec);
  graphs.clear();
}

CudaRequest::~CudaRequest() {
  std::unique_lock lock(device_sync_mutex());  // cudnnDestroy and cudaFree may sync the device
  cudaSetDevice(device);
  if (main != nullptr) cudaStreamSynchronize(main);
  clear_graphs();
  for (LaneContext& l : lanes) {
    if (l.cudnn != nullptr) cudnnDestroy(l.cudnn);
    if (l.cublas != nullptr) cublasDestroy(l.cublas);
    if (l.stream != nullptr) cudaStreamDestroy(l.stream);
  }
  for (cudaEvent_t e : events) cudaEventDestroy(e);
  for (cudaEvent_t e : joins) cudaEventDestroy(e);
  if (fork != nullptr) cudaEventDestroy(fork);
  if (started != nullptr) cudaEventDestroy(started);
  if (finished != nullptr) cudaEventDestroy(finished);
  if (main != nullptr) cudaStreamDestroy(main);
  for (float* p : pinned) cudaFreeHost(p);
  for (auto [b, e] : timing) {
    cudaEventDestroy(b);
    cudaEventDestroy(e);
  }
}

std::pair<cudaEvent_t, cudaEvent_t> CudaRequest::unit_timing_events(size_t unit) {
  if (timing.size() <= unit) timing.resize(unit + 1, {nullptr, nullptr});
  auto& [b, e] = timing[unit];
  if (b == nullptr) {
    BRAID_CU(cudaEventCreate(&b));
    BRAID_CU(cudaEventCreate(&e));
  }
  return timing[unit];
}

void record_timing_event(cudaEvent_t event, cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  BRAID_CU(cudaStreamIsCapturing(stream, &status));
  BRAID_ASSERT(status == cudaStreamCaptureStatusNone,
               "cuda: a timing event recorded inside a stream capture");
  BRAID_CU(cudaEventRecord(event, stream));
}

double elapsed_us(cudaEvent_t from, cudaEvent_t to) {
  float ms = 0;
  BRAID_CU(cudaEventElapsedTime(&ms, from, to));
  return double(ms) * 1e3;
}

}  // namespace braid::exec::cuda
