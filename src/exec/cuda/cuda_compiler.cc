#include "exec/cuda/cuda_compiler.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <variant>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "exec/cuda/cuda_compiler_impl.h"
#include "exec/cuda/cuda_kernels.h"
#include "ir/resize.h"
#include "ir/shape_inference.h"

namespace braid::exec::cuda {

Strided row_major(const ir::Shape& shape) {
  Strided s;
  s.rank = int(shape.size());
  BRAID_CHECK(s.rank <= cuda::kMaxRank, ErrorCode::kUnsupported, "cuda: rank ", s.rank,
              " tensors (at most ", cuda::kMaxRank, ")");
  int64_t stride = 1;
  for (int d = s.rank - 1; d >= 0; --d) {
    s.dims[d] = shape[d];
    s.strides[d] = stride;
    stride *= shape[d];
  }
  if (s.rank == 0) {  // a scalar: one element
    s.rank = 1;
    s.dims[0] = 1;
    s.strides[0] = 1;
  }
  return s;
}

// `shape` read over `out`'s dims with numpy broadcasting (size-1 and missing dims stride 0).
Strided broadcast_to(const ir::Shape& shape, const ir::Shape& out) {
  Strided s = row_major(out);
  const Strided own = row_major(shape);
  const int shift = int(out.size()) - int(shape.size());
  for (int d = 0; d < s.rank; ++d) {
    const int from = d - shift;
    s.strides[d] = from < 0 || shape.empty() || shape[from] == 1 ? 0 : own.strides[from];
  }
  return s;
}

int64_t normalize(int64_t axis, size_t rank) {
  return axis < 0 ? axis + int64_t(rank) : axis;
}

// A constant tensor uploaded once (weights, folded weights, biases).
DeviceBuffer upload(std::span<const float> data) {
  DeviceBuffer b(data.size_bytes());
  if (!data.empty())
    BRAID_CU(cudaMemcpy(b.get(), data.data(), data.size_bytes(), cudaMemcpyHostToDevice));
  return b;
}

DeviceBuffer upload_as(std::span<const float> data, Elem as) {
  std::vector<std::byte> bytes(data.size() * size_t(elem_bytes(as)));
  models::store_floats(element_type(as), data, bytes.data());
  return upload_array(bytes);
}

std::vector<float> download_as(const std::byte* p, int64_t n, Elem as) {
  std::vector<std::byte> bytes(size_t(n) * size_t(elem_bytes(as)));
  BRAID_CU(cudaMemcpy(bytes.data(), p, bytes.size(), cudaMemcpyDeviceToHost));
  std::vector<float> out(static_cast<size_t>(n));
  models::load_floats(element_type(as), bytes.data(), out);
  return out;
}

bool ran_on_device(bool accepted) {
  if (accepted && cudaDeviceSynchronize() == cudaSuccess) return true;
  cudaGetLastError();
  return false;
}

cuda::UnaryOp unary_of(ir::OpKind kind, const ir::OpAttrs& attrs) {
  switch (kind) {
    case ir::OpKind::Relu:
      return cuda::Unary::kRelu;
    case ir::OpKind::Sigmoid:
      return cuda::Unary::kSigmoid;
    case ir::OpKind::Tanh:
      return cuda::Unary::kTanh;
    case ir::OpKind::Gelu:
      return std::get<ir::GeluAttrs>(attrs).tanh_approximation ? cuda::Unary::kGeluTanh
                                                               : cuda::Unary::kGelu;
    case ir::OpKind::Clip: {
      const auto& a = std::get<ir::ClipAttrs>(attrs);
      return {cuda::Unary::kClip, a.min, a.max};
    }
    case ir::OpKind::HardSigmoid: {
      const auto& a = std::get<ir::HardSigmoidAttrs>(attrs);
      return {cuda::Unary::kHardSigmoid, a.alpha, a.beta};
    }
    case ir::OpKind::HardSwish:
      return cuda::Unary::kHardSwish;
    case ir::OpKind::Erf:
      return cuda::Unary::kErf;
    case ir::OpKind::Sqrt:
      return cuda::Unary::kSqrt;
    default:
      return cuda::Unary::kCopy;
  }
}

std::optional<cuda::UnaryOp> unary_of(ir::Activation a) {
  switch (a) {
    case ir::Activation::kNone:
      return std::nullopt;
    case ir::Activation::kRelu:
      return cuda::Unary::kRelu;
    case ir::Activation::kSigmoid:
      return cuda::Unary::kSigmoid;
    case ir::Activation::kTanh:
      return cuda::Unary::kTanh;
    case ir::Activation::kGelu:
      return cuda::Unary::kGelu;
  }
  return std::nullopt;
}

Elem elem_of(Precision p) {
  switch (p) {
    case Precision::kFp16:
      return Elem::kF16;
    case Precision::kBf16:
      return Elem::kBF16;
    case Precision::kFp32:
    case Precision::kTf32:
      return Elem::kF32;
  }
  return Elem::kF32;
}
cudnnDataType_t cudnn_type(Elem e) {
  return e == Elem::kF16    ? CUDNN_DATA_HALF
         : e == Elem::kBF16 ? CUDNN_DATA_BFLOAT16
                            : CUDNN_DATA_FLOAT;
}
cudaDataType_t cuda_type(Elem e) {
  return e == Elem::kF16 ? CUDA_R_16F : e == Elem::kBF16 ? CUDA_R_16BF : CUDA_R_32F;
}

models::ElementType element_type(Elem e) {
  switch (e) {
    case Elem::kF32:
      return models::ElementType::kFloat32;
    case Elem::kF16:
      return models::ElementType::kFloat16;
    case Elem::kBF16:
      return models::ElementType::kBFloat16;
    case Elem::kI64:
      return models::ElementType::kInt64;
    case Elem::kBool:
      return models::ElementType::kBool;
  }
  return models::ElementType::kFloat32;
}

Compiler::Compiler(const ir::Graph& graph, const ir::Weights& weights, const MemoryPlan& memory,
                   const CudaExecutorOptions& options, cudnnHandle_t cudnn)
    : g_(graph),
      weights_(weights),
      memory_(memory),
      options_(options),
      cudnn_(cudnn),
      elem_(elem_of(options.precision)),
      esize_(elem_bytes(elem_)) {}
Compiler::~Compiler() {
  for (auto d : tensor_descs_) cudnnDestroyTensorDescriptor(d);
  for (auto d : filter_descs_) cudnnDestroyFilterDescriptor(d);
  for (auto d : conv_descs_) cudnnDestroyConvolutionDescriptor(d);
  for (auto d : activation_descs_) cudnnDestroyActivationDescriptor(d);
}

// The ops of one unit, in order (fusing a Conv with its BatchNormalization and ReLU, a GEMM
// with its bias and activation).
std::vector<Op> Compiler::compile_unit(std::span<const NodeId> ops) {
  std::vector<Op> out;
  for (size_t i = 0; i < ops.size(); ++i) {
    const ir::Node& n = g_.node(ops[i]);
    if (n.kind == ir::OpKind::Conv) {
      i += compile_conv(ops.subspan(i), out) - 1;
      continue;
    }
    if (const size_t used = compile_padded_pool(ops.subspan(i), out); used > 0) {
      i += used - 1;
      continue;
    }
    if (n.kind == ir::OpKind::MatMul || n.kind == ir::OpKind::Gemm) {
      i += compile_gemm_chain(ops.subspan(i), out) - 1;
      continue;
    }
    compile_op(n, out);
  }
  return out;
}

// Pointer to `v` at run time: parameters in the weights buffer, the rest in the arena.
Locator Compiler::locate(ValueId v) {
  if (g_.value(v).kind == ir::ValueKind::kParameter) {
    std::byte* p = constant(v);
    return [p](std::byte*) { return p; };
  }
  const int64_t offset = memory_.offset[index(v)];
  BRAID_ASSERT(offset >= 0, "cuda: value without arena storage");
  return [offset](std::byte* arena) { return arena + offset; };
}

std::byte* Compiler::constant(ValueId v) {
  if (auto it = uploaded_.find(index(v)); it != uploaded_.end()) return it->second;
  BRAID_CHECK(weights_.has(v), ErrorCode::kInvalidModel, "cuda: parameter '", g_.value(v).name,
              "' has no data");
  return keep_as(weights_.data(v), storage_of(v), index(v));
}
std::shared_ptr<cublasLtContext> Compiler::cublas_lt() {
  if (!cublas_lt_) {
    cublasLtHandle_t h = nullptr;
    BRAID_CU(cublasLtCreate(&h));
    cublas_lt_ =
        std::shared_ptr<cublasLtContext>(h, [](cublasLtHandle_t p) { cublasLtDestroy(p); });
  }
  return cublas_lt_;
}

int64_t Compiler::alignment_of(ValueId v) {
  if (g_.value(v).kind == ir::ValueKind::kParameter)
    return power_of_two_alignment(reinterpret_cast<uintptr_t>(constant(v)));
  return power_of_two_alignment(uint64_t(memory_.offset[index(v)]));
}

Elem storage_elem(ir::DType dtype, Elem floats) {
  switch (dtype) {
    case ir::DType::kInt64:
      return Elem::kI64;
    case ir::DType::kBool:
      return Elem::kBool;
    case ir::DType::kFloat32:
      break;
  }
  return floats;
}
Elem Compiler::storage_of(ValueId v) const {
  return storage_elem(g_.value(v).type.dtype, elem_);
}
std::byte* Compiler::keep(DeviceBuffer b, std::optional<size_t> key) {
  std::byte* p = b.get();
  constants_.push_back(std::move(b));
  if (key) uploaded_[*key] = p;
  return p;
}
std::byte* Compiler::keep_as(std::span<const float> data, Elem as, std::optional<size_t> key) {
  if (as == Elem::kF32) return keep(upload(data), key);
  DeviceBuffer f32 = upload(data);
  DeviceBuffer converted(data.size() * size_t(elem_bytes(as)));
  cuda::convert(Elem::kF32, f32.get(), as, converted.get(), int64_t(data.size()), nullptr);
  BRAID_CU(cudaStreamSynchronize(nullptr));  // before f32 is freed
  return keep(std::move(converted), key);
}
std::span<const float> Compiler::host(ValueId v, const char* what) const {
  BRAID_CHECK(g_.value(v).kind == ir::ValueKind::kParameter && weights_.has(v),
              ErrorCode::kUnsupported, "cuda: ", what, " '", g_.value(v).name,
              "' must be a parameter with data");
  return weights_.data(v);
}
bool Compiler::single_consumer(ValueId v) const {
  return g_.value(v).consumers.size() == 1 && !g_.is_output(v);
}

cudnnTensorDescriptor_t Compiler::tensor4(int64_t n, int64_t c, int64_t h, int64_t w,
                                          cudnnTensorFormat_t format) {
  cudnnTensorDescriptor_t d;
  BRAID_CU(cudnnCreateTensorDescriptor(&d));
  tensor_descs_.push_back(d);
  BRAID_CU(
      cudnnSetTensor4dDescriptor(d, format, cudnn_type(elem_), int(n), int(c), int(h), int(w)));
  return d;
}

void Compiler::compile_op(const ir::Node& n, std::vector<Op>& out) {
  switch (n.kind) {
    case ir::OpKind::Conv:
      BRAID_ASSERT(false, "convs are compiled by compile_conv");
      return;
    case ir::OpKind::Relu:
    case ir::OpKind::Sigmoid:
    case ir::OpKind::Tanh:
    case ir::OpKind::Gelu:
    case ir::OpKind::Clip:
    case ir::OpKind::HardSigmoid:
    case ir::OpKind::HardSwish:
      return compile_unary(n, out);
    case ir::OpKind::ReduceMean:
      return compile_reduce_mean(n, out);
    case ir::OpKind::LRN:
      return compile_lrn(n, out);
    case ir::OpKind::Add:
    case ir::OpKind::Mul:
    case ir::OpKind::Sum:
      return compile_binary(n, out);
    case ir::OpKind::MaxPool:
    case ir::OpKind::AveragePool:
      return compile_pool(pool_of(n), n.inputs[0], n.outputs[0], out);
    case ir::OpKind::GlobalAveragePool:
      return compile_global_average_pool(n, out);
    case ir::OpKind::Concat:
      return compile_concat(n, out);
    case ir::OpKind::Split:
      return compile_split(n, out);
    case ir::OpKind::Transpose:
      return compile_transpose(n, out);
    case ir::OpKind::Pad:
      return compile_pad(n, out);
    case ir::OpKind::Reshape:
    case ir::OpKind::Flatten:
    case ir::OpKind::Identity:
      compile_copy(n.inputs[0], n.outputs[0], out);
      return;
    case ir::OpKind::BatchNormalization:
      return compile_batch_norm(n, out);
    case ir::OpKind::LayerNormalization:
      return compile_layer_norm(n, out);
    case ir::OpKind::Softmax:
      return compile_softmax(n, out);
    case ir::OpKind::MatMul:
      compile_matmul(n, out);
      return;
    case ir::OpKind::Gemm:
      compile_gemm(n, out);
      return;
    case ir::OpKind::Erf:
    case ir::OpKind::Sqrt:
      return compile_unary(n, out);
    case ir::OpKind::ConvTranspose:
      return compile_conv_transpose(n, out);
    case ir::OpKind::Resize:
      return compile_resize(n, out);
    case ir::OpKind::Sub:
    case ir::OpKind::Div:
    case ir::OpKind::Pow:
      return compile_binary(n, out);
    case ir::OpKind::Where:
      return compile_where(n, out);
    case ir::OpKind::Expand:
      return compile_expand(n, out);
    case ir::OpKind::Gather:
      return compile_gather(n, out);
    case ir::OpKind::Cast:
      return compile_cast(n, out);
    case ir::OpKind::Equal:
      return compile_equal(n, out);
    case ir::OpKind::Not:
      return compile_not(n, out);
    case ir::OpKind::Slice:
      return compile_slice(n, out);
  }
  BRAID_THROW(ErrorCode::kUnsupported, "cuda: op '", n.name, "' (", ir::to_string(n.kind),
              ") is not supported");
}

void Compiler::compile_copy(ValueId from, ValueId to, std::vector<Op>& out) {
  auto x = locate(from);
  auto y = locate(to);
  const size_t bytes = size_t(g_.value(to).type.elements() * elem_bytes(storage_of(to)));
  out.push_back([=](const LaneContext& l, std::byte* arena) {
    if (x(arena) != y(arena))  // views share storage: nothing to copy
      BRAID_CU(cudaMemcpyAsync(y(arena), x(arena), bytes, cudaMemcpyDeviceToDevice, l.stream));
  });
}

MemoryPlanOptions memory_plan_options(const ir::Graph& g, const CudaExecutorOptions& options,
                                      MemoryPlanOptions memory) {
  constexpr Bytes kAlignment = 256;
  const Elem floats = elem_of(options.precision);
  auto bytes_of = [&g, floats](ValueId v) {
    const ir::TensorType& t = g.value(v).type;
    return t.elements() * Bytes(elem_bytes(storage_elem(t.dtype, floats)));
  };
  memory.value_bytes = bytes_of;
  memory.alignment = kAlignment;
  // The planner asks only where the windows are contiguous (nothing before the axis but 1s).
  // Every kernel then still gets 256-byte aligned pointers, as from its own slot; a concat input
  // is never stored NHWC (conv_layout.h: a Concat is no convolution).
  if (options.concat_in_place && !memory.concat_in_place)
    memory.concat_in_place = [&g, bytes_of](ValueId, ValueId concat, int64_t offset) {
      const ir::Shape& shape = g.value(concat).type.shape;
      const int64_t axis = normalize(
          std::get<ir::AxisAttrs>(g.node(g.value(concat).producer).attrs).axis, shape.size());
      if (shape[axis] == 0) return false;
      return offset * (bytes_of(concat) / shape[axis]) % kAlignment == 0;
    };
  return memory;
}

namespace {

// Whether a Wait step comes between the launches of merge `m` on its lane. The merged op writes
// every unit's output at the first launch, while the memory plan reuses storage by each unit's
// own launch: a wait there could order a reader of memory a later unit's output takes before
// that unit but after the first (sched::lower emits a merge's launches back to back, so none
// is expected).
bool waits_inside_merge(const sched::ExecutionPlan& plan, size_t m) {
  const size_t units = plan.merges[m].size();
  for (const sched::PlanLane& lane : plan.lanes) {
    size_t launched = 0;
    for (const sched::Step& step : lane.steps) {
      if (const auto* l = std::get_if<sched::LaunchStep>(&step); l && l->merge == int32_t(m))
        ++launched;
      else if (std::holds_alternative<sched::WaitStep>(step) && launched > 0 && launched < units)
        return true;
    }
  }
  return false;
}

}  // namespace

CompiledModel::CompiledModel(const ir::Graph& graph, const ir::Weights& weights,
                             const ir::UnitGraph& units, const sched::ExecutionPlan& plan,
                             const CudaExecutorOptions& options,
                             const MemoryPlanOptions& memory_options)
    : memory(plan_memory(graph, units, plan, memory_plan_options(graph, options, memory_options))) {
  std::unique_lock lock(device_sync_mutex());
  BRAID_CU(cudaSetDevice(options.device));
  // A handle for choosing algorithms and probing: the lanes run with their own.
  BRAID_CU(cudnnCreate(&cudnn));
  try {
    compiler = std::make_unique<Compiler>(graph, weights, memory, options, cudnn);
    compiler->choose_conv_layouts(units);
    unit_ops.resize(units.num_units());
    for (size_t u = 0; u < units.num_units(); ++u)
      unit_ops[u] = compiler->compile_unit(units.unit(UnitId(u)).ops);
    // Operator merges: one convolution each where the units fit, on one block (the first unit
    // writes the others' outputs, so they must not be split by a block-by-block run).
    for (const std::vector<UnitId>& merge : plan.merges) {
      std::string why;
      std::vector<std::vector<NodeId>> ops;
      for (UnitId u : merge) {
        const auto unit_ops_of = units.unit(u).ops;
        ops.emplace_back(unit_ops_of.begin(), unit_ops_of.end());
        if (plan.block_of_unit[index(u)] != plan.block_of_unit[index(merge[0])])
          why = "its units lie in different blocks";
      }
      if (why.empty() && waits_inside_merge(plan, merge_ops.size()))
        why = "its lane waits for an event between its launches";
      std::vector<Op> merged;
      if (merge.size() >= 2 && why.empty()) merged = compiler->compile_merge(ops, &why);
      if (merged.empty() && merge.size() >= 2)
        spdlog::warn("cuda: operator merge of '{}' runs its {} convs one after another: {}",
                     units.unit(merge[0]).name, merge.size(), why);
      merge_ops.push_back(std::move(merged));
    }
    // Everything uploaded and converted at prepare has landed before the model runs.
    BRAID_CU(cudaDeviceSynchronize());
  } catch (...) {
    compiler.reset();
    cudnnDestroy(cudnn);
    throw;
  }
}

CompiledModel::~CompiledModel() {
  std::unique_lock lock(device_sync_mutex());
  merge_ops.clear();
  unit_ops.clear();
  compiler.reset();  // frees device memory: under the lock
  cudnnDestroy(cudnn);
}

std::shared_mutex& device_sync_mutex() {
  static std::shared_mutex mutex;
  return mutex;
}

const std::vector<Op>& CompiledModel::ops_of_launch(const sched::LaunchStep& launch,
                                                    const sched::ExecutionPlan& plan) const {
  static const std::vector<Op> kNothing;
  if (launch.merge >= 0 && !merge_ops[size_t(launch.merge)].empty())
    return plan.merges[size_t(launch.merge)].front() == launch.unit
               ? merge_ops[size_t(launch.merge)]
               : kNothing;
  return unit_ops[index(launch.unit)];
}

}  // namespace braid::exec::cuda
