// The CUDA executor, `--device cuda:N` (issue 6): the backend the papers run on. A lane is a
// CUDA stream, a plan event a cudaEvent, and a compiled plan replays as launches in the plan's
// issue order (sched::issue_order), by default captured once into a CUDA Graph per block range
// and replayed (Opara's graph capturer); issue_program.h is the command sequence of one run.
//
//   if (exec::cuda_device_count() == 0) ...             // no GPU: tests skip
//   auto cuda = exec::make_cuda_executor({.device = 0});   // .graph = false: eager
//   auto model = cuda->prepare({graph, weights, &units, &plan});   // weights uploaded once
//   auto request = model->new_request();                // arena, streams, events, pinned I/O
//   model->set_input(*request, 0, x);  model->run(*request);  model->output(*request, 0);
//
// Kernels: convolutions through cuDNN (BatchNormalization folded into the weights at prepare
// time; bias and ReLU fused by cudnnConvolutionBiasActivationForward; in FP16/BF16 each in the
// layout it measured faster in, conv_layout.h), MatMul and Gemm through
// cuBLASLt (cuBLAS where its heuristic offers no algorithm), softmax through cuDNN, and our own
// kernels (cuda_kernels.cu) for element-wise ops, pooling (any padding and ceil mode, which cuDNN's
// symmetric descriptors cannot express), concat, split, transpose, pad, layer normalization and
// LRN. Activation memory is planned once (exec/memory_plan.h) and allocated once per request;
// inputs and outputs go through pinned host buffers (an FP16 model's float16 ones as they are).
// Built only with BRAID_WITH_CUDA; elsewhere make_cuda_executor throws.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "base/error.h"
#include "base/precision.h"
#include "exec/cuda/conv_layout.h"
#include "exec/executor.h"
#include "ir/op.h"

