// One inference's device state for the CUDA executor: its activation arena, a stream with its own
// cuDNN/cuBLAS handles and workspace per lane, the plan's events, the fork/join and timing events,
// pinned input/output buffers, and the CUDA Graphs captured for it, one per block range. Made by
// CudaPrepared::new_request; the stage timer (cuda_stage_timer.h) keeps one of its own.
#pragma once

#include <map>
#include <optional>
#include <span>
#include <tuple>
#include <utility>
#include <vector>

#include "base/units.h"
#include "exec/cuda/cuda_compiler.h"
#include "exec/cuda/issue_program.h"
#include "exec/executor.h"

namespace braid::exec::cuda {

struct RequestLayout {
  int device = 0;
  Bytes arena_bytes = 0;
  int64_t scratch_bytes = 0;  // per lane: Compiler::scratch_bytes()
  size_t num_lanes = 0;
  uint32_t num_events = 0;
  Precision precision = Precision::kFp32;  // kTf32: cuBLAS handles in TF32 tensor-op math
  std::vector<Bytes> pinned_bytes;         // graph inputs, then graph outputs
  size_t num_inputs = 0;                   // of pinned_bytes, the graph inputs
  // Inputs and outputs given or taken in a type other than their storage pass through here,
  // converted on the device.
  Bytes staging_bytes = 0;
};

class CudaRequest final : public Request {
 public:
  explicit CudaRequest(const RequestLayout& layout);
  ~CudaRequest() override;
  CudaRequest(const CudaRequest&) = delete;
  CudaRequest& operator=(const CudaRequest&) = delete;

  // Grows the request to `n` lanes (a stream, handles and a workspace each); never shrinks.
  void add_lanes(size_t n);
  // Two timing events for `unit`, made on first use.
  std::pair<cudaEvent_t, cudaEvent_t> unit_timing_events(size_t unit);
  // Drops the captured graphs (their instantiations are destroyed).
  void clear_graphs();

  int device = 0;
  DeviceBuffer arena;
  std::vector<LaneContext> lanes;
  std::vector<DeviceBuffer> lane_workspaces;
  std::vector<cudaEvent_t> events, joins;  // the plan's events; one join per lane
  cudaEvent_t fork = nullptr;
  cudaEvent_t started = nullptr, finished = nullptr;  // timing: around the run, never captured
  cudaStream_t main = nullptr;
  std::vector<std::pair<cudaEvent_t, cudaEvent_t>> timing;  // per unit, when observed
  std::vector<std::tuple<size_t, UnitId, cudaEvent_t, cudaEvent_t>> unit_events;  // last run
  // Graph inputs, then graph outputs, each sized for its elements as floats: an input holds
  // what set_input or set_input_bytes gave it (`given`), an output what the device wrote.
  std::vector<float*> pinned;
  std::vector<Elem> given;  // per graph input: how its pinned buffer holds it (kF32 at first)
  // Per graph output exchanged in 16 bits: its values widened to floats when output() asks.
  mutable std::vector<std::vector<float>> widened;
  DeviceBuffer staging;                          // RequestLayout::staging_bytes
  std::map<BlockRange, cudaGraphExec_t> graphs;  // captured on a range's first replayed run

 private:
  int64_t scratch_bytes_ = 0;
  Precision precision_ = Precision::kFp32;
};

// Records a timing event. Timing events recorded inside a stream capture become graph nodes that
// cudaEventElapsedTime rejects (issue_program.h): a bug, so asserted.
void record_timing_event(cudaEvent_t event, cudaStream_t stream);
// Microseconds between two completed timing events.
double elapsed_us(cudaEvent_t from, cudaEvent_t to);

}  // namespace braid::exec::cuda
