#include "exec/cuda/cuda_executor.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <array>
#include <cmath>
#include <functional>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "base/error.h"
#include "exec/cuda/cuda_kernels.h"
#include "exec/memory_plan.h"

namespace braid::exec {
namespace {

using cuda::Strided;

void check(cudaError_t e, const char* call) {
  BRAID_CHECK(e == cudaSuccess, ErrorCode::kInternal, "CUDA: ", call, ": ", cudaGetErrorString(e));
}
void check(cudnnStatus_t s, const char* call) {
  BRAID_CHECK(s == CUDNN_STATUS_SUCCESS, ErrorCode::kInternal, "cuDNN: ", call, ": ",
              cudnnGetErrorString(s));
}
void check(cublasStatus_t s, const char* call) {
  BRAID_CHECK(s == CUBLAS_STATUS_SUCCESS, ErrorCode::kInternal, "cuBLAS: ", call, ": ",
              cublasGetStatusString(s));
}
#define BRAID_CU(call) check((call), #call)

// Device memory, freed with its owner.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes) {
    if (bytes > 0) BRAID_CU(cudaMalloc(&ptr_, bytes));
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    return *this;
  }
  ~DeviceBuffer() {
    if (ptr_ != nullptr) cudaFree(ptr_);
  }
  std::byte* get() const { return static_cast<std::byte*>(ptr_); }

 private:
  void* ptr_ = nullptr;
};

// A constant tensor uploaded once (weights, folded weights, biases).
DeviceBuffer upload(std::span<const float> data) {
  DeviceBuffer b(data.size_bytes());
  if (!data.empty())
    BRAID_CU(cudaMemcpy(b.get(), data.data(), data.size_bytes(), cudaMemcpyHostToDevice));
  return b;
}

struct LaneContext {
  cudaStream_t stream = nullptr;
  cudnnHandle_t cudnn = nullptr;
  cublasHandle_t cublas = nullptr;
  std::byte* workspace = nullptr;  // cuDNN workspace, then a padded-input scratch
};

// cuBLAS's own workspace per lane, set explicitly so that graph capture never allocates.
constexpr int64_t kCublasWorkspace = 4 << 20;

// One op of a unit, compiled: runs on a lane with the request's arena.
using Op = std::function<void(const LaneContext&, std::byte* arena)>;

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

cuda::Unary unary_of(ir::OpKind kind, const ir::OpAttrs& attrs) {
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
    default:
      return cuda::Unary::kCopy;
  }
}