namespace braid::exec {

struct CudaExecutorOptions {
  int device = 0;
  // Replay CUDA Graphs (the default): each block range a request runs is captured into a graph
  // on its first run and replayed after. False: eager, one host thread issuing every launch and
  // event each run, the slow path (issue 14: 1.7-10x slower on an H100). Runs with a RunObserver
  // (per-unit times) always go eagerly.
  bool graph = true;
  // What the plan computes in (base/precision.h). kFp32 (the default): FP32 FMA math, so outputs
  // compare with the CPU executor at 1e-3. kTf32: cuDNN convolutions (CUDNN_DEFAULT_MATH) and
  // GEMMs (cuBLASLt's CUBLAS_COMPUTE_32F_FAST_TF32, cuBLAS's CUBLAS_TF32_TENSOR_OP_MATH) on TF32
  // tensor cores. kFp16/kBf16: weights
  // converted once at prepare, activations stored in 16 bits, tensor-core convolutions and
  // GEMMs accumulating in FP32, our kernels computing in FP32. Inputs and outputs cross the
  // interface as floats, or in float16/bfloat16 where the bundle says the caller exchanges them
  // so (ModelBundle::input_types, set_input_bytes, output_bytes): bytes copied as they are when
  // the plan stores that type, converted by a kernel on the device when it stores another.
  Precision precision = Precision::kFp32;
  // Largest cuDNN workspace a convolution may use (per lane: lanes run convs concurrently).
  int64_t workspace_bytes = 64 << 20;
  // Choose each convolution's cuDNN algorithm by timing every candidate at prepare
  // (cudnnFindConvolutionForwardAlgorithmEx, as PyTorch's cudnn.benchmark does) instead of the
  // heuristic's first that fits (cudnnGetConvolutionForwardAlgorithm_v7). Prepare takes longer.
  bool measure_conv_algos = false;
  // The layout of each convolution in FP16/BF16 plans (conv_layout.h): by default each is timed
  // NCHW and NHWC at prepare (and its algorithm chosen by measurement, as measure_conv_algos
  // does), and runs in the faster counting the layout transforms at its boundaries; kNchw and
  // kNhwc force one. FP32 and TF32 plans run NCHW.
  cuda::ConvLayoutMode conv_layout = cuda::ConvLayoutMode::kMeasure;
  // A Concat whose inputs can all lie in their windows of its output (batch 1 along channels, as
  // Inception's and SqueezeNet's blocks, each window 256-byte aligned) copies nothing: their
  // producers write there (MemoryPlanOptions::concat_in_place). false: every Concat copies.
  bool concat_in_place = true;
};

// Whether the CUDA executor has kernels for `kind` (on float tensors; CudaExecutor::supports adds
// the rank limits of a few), in every build: `braid ops --device cuda:N` lists it. Every kind is
// named, so a new op must be decided here (-Wswitch).
constexpr bool cuda_runs(ir::OpKind kind) {
  switch (kind) {
    case ir::OpKind::Conv:
    case ir::OpKind::Relu:
    case ir::OpKind::Sigmoid:
    case ir::OpKind::Tanh:
    case ir::OpKind::Gelu:
    case ir::OpKind::Clip:
    case ir::OpKind::HardSigmoid:
    case ir::OpKind::HardSwish:
    case ir::OpKind::ReduceMean:
    case ir::OpKind::MaxPool:
    case ir::OpKind::AveragePool:
    case ir::OpKind::GlobalAveragePool:
    case ir::OpKind::Concat:
    case ir::OpKind::Add:
    case ir::OpKind::Mul:
    case ir::OpKind::Sum:
    case ir::OpKind::MatMul:
    case ir::OpKind::Gemm:
    case ir::OpKind::BatchNormalization:
    case ir::OpKind::Softmax:
    case ir::OpKind::LayerNormalization:
    case ir::OpKind::Reshape:
    case ir::OpKind::Flatten:
    case ir::OpKind::Transpose:
    case ir::OpKind::Split:
    case ir::OpKind::Identity:
    case ir::OpKind::Pad:
    case ir::OpKind::Erf:
    case ir::OpKind::Sub:
    case ir::OpKind::Div:
    case ir::OpKind::Pow:
    case ir::OpKind::Sqrt:
    case ir::OpKind::ConvTranspose:
    case ir::OpKind::Resize:
    case ir::OpKind::Where:
    case ir::OpKind::Expand:
    case ir::OpKind::Gather:
    case ir::OpKind::Cast:
    case ir::OpKind::Equal:
    case ir::OpKind::Not:
    case ir::OpKind::Slice:
    case ir::OpKind::LRN:
      return true;
  }
  return false;
}

// The kinds the CUDA executor runs on int64 and bool tensors as well as float ones: copies,
// conversions and index ops (exact for every element type). The others compute in float on
// float tensors only.
constexpr bool cuda_moves_any_dtype(ir::OpKind kind) {
  switch (kind) {
    case ir::OpKind::Reshape:
    case ir::OpKind::Flatten:
    case ir::OpKind::Identity:
    case ir::OpKind::Concat:
    case ir::OpKind::Split:
    case ir::OpKind::Transpose:
    case ir::OpKind::Where:
    case ir::OpKind::Expand:
    case ir::OpKind::Gather:
    case ir::OpKind::Cast:
    case ir::OpKind::Equal:
    case ir::OpKind::Not:
    case ir::OpKind::Slice:
      return true;
    default:
      return false;
  }
}

// The number of CUDA devices usable here: 0 without a GPU, a driver, or a CUDA build.
int cuda_device_count();
// "no CUDA device (...why...)" when cuda_device_count() is 0; empty otherwise.
std::string cuda_unavailable_reason();
// Throws braid::Error(kNotFound): cuda_unavailable_reason() without a GPU, "no CUDA device N
// (M visible)" when `device` is not one of them. Every entry point that takes a device asks it.
inline void check_cuda_device(int device) {
  const int n = cuda_device_count();
  if (n == 0) BRAID_THROW(ErrorCode::kNotFound, cuda_unavailable_reason());
  BRAID_CHECK(device >= 0 && device < n, ErrorCode::kNotFound, "no CUDA device ", device, " (", n,
              " visible)");
}

// Throws braid::Error(kNotFound) "no CUDA device" when options.device does not exist.
std::unique_ptr<Executor> make_cuda_executor(const CudaExecutorOptions& options = {});

// "NVIDIA H100 80GB HBM3, cc 9.0, 132 SMs, driver 13000": what a GPU profile is keyed by.
std::string cuda_device_description(int device);
// The device's L2 cache size in bytes (50 MiB on an H100 SXM); 0 without CUDA.
int64_t cuda_l2_cache_bytes(int device);

}  // namespace braid::exec
