// make_cuda_executor in a build without CUDA (BRAID_WITH_CUDA off or no toolkit found).
#include "base/error.h"
#include "exec/cuda/cuda_calibration.h"
#include "exec/cuda/cuda_executor.h"
#include "exec/cuda/cuda_kernel_census.h"
#include "exec/cuda/cuda_stage_timer.h"

namespace braid::exec {

int cuda_device_count() {
  return 0;
}

std::string cuda_unavailable_reason() {
  return "no CUDA device (braid was built without CUDA: configure with -DBRAID_WITH_CUDA=ON "
         "where nvcc and cuDNN are installed)";
}

std::unique_ptr<Executor> make_cuda_executor(const CudaExecutorOptions&) {
  BRAID_THROW(ErrorCode::kNotFound, cuda_unavailable_reason());
}

std::string cuda_device_description(int) {
  return "none";
}

int64_t cuda_l2_cache_bytes(int) {
  return 0;
}

nlohmann::json measure_cuda_calibration(int, const std::vector<int>&, int) {
  BRAID_THROW(ErrorCode::kNotFound, cuda_unavailable_reason());
}

CudaDeviceFigures cuda_device_figures(int) {
  BRAID_THROW(ErrorCode::kNotFound, cuda_unavailable_reason());
}

std::unique_ptr<CudaStageTimer> make_cuda_stage_timer(const ir::UnitGraph&,
                                                      std::shared_ptr<const ir::Weights>, int,
                                                      uint64_t, Precision) {
  BRAID_THROW(ErrorCode::kNotFound, cuda_unavailable_reason());
}

}  // namespace braid::exec
