#include "exec/cuda/cuda_compiler.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "exec/cuda/cuda_compiler_impl.h"
#include "exec/cuda/cuda_kernels.h"

// The CUDA compiler's convolutions: algorithm and layout choice, BatchNormalization folding,
// and the compiled Conv and ConvTranspose.
namespace braid::exec::cuda {
namespace {

// One line per model, precision and outcome, once per process (auto prepares a model many
// times): how many of its 16-bit convolutions run NHWC. Each one's choice is a debug line.
void log_layout_summary(const std::string& model, const std::string& precision, size_t nhwc,
                        size_t convs) {
  static std::mutex mutex;
  static std::set<std::string> logged;
  if (convs == 0) return;
  const std::string line =
      fmt::format("cuda: {} {} convolutions by measured layout: {} NHWC, {} NCHW", model, precision,
                  nhwc, convs - nhwc);
  std::lock_guard lock(mutex);
  if (logged.insert(line).second) spdlog::info("{}", line);
}

// A cuDNN algorithm is chosen once, at compile time: the fastest by cuDNN's heuristics that
// fits the workspace limit. cuDNN ranks algorithm and math type as a pair and runs an algorithm
// in the descriptor's math, so the pair's math goes on the descriptor (as PyTorch does), except
// under FP32's FMA math, which must stay (a tensor-op math there would be TF32).
template <typename Perf, typename Algo>
std::optional<std::pair<Algo, size_t>> first_fitting(const Perf* perf, int found,
                                                     int64_t workspace_limit,
                                                     cudnnConvolutionDescriptor_t c_desc) {
  cudnnMathType_t math;
  BRAID_CU(cudnnGetConvolutionMathType(c_desc, &math));
  for (int i = 0; i < found; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS && int64_t(perf[i].memory) <= workspace_limit) {
      if (math != CUDNN_FMA_MATH) BRAID_CU(cudnnSetConvolutionMathType(c_desc, perf[i].mathType));
      return std::pair<Algo, size_t>{perf[i].algo, perf[i].memory};
    }
  return std::nullopt;
}

// Measured algorithm choices, process-wide (PyTorch's benchmark cache): a convolution of the
// same shapes, parameters, storage, math and device is timed once per process, not once per
// prepare (auto prepares several plans of a model).
std::mutex conv_algo_mutex;
struct MeasuredAlgo {
  cudnnConvolutionFwdAlgo_t algo;
  size_t workspace;
  cudnnMathType_t math;
  double us;  // cuDNN's measured time
};
std::unordered_map<std::string, MeasuredAlgo> conv_algo_cache;
// Measured layout transforms (Compiler::transform_us), by shape and storage, under the same lock.
std::unordered_map<std::string, double> transform_us_cache;

}  // namespace

std::string Compiler::conv_key(const ir::Shape& x, const ir::Shape& w, const ir::ConvAttrs& a,
                               ConvLayout layout) const {
  std::string key = "x";
  for (int64_t d : x) key += " " + std::to_string(d);
  key += " w";
  for (int64_t d : w) key += " " + std::to_string(d);
  for (int64_t v : {a.pads[0], a.pads[1], a.pads[2], a.pads[3], a.stride[0], a.stride[1],
                    a.dilation[0], a.dilation[1], a.groups})
    key += " " + std::to_string(v);
  return key + " p" + std::to_string(int(options_.precision)) + " d" +
         std::to_string(options_.device) + " ws" + std::to_string(options_.workspace_bytes) + " " +
         std::string(to_string(layout));
}

// Every algorithm timed on scratch tensors, fastest first (cudnnFindConvolutionForwardAlgorithmEx,
// as PyTorch's cudnn.benchmark). FP32 keeps only FMA-math results (tensor-op ones would be TF32);
// the other precisions take any math and set the winner's on the descriptor. nullopt when the
// search fails or nothing fits: the caller falls back to the heuristic.
std::optional<Compiler::ConvAlgo> Compiler::measured_conv_algo(
    const std::string& key, cudnnTensorDescriptor_t x_desc, cudnnFilterDescriptor_t w_desc,
    const std::byte* w_dev, cudnnConvolutionDescriptor_t c_desc, cudnnTensorDescriptor_t y_desc,
    const ir::Shape& xs, const ir::Shape& ys) {
  std::lock_guard lock(conv_algo_mutex);
  if (auto it = conv_algo_cache.find(key); it != conv_algo_cache.end()) {
    BRAID_CU(cudnnSetConvolutionMathType(c_desc, it->second.math));
    return ConvAlgo{it->second.algo, it->second.workspace, it->second.us};
  }
  cudnnMathType_t math;
  BRAID_CU(cudnnGetConvolutionMathType(c_desc, &math));
  const int64_t x_elements = ir::num_elements(xs);
  DeviceBuffer fx(size_t(x_elements * esize_)), fy(size_t(ir::num_elements(ys) * esize_)),
      fws(size_t(options_.workspace_bytes));
  BRAID_CU(cudaMemset(fx.get(), 0, size_t(x_elements * esize_)));
  cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  int found = 0;
  if (cudnnFindConvolutionForwardAlgorithmEx(
          cudnn_, x_desc, fx.get(), w_desc, w_dev, c_desc, y_desc, fy.get(),
          CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &found, perf, fws.get(),
          size_t(options_.workspace_bytes)) != CUDNN_STATUS_SUCCESS) {
    cudaGetLastError();  // the search's failure is not the run's
    return std::nullopt;
  }
  int kept = 0;
  for (int i = 0; i < found; ++i)
    if (math != CUDNN_FMA_MATH || perf[i].mathType == CUDNN_FMA_MATH) perf[kept++] = perf[i];
  for (int i = 0; i < kept; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS &&
        int64_t(perf[i].memory) <= options_.workspace_bytes) {
      BRAID_CU(cudnnSetConvolutionMathType(c_desc, perf[i].mathType));
      const double us = double(perf[i].time) * 1e3;
      conv_algo_cache.emplace(key,
                              MeasuredAlgo{perf[i].algo, perf[i].memory, perf[i].mathType, us});
      return ConvAlgo{perf[i].algo, perf[i].memory, us};
    }
  return std::nullopt;
}

Compiler::ConvChain Compiler::match_conv(std::span<const NodeId> ops) const {
  const ir::Node& conv = g_.node(ops[0]);
  ConvChain chain{.used = 1, .y = conv.outputs[0]};
  // The unit's next op when it reads the chain's output and nothing else does.
  auto next = [&]() -> const ir::Node* {
    if (chain.used >= ops.size() || !single_consumer(chain.y)) return nullptr;
    const ir::Node& n = g_.node(ops[chain.used]);
    return std::count(n.inputs.begin(), n.inputs.end(), chain.y) == 1 ? &n : nullptr;
  };
  auto take = [&](const ir::Node* n) {
    chain.y = n->outputs[0];
    ++chain.used;
    return n;
  };
  auto activation = [&]() -> const ir::Node* {
    const ir::Node* n = next();
    return n != nullptr && ir::is_activation(n->kind) && n->inputs[0] == chain.y ? take(n)
                                                                                 : nullptr;
  };
  // A Conv applying its own activation (ConvAttrs::activation) ends there for a
  // BatchNormalization: folded into the weights, it would compute act(BN(conv)), not BN(act(conv)).
  const bool own_activation = unary_of(std::get<ir::ConvAttrs>(conv.attrs).activation).has_value();
  if (const ir::Node* n = next(); !own_activation && n != nullptr &&
                                  n->kind == ir::OpKind::BatchNormalization &&
                                  n->inputs[0] == chain.y)
    take(n);
  if (!own_activation) chain.activation = activation();
  // A residual Add of another activation of the same shape and type, not broadcast.
  const ir::Node* n = next();
  if (n != nullptr && n->kind == ir::OpKind::Add) {
    const std::optional<ValueId> z = ir::other_input(*n, chain.y);
    if (z && g_.value(*z).kind == ir::ValueKind::kActivation &&
        g_.value(*z).type == g_.value(chain.y).type) {
      chain.residual = *z;
      take(n);
      chain.after = activation();
    }
  }
  return chain;
}

std::optional<double> Compiler::conv_us(const ir::Node& conv, ConvLayout layout) {
  const auto& a = std::get<ir::ConvAttrs>(conv.attrs);
  const ir::Shape& xs = shape(conv.inputs[0]);
  const ir::Shape& ws = shape(conv.inputs[1]);
  const ir::Shape& ys = shape(conv.outputs[0]);
  const cudnnTensorFormat_t f = layout == ConvLayout::kNhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  const auto [w_desc, c_desc] =
      conv_descriptors(ws, a.pads[0], a.pads[1], a.stride, a.dilation, a.groups, f);
  const size_t w_bytes = size_t(ir::num_elements(ws) * esize_);
  DeviceBuffer w(w_bytes);  // the time does not depend on the values
  BRAID_CU(cudaMemset(w.get(), 0, w_bytes));
  const auto algo =
      measured_conv_algo(conv_key(xs, ws, a, layout), tensor4(xs[0], xs[1], xs[2], xs[3], f),
                         w_desc, w.get(), c_desc, tensor4(ys[0], ys[1], ys[2], ys[3], f), xs, ys);
  if (!algo) return std::nullopt;
  return algo->us;
}

double Compiler::transform_us(const ir::Shape& s) {
  std::string key = "t" + std::to_string(int(elem_)) + " d" + std::to_string(options_.device);
  for (int64_t d : s) key += " " + std::to_string(d);
  std::lock_guard lock(conv_algo_mutex);
  if (auto it = transform_us_cache.find(key); it != transform_us_cache.end()) return it->second;
  const size_t bytes = size_t(ir::num_elements(s) * esize_);
  DeviceBuffer from(bytes), to(bytes);
  BRAID_CU(cudaMemset(from.get(), 0, bytes));
  cudnnTensorDescriptor_t nchw = tensor4(s[0], s[1], s[2], s[3]),
                          nhwc = tensor4(s[0], s[1], s[2], s[3], CUDNN_TENSOR_NHWC);
  cudaEvent_t begin, end;
  BRAID_CU(cudaEventCreate(&begin));
  BRAID_CU(cudaEventCreate(&end));
  constexpr int kRuns = 10;
  const float one = 1.0f, zero = 0.0f;
  cudaStream_t stream = nullptr;
  BRAID_CU(cudnnGetStream(cudnn_, &stream));
  cudnnStatus_t st = cudnnTransformTensor(cudnn_, &one, nchw, from.get(), &zero, nhwc, to.get());
  BRAID_CU(cudaEventRecord(begin, stream));
  for (int i = 0; i < kRuns && st == CUDNN_STATUS_SUCCESS; ++i)
    st = cudnnTransformTensor(cudnn_, &one, nchw, from.get(), &zero, nhwc, to.get());
  BRAID_CU(cudaEventRecord(end, stream));
  BRAID_CU(cudaEventSynchronize(end));
  float ms = 0;
  BRAID_CU(cudaEventElapsedTime(&ms, begin, end));
  cudaEventDestroy(begin);
  cudaEventDestroy(end);
  BRAID_CU(st);
  const double us = double(ms) * 1e3 / kRuns;
  transform_us_cache.emplace(key, us);
  return us;
}

void Compiler::choose_conv_layouts(const ir::UnitGraph& units) {
  conv_sites_.clear();
  site_of_conv_.clear();
  if (elem_ == Elem::kF32) return;  // FP32 and TF32: NCHW, as before
  for (size_t u = 0; u < units.num_units(); ++u) {
    const std::span<const NodeId> ops = units.unit(UnitId(u)).ops;
    for (size_t i = 0; i < ops.size(); ++i) {
      const ir::Node& n = g_.node(ops[i]);
      if (n.kind != ir::OpKind::Conv) continue;
      const ConvChain chain = match_conv(ops.subspan(i));
      ConvSite site{
          .conv = ops[i], .x = n.inputs[0], .y = chain.y, .residual = chain.residual.has_value()};
      const auto& a = std::get<ir::ConvAttrs>(n.attrs);
      const bool symmetric = a.pads[0] == a.pads[2] && a.pads[1] == a.pads[3];
      if (shape(n.inputs[0]).size() == 4 && symmetric &&
          options_.conv_layout != ConvLayoutMode::kNchw) {
        const std::optional<double> nhwc = conv_us(n, ConvLayout::kNhwc);
        site.nhwc_ok = nhwc.has_value();
        if (site.nhwc_ok && options_.conv_layout == ConvLayoutMode::kMeasure) {
          site.nhwc_us = *nhwc;
          site.nchw_us =
              conv_us(n, ConvLayout::kNchw).value_or(std::numeric_limits<double>::infinity());
          site.x_transform_us = transform_us(shape(site.x));
          site.y_transform_us = transform_us(shape(site.y));
        }
      }
      site_of_conv_[index(ops[i])] = conv_sites_.size();
      conv_sites_.push_back(site);
      i += chain.used - 1;
    }
  }
  conv_layouts_ = cuda::choose_conv_layouts(g_, conv_sites_, options_.conv_layout);
  size_t nhwc = 0;
  for (size_t i = 0; i < conv_sites_.size(); ++i) {
    const ConvSite& c = conv_sites_[i];
    nhwc += conv_layouts_.layout[i] == ConvLayout::kNhwc;
    spdlog::debug(
        "cuda: Conv '{}' runs {} (measured NCHW {:.1f} us, NHWC {:.1f} us, transforms "
        "{:.1f} + {:.1f} us)",
        g_.node(c.conv).name, to_string(conv_layouts_.layout[i]), c.nchw_us, c.nhwc_us,
        c.x_transform_us, c.y_transform_us);
  }
  log_layout_summary(g_.name(), to_string(options_.precision), nhwc, conv_sites_.size());
}

std::pair<cudnnFilterDescriptor_t, cudnnConvolutionDescriptor_t> Compiler::conv_descriptors(
    const ir::Shape& ws, int64_t pad_h, int64_t pad_w, const std::array<int64_t, 2>& stride,
    const std::array<int64_t, 2>& dilation, int64_t groups, cudnnTensorFormat_t format) {
  cudnnFilterDescriptor_t w_desc;
  BRAID_CU(cudnnCreateFilterDescriptor(&w_desc));
  filter_descs_.push_back(w_desc);
  BRAID_CU(cudnnSetFilter4dDescriptor(w_desc, cudnn_type(elem_), format, int(ws[0]), int(ws[1]),
                                      int(ws[2]), int(ws[3])));
  cudnnConvolutionDescriptor_t c_desc;
  BRAID_CU(cudnnCreateConvolutionDescriptor(&c_desc));
  conv_descs_.push_back(c_desc);
  BRAID_CU(cudnnSetConvolution2dDescriptor(c_desc, int(pad_h), int(pad_w), int(stride[0]),
                                           int(stride[1]), int(dilation[0]), int(dilation[1]),
                                           CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  BRAID_CU(cudnnSetConvolutionGroupCount(c_desc, int(groups)));
  // FP32 FMA unless asked otherwise: outputs stay comparable with the CPU executor. The
  // accumulation stays FP32 in every precision (cuDNN's PSEUDO_HALF/PSEUDO_BFLOAT16 configs).
  const cudnnMathType_t math = options_.precision == Precision::kFp32   ? CUDNN_FMA_MATH
                               : options_.precision == Precision::kTf32 ? CUDNN_DEFAULT_MATH
                                                                        : CUDNN_TENSOR_OP_MATH;
  BRAID_CU(cudnnSetConvolutionMathType(c_desc, math));
  return {w_desc, c_desc};
}

std::pair<cudnnConvolutionFwdAlgo_t, size_t> Compiler::conv_algo(
    const std::string& key, cudnnTensorDescriptor_t x_desc, cudnnFilterDescriptor_t w_desc,
    const std::byte* w_dev, cudnnConvolutionDescriptor_t c_desc, cudnnTensorDescriptor_t y_desc,
    const ir::Shape& xs, const ir::Shape& ys, const std::string& name) {
  std::optional<std::pair<cudnnConvolutionFwdAlgo_t, size_t>> algo;
  // 16-bit convolutions were timed for their layout: they run the measured algorithm.
  if (options_.measure_conv_algos || !conv_sites_.empty())
    if (const auto m = measured_conv_algo(key, x_desc, w_desc, w_dev, c_desc, y_desc, xs, ys))
      algo = std::pair{m->algo, m->workspace};
  if (!algo) {  // the heuristic's first that fits
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int found = 0;
    BRAID_CU(cudnnGetConvolutionForwardAlgorithm_v7(
        cudnn_, x_desc, w_desc, c_desc, y_desc, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &found, perf));
    algo = first_fitting<cudnnConvolutionFwdAlgoPerf_t, cudnnConvolutionFwdAlgo_t>(
        perf, found, options_.workspace_bytes, c_desc);
  }
  BRAID_CHECK(algo.has_value(), ErrorCode::kUnsupported, "cuda: no cuDNN algorithm for Conv '",
              name, "' within ", options_.workspace_bytes, " bytes of workspace");
  return *algo;
}

cudnnActivationDescriptor_t Compiler::activation_descriptor(cudnnActivationMode_t mode) {
  cudnnActivationDescriptor_t act_desc = nullptr;
  BRAID_CU(cudnnCreateActivationDescriptor(&act_desc));
  activation_descs_.push_back(act_desc);
  BRAID_CU(cudnnSetActivationDescriptor(act_desc, mode, CUDNN_PROPAGATE_NAN, 0.0));
  return act_desc;
}

// The fused call takes its bias in the output's type. Where cuDNN may refuse the configuration
// or compute something else it is tried once here on values whose result is known: x = 0 (so
// the convolution gives 0 whatever the filter), the bias b, z = 0.25, y first all 3 (so an
// output left unwritten shows). Without a residual z is y itself with alpha2 = 0, as the run
// passes it (as PyTorch's conv+ReLU does): y then holds the arena's old, finite values, which
// alpha2 = 0 cancels whether or not cuDNN reads them, so the probe's y is finite too (a NaN
// there would reject a call that is right at run time). Every output must be act(b [+ 0.25]);
// otherwise the conv runs as Forward + our bias/activation kernel.
bool Compiler::fused_call_runs(cudnnTensorDescriptor_t x_desc, cudnnFilterDescriptor_t w_desc,
                               const std::byte* w_dev, cudnnConvolutionDescriptor_t c_desc,
                               cudnnConvolutionFwdAlgo_t algo, size_t workspace,
                               cudnnTensorDescriptor_t y_desc, cudnnTensorDescriptor_t b_desc,
                               cudnnActivationDescriptor_t act_desc, bool relu, const ir::Shape& xs,
                               const ir::Shape& ys, bool add_z) {
  if (elem_ == Elem::kF32 && relu && !add_z) return true;
  // cuDNN documents the identity activation for this one algorithm only, and other libraries
  // (OpenVINO's NVIDIA plugin) found it computing wrong results with the others.
  if (!relu && algo != CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM) return false;
  // A negative bias tells identity from ReLU; a positive one that the bias and z are added.
  const float b = relu ? 1.0f : -1.0f, z = 0.25f;
  const float expected = b + (add_z ? z : 0.0f);  // exact in 16 bits, unchanged by the ReLU
  const int64_t x_elements = ir::num_elements(xs), y_elements = ir::num_elements(ys);
  DeviceBuffer px(size_t(x_elements * esize_)), pws(std::max<size_t>(workspace, 256));
  BRAID_CU(cudaMemset(px.get(), 0, size_t(x_elements * esize_)));
  DeviceBuffer py = upload_as(std::vector<float>(size_t(y_elements), 3.0f), elem_);
  const DeviceBuffer pb = upload_as(std::vector<float>(size_t(ys[1]), b), elem_);
  const DeviceBuffer pz =
      add_z ? upload_as(std::vector<float>(size_t(y_elements), z), elem_) : DeviceBuffer();
  const float one = 1.0f, zero = 0.0f;
  const cudnnStatus_t st = cudnnConvolutionBiasActivationForward(
      cudnn_, &one, x_desc, px.get(), w_desc, w_dev, c_desc, algo, pws.get(), workspace,
      add_z ? &one : &zero, y_desc, add_z ? pz.get() : py.get(), b_desc, pb.get(), act_desc, y_desc,
      py.get());
  if (!ran_on_device(st == CUDNN_STATUS_SUCCESS)) return false;
  const std::vector<float> y = download_as(py.get(), y_elements, elem_);
  const bool right = std::all_of(y.begin(), y.end(), [&](float v) { return v == expected; });
  if (!right)
    spdlog::debug("cuda: cuDNN's fused convolution (algorithm {}) computed a wrong probe: {}",
                  int(algo), y.empty() ? 0.0f : y.front());
  return right;
}

std::pair<std::vector<float>, std::vector<float>> Compiler::folded_conv(std::span<const NodeId> ops,
                                                                        size_t used) const {
  const ir::Node& conv = g_.node(ops[0]);
  const int64_t oc = shape(conv.inputs[1])[0];
  const auto given_w = host(conv.inputs[1], "Conv weight");
  std::vector<float> w(given_w.begin(), given_w.end());
  std::vector<float> bias(size_t(oc), 0.0f);
  if (conv.inputs.size() > 2) {
    auto b = host(conv.inputs[2], "Conv bias");
    std::copy(b.begin(), b.end(), bias.begin());
  }
  if (used > 1 && g_.node(ops[1]).kind == ir::OpKind::BatchNormalization) {
    const ir::Node& bn = g_.node(ops[1]);
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
  }
  return {std::move(w), std::move(bias)};
}

std::vector<float> Compiler::to_krsc(std::span<const float> w, const ir::Shape& ws) {
  const int64_t oc = ws[0], c = ws[1], rs = ws[2] * ws[3];
  std::vector<float> krsc(w.size());
  for (int64_t k = 0; k < oc; ++k)
    for (int64_t ci = 0; ci < c; ++ci)
      for (int64_t p = 0; p < rs; ++p) krsc[(k * rs + p) * c + ci] = w[(k * c + ci) * rs + p];
  return krsc;
}

// Conv [BatchNormalization] [activation (ir::is_activation)]: returns how many ops it consumed.
// In the layout choose_conv_layouts chose: NHWC reads x and writes y through scratch where they
// are stored NCHW (cudnnTransformTensor), and takes its filter as [K, R, S, C/groups].
size_t Compiler::compile_conv(std::span<const NodeId> ops, std::vector<Op>& out) {
  const ir::Node& conv = g_.node(ops[0]);
  const auto& a = std::get<ir::ConvAttrs>(conv.attrs);
  const ir::Shape& xs = shape(conv.inputs[0]);
  const ir::Shape& ws = shape(conv.inputs[1]);
  BRAID_CHECK(xs.size() == 4, ErrorCode::kUnsupported, "cuda: Conv '", conv.name, "' is not 2-D");
  const ConvChain chain = match_conv(ops);
  const size_t used = chain.used;
  const ValueId y = chain.y;
  const int64_t oc = ws[0];
  auto [w, bias] = folded_conv(ops, used);
  const std::optional<cuda::UnaryOp> activation =
      chain.activation != nullptr ? unary_of(chain.activation->kind, chain.activation->attrs)
                                  : unary_of(a.activation);
  const std::optional<cuda::UnaryOp> after =
      chain.after != nullptr ? std::optional(unary_of(chain.after->kind, chain.after->attrs))
                             : std::nullopt;
  const bool residual = chain.residual.has_value();
  const ir::Shape& ys = shape(y);
  const bool has_bias = conv.inputs.size() > 2 || used > 1;

  const auto site = site_of_conv_.find(index(ops[0]));
  const bool nhwc =
      site != site_of_conv_.end() && conv_layouts_.layout[site->second] == ConvLayout::kNhwc;
  const ConvLayout layout = nhwc ? ConvLayout::kNhwc : ConvLayout::kNchw;
  const bool x_nhwc = nhwc && conv_layouts_.stored_nhwc(conv.inputs[0]);
  const bool y_nhwc = nhwc && conv_layouts_.stored_nhwc(y);
  BRAID_ASSERT(!(residual && y_nhwc), "cuda: a residual convolution's output stored NHWC");
  // A value lying in another's storage (a Concat's window) is read through that one's NCHW
  // layout: conv_layout.h stores NHWC only what NHWC convolutions alone read, which a Concat is
  // not, so this holds by construction; checked because a window would be silently wrong.
  BRAID_ASSERT(!y_nhwc || memory_.storage_of.empty() || memory_.storage_of[index(y)] == y,
               "cuda: an NHWC value placed in another value's storage");
  const cudnnTensorFormat_t format = nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  if (nhwc) w = to_krsc(w, ws);

  // cuDNN pads symmetrically: asymmetric pads go through an explicit Pad into scratch (NCHW
  // only: choose_conv_layouts keeps those convolutions NCHW).
  const bool symmetric = a.pads[0] == a.pads[2] && a.pads[1] == a.pads[3];
  ir::Shape padded = xs;
  if (!symmetric) {
    padded[2] += a.pads[0] + a.pads[2];
    padded[3] += a.pads[1] + a.pads[3];
  }
  cudnnTensorDescriptor_t x_desc = tensor4(padded[0], padded[1], padded[2], padded[3], format);
  cudnnTensorDescriptor_t y_desc = tensor4(ys[0], ys[1], ys[2], ys[3], format);
  cudnnTensorDescriptor_t b_desc = tensor4(1, oc, 1, 1, format);
  // The NCHW views of an NHWC convolution's x and y where those are stored NCHW.
  cudnnTensorDescriptor_t x_nchw = nhwc && !x_nhwc ? tensor4(xs[0], xs[1], xs[2], xs[3]) : nullptr;
  cudnnTensorDescriptor_t y_nchw = nhwc && !y_nhwc ? tensor4(ys[0], ys[1], ys[2], ys[3]) : nullptr;
  const auto [w_desc, c_desc] =
      conv_descriptors(ws, symmetric ? a.pads[0] : 0, symmetric ? a.pads[1] : 0, a.stride,
                       a.dilation, a.groups, format);
  int n = 0, c = 0, h = 0, wd = 0;
  BRAID_CU(cudnnGetConvolution2dForwardOutputDim(c_desc, x_desc, w_desc, &n, &c, &h, &wd));
  BRAID_CHECK(n == ys[0] && c == ys[1] && h == ys[2] && wd == ys[3], ErrorCode::kInternal,
              "cuda: cuDNN's output shape of Conv '", conv.name, "' differs from the graph's");

  // cuDNN's fused call: the bias, a residual z, then ReLU or identity. It takes a residual only
  // with no activation before the Add and y computed as stored (NCHW: a residual's z and y are
  // never stored NHWC, conv_layout.h); identity (a bias and no activation: ResNet's downsample
  // convolutions, MobileNet's linear bottlenecks) only where cuDNN accepts it.
  const std::optional<cuda::UnaryOp> last = residual ? after : activation;
  const bool relu = last && last->kind == cuda::Unary::kRelu;
  bool fused = residual ? !activation && !nhwc && (relu || !last) : relu || (!last && has_bias);
  std::byte* w_dev = keep_as(w, elem_);
  const auto algo = conv_algo(conv_key(padded, ws, a, layout), x_desc, w_desc, w_dev, c_desc,
                              y_desc, padded, ys, conv.name);
  const cudnnConvolutionFwdAlgo_t chosen = algo.first;
  const size_t workspace = algo.second;
  // Scratch after the workspace: the padded input (NCHW), or an NHWC convolution's x and y
  // where those are stored NCHW.
  const int64_t workspace_aligned = (int64_t(workspace) + 255) / 256 * 256;
  const int64_t x_scratch_bytes =
      (symmetric && !x_nchw ? 0 : ir::num_elements(padded) * esize_ + 255) / 256 * 256;
  const int64_t y_scratch_bytes = y_nchw ? ir::num_elements(ys) * esize_ : 0;
  scratch_bytes_ = std::max(scratch_bytes_, workspace_aligned + x_scratch_bytes + y_scratch_bytes);

  cudnnActivationDescriptor_t act_desc =
      fused ? activation_descriptor(relu ? CUDNN_ACTIVATION_RELU : CUDNN_ACTIVATION_IDENTITY)
            : nullptr;
  if (fused)
    fused = fused_call_runs(x_desc, w_desc, w_dev, c_desc, chosen, workspace, y_desc, b_desc,
                            act_desc, relu, padded, ys, residual);
  // A residual cuDNN did not fuse: the convolution alone, then one channel_affine on the stored
  // (NCHW) y with the bias, the activation, z and the activation after it.
  const bool tail = residual && !fused;
  // Fused: the bias in elem() for cuDNN; otherwise FP32 for channel_affine.
  std::byte* b_dev = fused ? keep_as(bias, elem_) : keep_as(bias, Elem::kF32);
  const float* tail_bias = tail ? reinterpret_cast<const float*>(b_dev) : nullptr;
  const Locator z = residual ? locate(*chain.residual) : Locator{};
  const Elem e = elem_;
  auto x = locate(conv.inputs[0]);
  auto out_ptr = locate(y);
  Strided x_layout = row_major(xs), padded_layout = row_major(padded);
  std::array<int64_t, 4> pads_begin{0, 0, a.pads[0], a.pads[1]};
  const ConvLaunch launch{.x_desc = x_desc,
                          .y_desc = y_desc,
                          .b_desc = b_desc,
                          .w_desc = w_desc,
                          .c_desc = c_desc,
                          .algo = chosen,
                          .workspace = workspace,
                          .w_dev = w_dev,
                          .fused = fused,
                          .add_z = residual && fused,
                          .act_desc = act_desc,
                          .b_dev = !tail && (fused || has_bias) ? b_dev : nullptr,
                          .activation = tail || fused ? std::nullopt : activation,
                          .elem = e,
                          // channel_affine's view: [N][C][H*W], or [N*H*W][C][1] in NHWC.
                          .outer = nhwc ? ys[0] * ys[2] * ys[3] : ys[0],
                          .channels = ys[1],
                          .inner = nhwc ? 1 : ys[2] * ys[3]};
  out.push_back([=](const LaneContext& lane, std::byte* arena) {
    const float one = 1.0f, zero = 0.0f;
    const std::byte* src = x(arena);
    std::byte* x_scratch = lane.workspace + workspace_aligned;
    if (!symmetric) {
      cuda::pad(e, x_scratch, padded_layout, src, x_layout, pads_begin.data(), 0.0f, lane.stream);
      src = x_scratch;
    } else if (x_nchw != nullptr) {
      BRAID_CU(cudnnTransformTensor(lane.cudnn, &one, x_nchw, src, &zero, x_desc, x_scratch));
      src = x_scratch;
    }
    std::byte* stored = out_ptr(arena);
    std::byte* dst = y_nchw != nullptr ? x_scratch + x_scratch_bytes : stored;
    const std::byte* z_ptr = z ? z(arena) : nullptr;
    launch.run(lane, src, dst, z_ptr);
    if (y_nchw != nullptr)
      BRAID_CU(cudnnTransformTensor(lane.cudnn, &one, y_desc, dst, &zero, y_nchw, stored));
    if (tail)
      cuda::channel_affine(e, stored, stored, nullptr, tail_bias, ys[0], ys[1], ys[2] * ys[3],
                           activation.value_or(cuda::Unary::kCopy), activation.has_value(),
                           lane.stream,
                           {.z = z_ptr,
                            .after = after.value_or(cuda::Unary::kCopy),
                            .has_after = after.has_value()});
  });
  return used;
}

// ConvTranspose is the data gradient of the Conv that maps its output back to its input:
// cudnnConvolutionBackwardData with that Conv's pads, strides, dilations and groups. Its filter
// [K = IC, C = OC/groups, R, S] is ONNX's ConvTranspose weight layout as it stands, and dx is
// the output. cuDNN pads symmetrically and needs the forward Conv of dx to give back the input's
// shape (output_padding < stride does; PyTorch's cuDNN ConvTranspose relies on it). Otherwise
// (asymmetric pads, a negative end pad from output_shape, output_padding >= stride) cuDNN
// computes the unpadded output, s * (in - 1) + d * (k - 1) + 1 per axis, into scratch, and a
// crop copies the window starting at the begin pads out (zeros past its end: bias only).
void Compiler::compile_conv_transpose(const ir::Node& n, std::vector<Op>& out) {
  const auto& a = std::get<ir::ConvTransposeAttrs>(n.attrs);
  const ir::Shape& xs = shape(n.inputs[0]);
  const ir::Shape& ws = shape(n.inputs[1]);  // [IC, OC/groups, KH, KW]
  const ir::Shape& ys = shape(n.outputs[0]);
  BRAID_CHECK(xs.size() == 4 && ys.size() == 4, ErrorCode::kUnsupported, "cuda: ConvTranspose '",
              n.name, "' is not 2-D");
  bool direct = a.pads[0] == a.pads[2] && a.pads[1] == a.pads[3];
  ir::Shape full = ys;  // what cuDNN computes
  for (int i = 0; i < 2; ++i) {
    const int64_t span = a.dilation[i] * (ws[2 + i] - 1) + 1;
    const int64_t padded = ys[2 + i] + 2 * a.pads[i] - span;
    direct = direct && padded >= 0 && padded / a.stride[i] + 1 == xs[2 + i];
    full[2 + i] = a.stride[i] * (xs[2 + i] - 1) + span;
  }
  if (direct) full = ys;

  cudnnTensorDescriptor_t x_desc = tensor4(xs[0], xs[1], xs[2], xs[3]);  // the forward Conv's dy
  cudnnTensorDescriptor_t full_desc = tensor4(full[0], full[1], full[2], full[3]);  // its dx
  // Not a structured binding: the run lambda captures both, which clang before 16 refuses.
  cudnnFilterDescriptor_t w_desc;
  cudnnConvolutionDescriptor_t c_desc;
  std::tie(w_desc, c_desc) = conv_descriptors(ws, direct ? a.pads[0] : 0, direct ? a.pads[1] : 0,
                                              a.stride, a.dilation, a.groups);
  int dn = 0, dc = 0, dh = 0, dw = 0;
  BRAID_CU(cudnnGetConvolution2dForwardOutputDim(c_desc, full_desc, w_desc, &dn, &dc, &dh, &dw));
  BRAID_CHECK(dn == xs[0] && dc == xs[1] && dh == xs[2] && dw == xs[3], ErrorCode::kInternal,
              "cuda: the Conv behind ConvTranspose '", n.name, "' does not give back its input ",
              ir::to_string(xs));

  cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
  int found = 0;
  BRAID_CU(cudnnGetConvolutionBackwardDataAlgorithm_v7(cudnn_, w_desc, x_desc, c_desc, full_desc,
                                                       CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
                                                       &found, perf));
  const auto algo = first_fitting<cudnnConvolutionBwdDataAlgoPerf_t, cudnnConvolutionBwdDataAlgo_t>(
      perf, found, options_.workspace_bytes, c_desc);
  BRAID_CHECK(algo.has_value(), ErrorCode::kUnsupported,
              "cuda: no cuDNN algorithm for ConvTranspose '", n.name, "' within ",
              options_.workspace_bytes, " bytes of workspace");
  const auto chosen = algo->first;
  const size_t workspace = algo->second;
  const int64_t workspace_aligned = (int64_t(workspace) + 255) / 256 * 256;
  const int64_t full_bytes = direct ? 0 : ir::num_elements(full) * esize_;
  scratch_bytes_ = std::max(scratch_bytes_, workspace_aligned + full_bytes);

  auto x = locate(n.inputs[0]);
  auto w = locate(n.inputs[1]);
  const float* bias = n.inputs.size() > 2 ? keep_f32(host(n.inputs[2], "ConvTranspose bias"))
                                          : nullptr;  // FP32 for channel_affine
  auto y = locate(n.outputs[0]);
  const Elem e = elem_;
  const Strided y_layout = row_major(ys), full_layout = row_major(full);
  const std::array<int64_t, 4> crop_begin{0, 0, -a.pads[0], -a.pads[1]};
  const int64_t batch = ys[0], channels = ys[1], inner = ys[2] * ys[3];
  out.push_back([=](const LaneContext& lane, std::byte* arena) {
    std::byte* dst = y(arena);
    std::byte* dx = direct ? dst : lane.workspace + workspace_aligned;
    const float one = 1.0f, zero = 0.0f;
    BRAID_CU(cudnnConvolutionBackwardData(lane.cudnn, &one, w_desc, w(arena), x_desc, x(arena),
                                          c_desc, chosen, lane.workspace, workspace, &zero,
                                          full_desc, dx));
    if (!direct) cuda::pad(e, dst, y_layout, dx, full_layout, crop_begin.data(), 0.0f, lane.stream);
    if (bias != nullptr)
      cuda::channel_affine(e, dst, dst, nullptr, bias, batch, channels, inner, cuda::Unary::kCopy,
                           false, lane.stream);
  });
}

}  // namespace braid::exec::cuda