std::optional<cuda::Unary> unary_of(ir::Activation a) {
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

class CudaPrepared;

// Compiles the ops of a graph into Ops: owns the uploaded constants and the cuDNN descriptors.
class Compiler {
 public:
  Compiler(const ir::Graph& graph, const ir::Weights& weights, const MemoryPlan& memory,
           const CudaExecutorOptions& options, cudnnHandle_t cudnn)
      : g_(graph), weights_(weights), memory_(memory), options_(options), cudnn_(cudnn) {}
  ~Compiler() {
    for (auto d : tensor_descs_) cudnnDestroyTensorDescriptor(d);
    for (auto d : filter_descs_) cudnnDestroyFilterDescriptor(d);
    for (auto d : conv_descs_) cudnnDestroyConvolutionDescriptor(d);
    for (auto d : activation_descs_) cudnnDestroyActivationDescriptor(d);
  }

  // The ops of one unit, in order (fusing a Conv with its BatchNormalization and ReLU).
  std::vector<Op> compile_unit(std::span<const NodeId> ops) {
    std::vector<Op> out;
    for (size_t i = 0; i < ops.size(); ++i) {
      const ir::Node& n = g_.node(ops[i]);
      if (n.kind == ir::OpKind::Conv) {
        i += compile_conv(ops.subspan(i), out) - 1;
        continue;
      }
      compile_op(n, out);
    }
    return out;
  }

  // Pointer to `v` at run time: parameters in the weights buffer, the rest in the arena.
  std::function<float*(std::byte*)> locate(ValueId v) {
    if (g_.value(v).kind == ir::ValueKind::kParameter) {
      float* p = constant(v);
      return [p](std::byte*) { return p; };
    }
    const int64_t offset = memory_.offset[index(v)];
    BRAID_ASSERT(offset >= 0, "cuda: value without arena storage");
    return [offset](std::byte* arena) { return reinterpret_cast<float*>(arena + offset); };
  }

  int64_t scratch_bytes() const { return scratch_bytes_; }
  std::vector<DeviceBuffer> take_constants() { return std::move(constants_); }

 private:
  float* constant(ValueId v) {
    if (auto it = uploaded_.find(index(v)); it != uploaded_.end()) return it->second;
    BRAID_CHECK(weights_.has(v), ErrorCode::kInvalidModel, "cuda: parameter '", g_.value(v).name,
                "' has no data");
    return keep(upload(weights_.data(v)), index(v));
  }
  float* keep(DeviceBuffer b, std::optional<size_t> key = std::nullopt) {
    float* p = reinterpret_cast<float*>(b.get());
    constants_.push_back(std::move(b));
    if (key) uploaded_[*key] = p;
    return p;
  }
  const ir::Shape& shape(ValueId v) const { return g_.value(v).type.shape; }
  std::span<const float> host(ValueId v, const char* what) const {
    BRAID_CHECK(g_.value(v).kind == ir::ValueKind::kParameter && weights_.has(v),
                ErrorCode::kUnsupported, "cuda: ", what, " '", g_.value(v).name,
                "' must be a parameter with data");
    return weights_.data(v);
  }
  bool single_consumer(ValueId v) const {
    return g_.value(v).consumers.size() == 1 && !g_.is_output(v);
  }

  cudnnTensorDescriptor_t tensor4(int64_t n, int64_t c, int64_t h, int64_t w) {
    cudnnTensorDescriptor_t d;
    BRAID_CU(cudnnCreateTensorDescriptor(&d));
    tensor_descs_.push_back(d);
    BRAID_CU(cudnnSetTensor4dDescriptor(d, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, int(n), int(c),
                                        int(h), int(w)));
    return d;
  }

  // Conv [BatchNormalization] [Relu|Sigmoid|Tanh|Gelu]: returns how many ops it consumed.
  size_t compile_conv(std::span<const NodeId> ops, std::vector<Op>& out) {
    const ir::Node& conv = g_.node(ops[0]);
    const auto& a = std::get<ir::ConvAttrs>(conv.attrs);
    const ir::Shape& xs = shape(conv.inputs[0]);
    const ir::Shape& ws = shape(conv.inputs[1]);
    BRAID_CHECK(xs.size() == 4, ErrorCode::kUnsupported, "cuda: Conv '", conv.name, "' is not 2-D");
    size_t used = 1;
    ValueId y = conv.outputs[0];
    const int64_t oc = ws[0];
    std::vector<float> w(host(conv.inputs[1], "Conv weight").begin(),
                         host(conv.inputs[1], "Conv weight").end());
    std::vector<float> bias(oc, 0.0f);
    if (conv.inputs.size() > 2) {
      auto b = host(conv.inputs[2], "Conv bias");
      std::copy(b.begin(), b.end(), bias.begin());
    }
    // Fold a following BatchNormalization into the weights and bias.
    if (used < ops.size() && single_consumer(y)) {
      const ir::Node& bn = g_.node(ops[used]);
      if (bn.kind == ir::OpKind::BatchNormalization && bn.inputs[0] == y) {
        const float eps = std::get<ir::BatchNormAttrs>(bn.attrs).epsilon;
        auto scale = host(bn.inputs[1], "BatchNormalization scale");
        auto shift = host(bn.inputs[2], "BatchNormalization bias");
        auto mean = host(bn.inputs[3], "BatchNormalization mean");
        auto var = host(bn.inputs[4], "BatchNormalization variance");
        const int64_t per_oc = int64_t(w.size()) / oc;
        for (int64_t c = 0; c < oc; ++c) {
          const float k = scale[c] / std::sqrt(var[c] + eps);
          for (int64_t i = 0; i < per_oc; ++i) w[c * per_oc + i] *= k;
          bias[c] = (bias[c] - mean[c]) * k + shift[c];
        }
        y = bn.outputs[0];
        ++used;
      }
    }
    std::optional<cuda::Unary> activation = unary_of(a.activation);
    if (!activation && used < ops.size() && single_consumer(y)) {
      const ir::Node& act = g_.node(ops[used]);
      if ((act.kind == ir::OpKind::Relu || act.kind == ir::OpKind::Sigmoid ||
           act.kind == ir::OpKind::Tanh || act.kind == ir::OpKind::Gelu) &&
          act.inputs[0] == y) {
        activation = unary_of(act.kind, act.attrs);
        y = act.outputs[0];
        ++used;
      }
    }
    const ir::Shape& ys = shape(y);
    const bool has_bias = conv.inputs.size() > 2 || used > 1;

    // cuDNN pads symmetrically: asymmetric pads go through an explicit Pad into scratch.
    const bool symmetric = a.pads[0] == a.pads[2] && a.pads[1] == a.pads[3];
    ir::Shape padded = xs;
    if (!symmetric) {
      padded[2] += a.pads[0] + a.pads[2];
      padded[3] += a.pads[1] + a.pads[3];
    }
    cudnnTensorDescriptor_t x_desc = tensor4(padded[0], padded[1], padded[2], padded[3]);
    cudnnTensorDescriptor_t y_desc = tensor4(ys[0], ys[1], ys[2], ys[3]);
    cudnnTensorDescriptor_t b_desc = tensor4(1, oc, 1, 1);
    cudnnFilterDescriptor_t w_desc;
    BRAID_CU(cudnnCreateFilterDescriptor(&w_desc));
    filter_descs_.push_back(w_desc);
    BRAID_CU(cudnnSetFilter4dDescriptor(w_desc, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, int(ws[0]),
                                        int(ws[1]), int(ws[2]), int(ws[3])));
    cudnnConvolutionDescriptor_t c_desc;
    BRAID_CU(cudnnCreateConvolutionDescriptor(&c_desc));
    conv_descs_.push_back(c_desc);
    BRAID_CU(cudnnSetConvolution2dDescriptor(
        c_desc, symmetric ? int(a.pads[0]) : 0, symmetric ? int(a.pads[1]) : 0, int(a.stride[0]),
        int(a.stride[1]), int(a.dilation[0]), int(a.dilation[1]), CUDNN_CROSS_CORRELATION,
        CUDNN_DATA_FLOAT));
    BRAID_CU(cudnnSetConvolutionGroupCount(c_desc, int(a.groups)));
    // FP32 FMA, no TF32: outputs stay comparable with the CPU executor.
    BRAID_CU(cudnnSetConvolutionMathType(c_desc, CUDNN_FMA_MATH));
    int n = 0, c = 0, h = 0, wd = 0;
    BRAID_CU(cudnnGetConvolution2dForwardOutputDim(c_desc, x_desc, w_desc, &n, &c, &h, &wd));
    BRAID_CHECK(n == ys[0] && c == ys[1] && h == ys[2] && wd == ys[3], ErrorCode::kInternal,
                "cuda: cuDNN's output shape of Conv '", conv.name, "' differs from the graph's");

    const bool fuse_relu = activation == cuda::Unary::kRelu;
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int found = 0;
    BRAID_CU(cudnnGetConvolutionForwardAlgorithm_v7(
        cudnn_, x_desc, w_desc, c_desc, y_desc, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &found, perf));
    std::optional<cudnnConvolutionFwdAlgo_t> algo;
    size_t workspace = 0;
    for (int i = 0; i < found && !algo; ++i)
      if (perf[i].status == CUDNN_STATUS_SUCCESS &&
          int64_t(perf[i].memory) <= options_.workspace_bytes) {
        algo = perf[i].algo;
        workspace = perf[i].memory;
      }
    BRAID_CHECK(algo.has_value(), ErrorCode::kUnsupported, "cuda: no cuDNN algorithm for Conv '",
                conv.name, "' within ", options_.workspace_bytes, " bytes of workspace");
    const int64_t pad_bytes = symmetric ? 0 : ir::num_elements(padded) * int64_t(sizeof(float));
    const int64_t workspace_aligned = (int64_t(workspace) + 255) / 256 * 256;
    scratch_bytes_ = std::max(scratch_bytes_, workspace_aligned + pad_bytes);

    cudnnActivationDescriptor_t act_desc = nullptr;
    if (fuse_relu) {
      BRAID_CU(cudnnCreateActivationDescriptor(&act_desc));
      activation_descs_.push_back(act_desc);
      BRAID_CU(
          cudnnSetActivationDescriptor(act_desc, CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0.0));
    }
    float* w_dev = keep(upload(w));
    float* b_dev = keep(upload(bias));
    auto x = locate(conv.inputs[0]);
    auto out_ptr = locate(y);
    Strided x_layout = row_major(xs), padded_layout = row_major(padded);
    std::array<int64_t, 4> pads_begin{0, 0, a.pads[0], a.pads[1]};
    const int64_t channels = ys[1], inner = ys[2] * ys[3];
    const cudnnConvolutionFwdAlgo_t chosen = *algo;
    out.push_back([=](const LaneContext& lane, std::byte* arena) {
      const float* src = x(arena);
      if (!symmetric) {
        float* scratch = reinterpret_cast<float*>(lane.workspace + workspace_aligned);
        cuda::pad(scratch, padded_layout, src, x_layout, pads_begin.data(), 0.0f, lane.stream);
        src = scratch;
      }
      float* dst = out_ptr(arena);
      const float one = 1.0f, zero = 0.0f;
      if (fuse_relu) {
        BRAID_CU(cudnnConvolutionBiasActivationForward(
            lane.cudnn, &one, x_desc, src, w_desc, w_dev, c_desc, chosen, lane.workspace, workspace,
            &zero, y_desc, dst, b_desc, b_dev, act_desc, y_desc, dst));
        return;
      }
      BRAID_CU(cudnnConvolutionForward(lane.cudnn, &one, x_desc, src, w_desc, w_dev, c_desc, chosen,
                                       lane.workspace, workspace, &zero, y_desc, dst));
      if (has_bias || activation)
        cuda::channel_affine(dst, dst, nullptr, has_bias ? b_dev : nullptr, ys[0], channels, inner,
                             activation.value_or(cuda::Unary::kCopy), activation.has_value(),
                             lane.stream);
    });
    return used;
  }

  void compile_op(const ir::Node& n, std::vector<Op>& out) {
    const ir::Shape& ys = shape(n.outputs[0]);
    auto y = locate(n.outputs[0]);
    switch (n.kind) {
      case ir::OpKind::Conv:
        BRAID_ASSERT(false, "convs are compiled by compile_conv");
        return;
      case ir::OpKind::Relu:
      case ir::OpKind::Sigmoid:
      case ir::OpKind::Tanh:
      case ir::OpKind::Gelu: {
        auto x = locate(n.inputs[0]);
        const cuda::Unary op = unary_of(n.kind, n.attrs);
        const int64_t count = ir::num_elements(ys);
        out.push_back([=](const LaneContext& l, std::byte* arena) {
          cuda::unary(op, x(arena), y(arena), count, l.stream);
        });
        return;
      }
      case ir::OpKind::Add:
      case ir::OpKind::Mul:
      case ir::OpKind::Sum: {
        const cuda::Binary op = n.kind == ir::OpKind::Mul ? cuda::Binary::kMul : cuda::Binary::kAdd;
        if (n.inputs.size() == 1) {
          compile_copy(n.inputs[0], n.outputs[0], out);
          return;
        }
        std::vector<std::function<float*(std::byte*)>> in;
        std::vector<Strided> layouts;
        for (ValueId v : n.inputs) {
          in.push_back(locate(v));
          layouts.push_back(broadcast_to(shape(v), ys));
        }
        const Strided own = row_major(ys);
        out.push_back([=](const LaneContext& l, std::byte* arena) {
          cuda::binary(op, in[0](arena), layouts[0], in[1](arena), layouts[1], y(arena), l.stream);
          for (size_t k = 2; k < in.size(); ++k)
            cuda::binary(op, y(arena), own, in[k](arena), layouts[k], y(arena), l.stream);
        });
        return;
      }
      case ir::OpKind::MaxPool:
      case ir::OpKind::AveragePool: {
        const auto& a = std::get<ir::PoolAttrs>(n.attrs);
        const ir::Shape& xs = shape(n.inputs[0]);
        BRAID_CHECK(xs.size() == 4, ErrorCode::kUnsupported, "cuda: pooling '", n.name,
                    "' is not 2-D");
        cuda::Pool2d p{.planes = xs[0] * xs[1],
                       .in_h = xs[2],
                       .in_w = xs[3],
                       .out_h = ys[2],
                       .out_w = ys[3],
                       .kernel_h = a.kernel[0],
                       .kernel_w = a.kernel[1],
                       .stride_h = a.stride[0],
                       .stride_w = a.stride[1],
                       .pad_top = a.pads[0],
                       .pad_left = a.pads[1],
                       .pad_bottom = a.pads[2],
                       .pad_right = a.pads[3],
                       .is_max = n.kind == ir::OpKind::MaxPool,
                       .count_include_pad = a.count_include_pad};
        auto x = locate(n.inputs[0]);
        out.push_back([=](const LaneContext& l, std::byte* arena) {
          cuda::pool2d(x(arena), y(arena), p, l.stream);
        });
        return;
      }
      case ir::OpKind::GlobalAveragePool: {
        const ir::Shape& xs = shape(n.inputs[0]);
        const int64_t rows = xs[0] * xs[1],
                      inner = ir::num_elements(xs) / std::max<int64_t>(rows, 1);
        auto x = locate(n.inputs[0]);
        out.push_back([=](const LaneContext& l, std::byte* arena) {
          cuda::mean_rows(x(arena), y(arena), rows, inner, l.stream);
        });
        return;
      }
      case ir::OpKind::Concat: {
        const ir::Shape& os = ys;
        const int64_t axis = normalize(std::get<ir::AxisAttrs>(n.attrs).axis, os.size());
        const Strided out_layout = row_major(os);
        int64_t at = 0;
        for (ValueId v : n.inputs) {
          Strided dst = out_layout, src = row_major(shape(v));
          for (int d = 0; d < dst.rank; ++d) dst.dims[d] = src.dims[d];
          const int64_t offset = at * out_layout.strides[axis];
          auto x = locate(v);
          out.push_back([=](const LaneContext& l, std::byte* arena) {
            cuda::strided_copy(y(arena) + offset, dst, x(arena), src, l.stream);
          });
          at += shape(v)[axis];
        }
        return;
      }
      case ir::OpKind::Split: {
        const auto& a = std::get<ir::SplitAttrs>(n.attrs);
        const ir::Shape& xs = shape(n.inputs[0]);
        const int64_t axis = normalize(a.axis, xs.size());
        const Strided in_layout = row_major(xs);
        auto x = locate(n.inputs[0]);
        int64_t at = 0;
        for (ValueId o : n.outputs) {
          Strided dst = row_major(shape(o)), src = in_layout;
          for (int d = 0; d < src.rank; ++d) src.dims[d] = dst.dims[d];
          const int64_t offset = at * in_layout.strides[axis];
          auto yo = locate(o);
          out.push_back([=](const LaneContext& l, std::byte* arena) {
            cuda::strided_copy(yo(arena), dst, x(arena) + offset, src, l.stream);
          });
          at += shape(o)[axis];
        }
        return;
      }
      case ir::OpKind::Transpose: {
        const ir::Shape& xs = shape(n.inputs[0]);
        std::vector<int64_t> perm = std::get<ir::TransposeAttrs>(n.attrs).perm;
        if (perm.empty())
          for (int64_t i = int64_t(xs.size()) - 1; i >= 0; --i) perm.push_back(i);
        const Strided in_layout = row_major(xs);
        const Strided dst = row_major(ys);
        Strided src = dst;
        for (int d = 0; d < src.rank; ++d) src.strides[d] = in_layout.strides[perm[d]];
        auto x = locate(n.inputs[0]);
        out.push_back([=](const LaneContext& l, std::byte* arena) {
          cuda::strided_copy(y(arena), dst, x(arena), src, l.stream);
        });
        return;
      }
      case ir::OpKind::Pad: {
        const auto& a = std::get<ir::PadAttrs>(n.attrs);
        const Strided y_layout = row_major(ys), x_layout = row_major(shape(n.inputs[0]));
        std::array<int64_t, cuda::kMaxRank> begin{};
        for (size_t d = 0; d < ys.size(); ++d) begin[d] = a.pads[d];
        const float value = a.value;
        auto x = locate(n.inputs[0]);
        out.push_back([=](const LaneContext& l, std::byte* arena) {
          cuda::pad(y(arena), y_layout, x(arena), x_layout, begin.data(), value, l.stream);
        });
        return;
      }
      case ir::OpKind::Reshape:
      case ir::OpKind::Flatten:
      case ir::OpKind::Identity:
        compile_copy(n.inputs[0], n.outputs[0], out);
        return;
      case ir::OpKind::BatchNormalization: {
        const float eps = std::get<ir::BatchNormAttrs>(n.attrs).epsilon;
        auto scale = host(n.inputs[1], "BatchNormalization scale");
        auto shift = host(n.inputs[2], "BatchNormalization bias");
        auto mean = host(n.inputs[3], "BatchNormalization mean");
        auto var = host(n.inputs[4], "BatchNormalization variance");
        const int64_t channels = ys[1];
        std::vector<float> k(channels), b(channels);
        for (int64_t c = 0; c < channels; ++c) {
          k[c] = scale[c] / std::sqrt(var[c] + eps);
          b[c] = shift[c] - mean[c] * k[c];
        }
        float* k_dev = keep(upload(k));
        float* b_dev = keep(upload(b));
        const int64_t inner = ir::num_elements(ys) / (ys[0] * channels), outer = ys[0];
        auto x = locate(n.inputs[0]);
        out.push_back([=](const LaneContext& l, std::byte* arena) {
          cuda::channel_affine(x(arena), y(arena), k_dev, b_dev, outer, channels, inner,
                               cuda::Unary::kCopy, false, l.stream);
        });
        return;
      }
      case ir::OpKind::LayerNormalization: {
        const auto& a = std::get<ir::LayerNormAttrs>(n.attrs);
        const int64_t axis = normalize(a.axis, ys.size());
        int64_t outer = 1, inner = 1;
        for (size_t d = 0; d < ys.size(); ++d) (int64_t(d) < axis ? outer : inner) *= ys[d];
        auto x = locate(n.inputs[0]);
        auto scale = locate(n.inputs[1]);
        std::optional<std::function<float*(std::byte*)>> bias;
        if (n.inputs.size() > 2) bias = locate(n.inputs[2]);
        const float eps = a.epsilon;
        out.push_back([=](const LaneContext& l, std::byte* arena) {
          cuda::layer_norm(x(arena), scale(arena), bias ? (*bias)(arena) : nullptr, y(arena), outer,
                           inner, eps, l.stream);
        });
        return;
      }
      case ir::OpKind::Softmax: {
        const int64_t axis = normalize(std::get<ir::AxisAttrs>(n.attrs).axis, ys.size());
        int64_t outer = 1, inner = 1;
        for (size_t d = 0; d < ys.size(); ++d)
          if (int64_t(d) < axis)
            outer *= ys[d];
          else if (int64_t(d) > axis)
            inner *= ys[d];
        cudnnTensorDescriptor_t desc = tensor4(outer, ys[axis], inner, 1);
        auto x = locate(n.inputs[0]);
        out.push_back([=](const LaneContext& l, std::byte* arena) {
          const float one = 1.0f, zero = 0.0f;
          BRAID_CU(cudnnSoftmaxForward(l.cudnn, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_CHANNEL,
                                       &one, desc, x(arena), &zero, desc, y(arena)));
        });
        return;
      }
      case ir::OpKind::MatMul:
        compile_matmul(n, out);
        return;
      case ir::OpKind::Gemm:
        compile_gemm(n, out);
        return;
    }
    BRAID_THROW(ErrorCode::kUnsupported, "cuda: op '", n.name, "' (", ir::to_string(n.kind),
                ") is not supported");
  }

  static int64_t normalize(int64_t axis, size_t rank) {
    return axis < 0 ? axis + int64_t(rank) : axis;
  }

  void compile_copy(ValueId from, ValueId to, std::vector<Op>& out) {
    auto x = locate(from);
    auto y = locate(to);
    const size_t bytes = size_t(g_.value(to).type.bytes());
    out.push_back([=](const LaneContext& l, std::byte* arena) {
      if (x(arena) != y(arena))  // views share storage: nothing to copy
        BRAID_CU(cudaMemcpyAsync(y(arena), x(arena), bytes, cudaMemcpyDeviceToDevice, l.stream));
    });
  }

  // Row-major C[M,N] = A[M,K] B[K,N] is column-major C^T = B^T A^T: cuBLAS gets B first.
  void compile_matmul(const ir::Node& n, std::vector<Op>& out) {
    const ir::Shape& as = shape(n.inputs[0]);
    const ir::Shape& bs = shape(n.inputs[1]);
    const ir::Shape& ys = shape(n.outputs[0]);
    BRAID_CHECK(as.size() >= 2 && bs.size() >= 2, ErrorCode::kUnsupported, "cuda: MatMul '", n.name,
                "' with a 1-D operand");
    const int64_t m = ys[ys.size() - 2], nn = ys.back(), k = as.back();
    const ir::Shape batch(ys.begin(), ys.end() - 2);
    const ir::Shape a_batch(as.begin(), as.end() - 2), b_batch(bs.begin(), bs.end() - 2);
    const int64_t batches = ir::num_elements(batch);
    // Per output matrix: the A and B matrices it reads (broadcast batch dims).
    const Strided a_idx = broadcast_to(a_batch, batch), b_idx = broadcast_to(b_batch, batch);
    std::vector<std::pair<int64_t, int64_t>> pairs;
    for (int64_t t = 0; t < batches; ++t) {
      int64_t rest = t, ao = 0, bo = 0;
      for (int d = a_idx.rank - 1; d >= 0 && !batch.empty(); --d) {
        const int64_t at = rest % a_idx.dims[d];
        rest /= a_idx.dims[d];
        ao += at * a_idx.strides[d];
        bo += at * b_idx.strides[d];
      }
      pairs.emplace_back(ao * m * k, bo * k * nn);
    }
    auto a = locate(n.inputs[0]);
    auto b = locate(n.inputs[1]);
    auto y = locate(n.outputs[0]);
    out.push_back([=](const LaneContext& l, std::byte* arena) {
      const float one = 1.0f, zero = 0.0f;
      const float *pa = a(arena), *pb = b(arena);
      float* py = y(arena);
      for (size_t t = 0; t < pairs.size(); ++t)
        BRAID_CU(cublasSgemm(l.cublas, CUBLAS_OP_N, CUBLAS_OP_N, int(nn), int(m), int(k), &one,
                             pb + pairs[t].second, int(nn), pa + pairs[t].first, int(k), &zero,
                             py + int64_t(t) * m * nn, int(nn)));
    });
  }

  void compile_gemm(const ir::Node& n, std::vector<Op>& out) {
    const auto& attrs = std::get<ir::GemmAttrs>(n.attrs);
    const ir::Shape& as = shape(n.inputs[0]);
    const ir::Shape& ys = shape(n.outputs[0]);
    const int64_t m = ys[0], nn = ys[1], k = attrs.trans_a ? as[0] : as[1];
    auto a = locate(n.inputs[0]);
    auto b = locate(n.inputs[1]);
    auto y = locate(n.outputs[0]);
    std::optional<std::function<float*(std::byte*)>> c;
    Strided c_layout, y_layout = row_major(ys);
    if (n.inputs.size() > 2) {
      c = locate(n.inputs[2]);
      c_layout = broadcast_to(shape(n.inputs[2]), ys);
    }
    const float alpha = attrs.alpha, beta = c ? attrs.beta : 0.0f;
    const bool ta = attrs.trans_a, tb = attrs.trans_b;
    out.push_back([=](const LaneContext& l, std::byte* arena) {
      float* py = y(arena);
      if (c) cuda::strided_copy(py, y_layout, (*c)(arena), c_layout, l.stream);
      BRAID_CU(cublasSgemm(l.cublas, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N,
                           int(nn), int(m), int(k), &alpha, b(arena), tb ? int(k) : int(nn),
                           a(arena), ta ? int(m) : int(k), &beta, py, int(nn)));
    });
  }

  const ir::Graph& g_;
  const ir::Weights& weights_;
  const MemoryPlan& memory_;
  CudaExecutorOptions options_;
  cudnnHandle_t cudnn_;
  std::vector<DeviceBuffer> constants_;
  std::unordered_map<size_t, float*> uploaded_;
  std::vector<cudnnTensorDescriptor_t> tensor_descs_;
  std::vector<cudnnFilterDescriptor_t> filter_descs_;
  std::vector<cudnnConvolutionDescriptor_t> conv_descs_;
  std::vector<cudnnActivationDescriptor_t> activation_descs_;
  int64_t scratch_bytes_ = 0;

  friend class CudaPrepared;
};

// One inference's device state: its arena, a stream and library handles per lane, the plan's
// events, pinned input/output buffers, and (with `graph`) the captured CUDA Graph.
class CudaRequest final : public Request {
 public:
  ~CudaRequest() override {
    cudaSetDevice(device);
    if (graph_exec != nullptr) cudaGraphExecDestroy(graph_exec);
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

  // Two timing events for `unit`, made on first use.
  std::pair<cudaEvent_t, cudaEvent_t> unit_timing_events(size_t unit) {
    if (timing.size() <= unit) timing.resize(unit + 1, {nullptr, nullptr});
    auto& [b, e] = timing[unit];
    if (b == nullptr) {
      BRAID_CU(cudaEventCreate(&b));
      BRAID_CU(cudaEventCreate(&e));
    }
    return timing[unit];
  }

  int device = 0;
  DeviceBuffer arena, workspaces;
  std::vector<LaneContext> lanes;
  std::vector<cudaEvent_t> events, joins;
  cudaEvent_t fork = nullptr;
  cudaEvent_t started = nullptr, finished = nullptr;  // timing: around the plan's steps
  cudaStream_t main = nullptr;
  std::optional<double> last_run_us;
  std::vector<std::pair<cudaEvent_t, cudaEvent_t>> timing;  // per unit, when observed
  std::vector<std::tuple<size_t, UnitId, cudaEvent_t, cudaEvent_t>> unit_events;  // last run
  std::vector<float*> pinned;  // graph inputs, then graph outputs
  cudaGraphExec_t graph_exec = nullptr;
};

class CudaPrepared final : public PreparedModel {
 public:
  CudaPrepared(const ModelBundle& model, const CudaExecutorOptions& options)
      : graph_(model.graph),
        weights_(model.weights),
        units_(*model.units),
        plan_(*model.plan),
        options_(options) {
    BRAID_CU(cudaSetDevice(options_.device));
    memory_ = plan_memory(*graph_, units_, plan_, {});
    cudnnHandle_t cudnn;
    BRAID_CU(cudnnCreate(&cudnn));
    compiler_ = std::make_unique<Compiler>(*graph_, *weights_, memory_, options_, cudnn);
    try {
      unit_ops_.resize(units_.num_units());
      for (size_t u = 0; u < units_.num_units(); ++u)
        unit_ops_[u] = compiler_->compile_unit(units_.unit(UnitId(u)).ops);
    } catch (...) {
      cudnnDestroy(cudnn);
      throw;
    }
    cudnnDestroy(cudnn);
    for (ValueId v : graph_->inputs()) input_offsets_.push_back(memory_.offset[index(v)]);
    for (ValueId v : graph_->outputs()) outputs_.push_back(compiler_->locate(v));
  }

  std::unique_ptr<Request> new_request() const override {
    BRAID_CU(cudaSetDevice(options_.device));
    auto r = std::make_unique<CudaRequest>();
    r->device = options_.device;
    r->arena = DeviceBuffer(size_t(std::max<Bytes>(memory_.arena_bytes, 256)));
    const int64_t scratch = (std::max<int64_t>(compiler_->scratch_bytes(), 256) + 255) / 256 * 256;
    const int64_t per_lane = scratch + kCublasWorkspace;
    r->workspaces = DeviceBuffer(size_t(per_lane) * plan_.lanes.size());
    BRAID_CU(cudaStreamCreateWithFlags(&r->main, cudaStreamNonBlocking));
    BRAID_CU(cudaEventCreateWithFlags(&r->fork, cudaEventDisableTiming));
    BRAID_CU(cudaEventCreate(&r->started));
    BRAID_CU(cudaEventCreate(&r->finished));
    for (size_t i = 0; i < plan_.lanes.size(); ++i) {
      LaneContext l;
      BRAID_CU(cudaStreamCreateWithFlags(&l.stream, cudaStreamNonBlocking));
      BRAID_CU(cudnnCreate(&l.cudnn));
      BRAID_CU(cudnnSetStream(l.cudnn, l.stream));
      BRAID_CU(cublasCreate(&l.cublas));
      BRAID_CU(cublasSetStream(l.cublas, l.stream));
      l.workspace = r->workspaces.get() + i * per_lane;
      BRAID_CU(cublasSetWorkspace(l.cublas, l.workspace + scratch, kCublasWorkspace));
      r->lanes.push_back(l);
      cudaEvent_t join;
      BRAID_CU(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
      r->joins.push_back(join);
    }
    for (uint32_t e = 0; e < plan_.num_events; ++e) {
      cudaEvent_t ev;
      BRAID_CU(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
      r->events.push_back(ev);
    }
    for (ValueId v : graph_->inputs()) r->pinned.push_back(pinned(graph_->value(v).type.bytes()));
    for (ValueId v : graph_->outputs()) r->pinned.push_back(pinned(graph_->value(v).type.bytes()));
    return r;
  }

  void set_input(Request& request, size_t i, std::span<const float> data) const override {
    auto& r = static_cast<CudaRequest&>(request);
    const ir::Value& v = graph_->value(graph_->inputs()[i]);
    BRAID_CHECK(int64_t(data.size()) == v.type.elements(), ErrorCode::kInvalidArgument, "input '",
                v.name, "' needs ", v.type.elements(), " floats, got ", data.size());
    std::copy(data.begin(), data.end(), r.pinned[i]);
  }

  std::span<const float> output(const Request& request, size_t i) const override {
    const auto& r = static_cast<const CudaRequest&>(request);
    const ir::Value& v = graph_->value(graph_->outputs()[i]);
    return {r.pinned[graph_->inputs().size() + i], size_t(v.type.elements())};
  }

  size_t num_blocks() const override { return plan_.num_blocks; }
  Bytes activation_bytes() const override { return memory_.arena_bytes; }

  void run_blocks(Request& request, size_t first, size_t last, RunObserver* observer) override {
    auto& r = static_cast<CudaRequest&>(request);
    BRAID_CU(cudaSetDevice(options_.device));
    const bool whole = first == 0 && last >= plan_.num_blocks;
    // Per-unit times need events around every unit: observed runs go eagerly.
    if (options_.graph && whole && observer == nullptr) {
      if (r.graph_exec == nullptr) {
        cudaGraph_t graph;
        BRAID_CU(cudaStreamBeginCapture(r.main, cudaStreamCaptureModeThreadLocal));
        issue(r, first, last, false);
        BRAID_CU(cudaStreamEndCapture(r.main, &graph));
        const cudaError_t made = cudaGraphInstantiate(&r.graph_exec, graph, 0);
        cudaGraphDestroy(graph);
        BRAID_CU(made);
      }
      BRAID_CU(cudaGraphLaunch(r.graph_exec, r.main));
    } else {
      issue(r, first, last, observer != nullptr);
    }
    BRAID_CU(cudaStreamSynchronize(r.main));
    float ms = 0;
    BRAID_CU(cudaEventElapsedTime(&ms, r.started, r.finished));
    r.last_run_us = double(ms) * 1e3;
    if (observer == nullptr) return;
    for (const auto& [lane, unit, begin, end] : r.unit_events) {
      float b = 0, e = 0;
      BRAID_CU(cudaEventElapsedTime(&b, r.started, begin));
      BRAID_CU(cudaEventElapsedTime(&e, r.started, end));
      observer->on_unit(lane, unit, Micros(double(b) * 1e3), Micros(double(e) * 1e3));
    }
  }

 private:
  static float* pinned(Bytes bytes) {
    void* p = nullptr;
    BRAID_CU(cudaMallocHost(&p, size_t(std::max<Bytes>(bytes, 4))));
    return static_cast<float*>(p);
  }

  // Enqueues blocks [first, last): inputs in (block 0), fork to every lane, the plan's steps in
  // issue order, join, outputs out (last block).
  void issue(CudaRequest& r, size_t first, size_t last, bool time_units) const {
    std::byte* arena = r.arena.get();
    if (first == 0)
      for (size_t i = 0; i < graph_->inputs().size(); ++i)
        BRAID_CU(cudaMemcpyAsync(arena + input_offsets_[i], r.pinned[i],
                                 size_t(graph_->value(graph_->inputs()[i]).type.bytes()),
                                 cudaMemcpyHostToDevice, r.main));
    r.unit_events.clear();
    BRAID_CU(cudaEventRecord(r.started, r.main));
    BRAID_CU(cudaEventRecord(r.fork, r.main));
    for (const LaneContext& l : r.lanes) BRAID_CU(cudaStreamWaitEvent(l.stream, r.fork, 0));
    for (const sched::IssueSegment& seg : sched::issue_order(plan_, first, last)) {
      const sched::PlanLane& lane = plan_.lanes[seg.lane];
      const LaneContext& l = r.lanes[seg.lane];
      for (uint32_t s = seg.begin; s < seg.end; ++s) {
        const sched::Step& step = lane.steps[s];
        if (const auto* wait = std::get_if<sched::WaitStep>(&step)) {
          BRAID_CU(cudaStreamWaitEvent(l.stream, r.events[wait->event], 0));
        } else if (const auto* record = std::get_if<sched::RecordStep>(&step)) {
          BRAID_CU(cudaEventRecord(r.events[record->event], l.stream));
        } else {
          // Operator merges run their convolutions one after another (no merged kernel yet).
          const UnitId unit = std::get<sched::LaunchStep>(step).unit;
          cudaEvent_t begin = nullptr, end = nullptr;
          if (time_units) {
            std::tie(begin, end) = r.unit_timing_events(index(unit));
            BRAID_CU(cudaEventRecord(begin, l.stream));
          }
          for (const Op& op : unit_ops_[index(unit)]) op(l, arena);
          if (time_units) {
            BRAID_CU(cudaEventRecord(end, l.stream));
            r.unit_events.emplace_back(seg.lane, unit, begin, end);
          }
        }
      }
    }
    for (size_t i = 0; i < r.lanes.size(); ++i) {
      BRAID_CU(cudaEventRecord(r.joins[i], r.lanes[i].stream));
      BRAID_CU(cudaStreamWaitEvent(r.main, r.joins[i], 0));
    }
    BRAID_CU(cudaEventRecord(r.finished, r.main));
    if (last >= plan_.num_blocks) {
      const size_t inputs = graph_->inputs().size();
      for (size_t i = 0; i < graph_->outputs().size(); ++i)
        BRAID_CU(cudaMemcpyAsync(r.pinned[inputs + i], outputs_[i](arena),
                                 size_t(graph_->value(graph_->outputs()[i]).type.bytes()),
                                 cudaMemcpyDeviceToHost, r.main));
    }
  }

  std::shared_ptr<const ir::Graph> graph_;
  std::shared_ptr<const ir::Weights> weights_;
  const ir::UnitGraph& units_;
  const sched::ExecutionPlan& plan_;
  CudaExecutorOptions options_;
  MemoryPlan memory_;
  std::unique_ptr<Compiler> compiler_;
  std::vector<std::vector<Op>> unit_ops_;
  std::vector<int64_t> input_offsets_;
  std::vector<std::function<float*(std::byte*)>> outputs_;
};

class CudaExecutor final : public Executor {
 public:
  explicit CudaExecutor(const CudaExecutorOptions& options)
      : options_(options), name_("cuda:" + std::to_string(options.device)) {}
  std::string_view name() const override { return name_; }
  bool supports(const ir::Graph& graph, NodeId node) const override {
    const ir::Node& n = graph.node(node);
    switch (n.kind) {
      case ir::OpKind::Conv:
      case ir::OpKind::MaxPool:
      case ir::OpKind::AveragePool:
        return graph.value(n.inputs[0]).type.shape.size() == 4;
      case ir::OpKind::MatMul:
        return graph.value(n.inputs[0]).type.shape.size() >= 2 &&
               graph.value(n.inputs[1]).type.shape.size() >= 2;
      default:
        return true;
    }
  }
  std::unique_ptr<PreparedModel> prepare(const ModelBundle& model) override {
    BRAID_CHECK(model.graph && model.weights && model.units && model.plan,
                ErrorCode::kInvalidArgument,
                "cuda: a model bundle needs graph, weights, units "
                "and plan");
    for (size_t i = 0; i < model.graph->num_nodes(); ++i)
      BRAID_CHECK(supports(*model.graph, NodeId(i)), ErrorCode::kUnsupported, "cuda: op '",
                  model.graph->node(NodeId(i)).name, "' is not supported");
    for (const sched::PlanLane& lane : model.plan->lanes)
      BRAID_CHECK(lane.device == 0, ErrorCode::kInvalidArgument, "cuda: the plan uses device ",
                  lane.device, "; one process runs one device (multi-device plans run under MPI)");
    return std::make_unique<CudaPrepared>(model, options_);
  }

 private:
  CudaExecutorOptions options_;
  std::string name_;
};

}  // namespace

int cuda_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver" error
    return 0;
  }
  return n;
}

std::string cuda_unavailable_reason() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return std::string("no CUDA device (") + cudaGetErrorString(e) + ")";
  }
  return n == 0 ? "no CUDA device (none visible)" : "";
}

std::optional<double> cuda_last_run_us(const Request& request) {
  const auto* r = dynamic_cast<const CudaRequest*>(&request);
  return r != nullptr ? r->last_run_us : std::nullopt;
}

std::string cuda_device_description(int device) {
  cudaDeviceProp p{};
  BRAID_CU(cudaGetDeviceProperties(&p, device));
  int driver = 0;
  cudaDriverGetVersion(&driver);
  return std::string(p.name) + ", cc " + std::to_string(p.major) + "." + std::to_string(p.minor) +
         ", " + std::to_string(p.multiProcessorCount) + " SMs, driver " + std::to_string(driver);
}

std::unique_ptr<Executor> make_cuda_executor(const CudaExecutorOptions& options) {
  const int n = cuda_device_count();
  if (n == 0) BRAID_THROW(ErrorCode::kNotFound, cuda_unavailable_reason());
  BRAID_CHECK(options.device >= 0 && options.device < n, ErrorCode::kNotFound, "no CUDA device ",
              options.device, " (", n, " visible)");
  return std::make_unique<CudaExecutor>(options);
}

}  // namespace braid::exec
