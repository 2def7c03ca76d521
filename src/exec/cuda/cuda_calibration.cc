#include "exec/cuda/cuda_calibration.h"

#include <algorithm>
#include <chrono>
#include <functional>

#include "base/error.h"
#include "exec/cuda/cuda_check.h"
#include "exec/cuda/cuda_executor.h"
#include "exec/cuda/cuda_kernels.h"
#include "exec/cuda/cuda_request.h"

namespace braid::exec {
namespace {

using Clock = std::chrono::steady_clock;

double us_since(Clock::time_point t) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t).count();
}

double median_of(int repeats, const std::function<double()>& once) {
  once();  // warm-up: module loading, first-launch costs
  std::vector<double> v;
  for (int i = 0; i < repeats; ++i) v.push_back(once());
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

nlohmann::json measure_cuda_calibration(int device, const std::vector<int>& counts, int repeats) {
  BRAID_CHECK(cuda_device_count() > device && device >= 0, ErrorCode::kNotFound,
              cuda_unavailable_reason().empty() ? "no CUDA device " + std::to_string(device)
                                                : cuda_unavailable_reason());
  BRAID_CU(cudaSetDevice(device));
  cudaStream_t streams[8];
  for (cudaStream_t& s : streams) BRAID_CU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t a, b, marker;
  BRAID_CU(cudaEventCreate(&a));
  BRAID_CU(cudaEventCreate(&b));
  BRAID_CU(cudaEventCreateWithFlags(&marker, cudaEventDisableTiming));
  int khz = 0;
  BRAID_CU(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, device));
  const double cycles_per_us = double(khz) / 1e3;

  nlohmann::json series = nlohmann::json::object();
  auto add = [&](const char* kind, int n, double us) {
    series[kind]["counts"].push_back(n);
    series[kind]["total_us"].push_back(us);
  };
  for (int n : counts) {
    add("eager_independent_kernels", n, median_of(repeats, [&] {
          const auto t = Clock::now();
          for (int i = 0; i < n; ++i) cuda::empty_kernels(1, streams[i % 8]);
          for (cudaStream_t s : streams) BRAID_CU(cudaStreamSynchronize(s));
          return us_since(t);
        }));
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    BRAID_CU(cudaStreamBeginCapture(streams[0], cudaStreamCaptureModeThreadLocal));
    cuda::empty_kernels(n, streams[0]);
    BRAID_CU(cudaStreamEndCapture(streams[0], &graph));
    BRAID_CU(cudaGraphInstantiate(&exec, graph, 0));
    add("graph_chain", n, median_of(repeats, [&] {
          cuda::record_timing_event(a, streams[0]);
          BRAID_CU(cudaGraphLaunch(exec, streams[0]));
          cuda::record_timing_event(b, streams[0]);
          BRAID_CU(cudaStreamSynchronize(streams[0]));
          return cuda::elapsed_us(a, b);
        }));
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    add("queued_chain", n, median_of(repeats, [&] {
          // Long enough for every launch to be queued before the spin ends.
          cuda::spin_kernel((long long)(cycles_per_us * (50.0 + 20.0 * n)), streams[0]);
          cuda::record_timing_event(a, streams[0]);
          cuda::empty_kernels(n, streams[0]);
          cuda::record_timing_event(b, streams[0]);
          BRAID_CU(cudaStreamSynchronize(streams[0]));
          return cuda::elapsed_us(a, b);
        }));
    add("event_records", n, median_of(repeats, [&] {
          const auto t = Clock::now();
          for (int i = 0; i < n; ++i) BRAID_CU(cudaEventRecord(marker, streams[0]));
          const double us = us_since(t);
          BRAID_CU(cudaStreamSynchronize(streams[0]));
          return us;
        }));
    add("event_waits", n, median_of(repeats, [&] {
          BRAID_CU(cudaEventRecord(marker, streams[0]));
          const auto t = Clock::now();
          for (int i = 0; i < n; ++i) BRAID_CU(cudaStreamWaitEvent(streams[1], marker, 0));
          const double us = us_since(t);
          BRAID_CU(cudaStreamSynchronize(streams[1]));
          return us;
        }));
  }
  for (cudaStream_t s : streams) cudaStreamDestroy(s);
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  cudaEventDestroy(marker);
  return {{"format", "braid.calibration/1"},
          {"device", cuda_device_description(device)},
          {"series", series}};
}

}  // namespace braid::exec
