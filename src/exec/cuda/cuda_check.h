// BRAID_CU: one check for every CUDA, cuDNN and cuBLAS call of the CUDA backend. A failed call
// throws braid::Error(kInternal) naming the call and the library's own message.
//
//   BRAID_CU(cudaStreamSynchronize(stream));
//   BRAID_CU(cudnnSetStream(handle, stream));
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include "base/error.h"

namespace braid::exec::cuda {

inline void check(cudaError_t e, const char* call) {
  BRAID_CHECK(e == cudaSuccess, ErrorCode::kInternal, "CUDA: ", call, ": ", cudaGetErrorString(e));
}
inline void check(cudnnStatus_t s, const char* call) {
  BRAID_CHECK(s == CUDNN_STATUS_SUCCESS, ErrorCode::kInternal, "cuDNN: ", call, ": ",
              cudnnGetErrorString(s));
}
inline void check(cublasStatus_t s, const char* call) {
  BRAID_CHECK(s == CUBLAS_STATUS_SUCCESS, ErrorCode::kInternal, "cuBLAS: ", call, ": ",
              cublasGetStatusString(s));
}

}  // namespace braid::exec::cuda

#define BRAID_CU(call) ::braid::exec::cuda::check((call), #call)
