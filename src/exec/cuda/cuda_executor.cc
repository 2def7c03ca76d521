#include "exec/cuda/cuda_executor.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <shared_mutex>
#include <variant>

#include "base/error.h"
#include "exec/cuda/cuda_check.h"
#include "exec/cuda/cuda_compiler.h"
#include "exec/cuda/cuda_kernels.h"
#include "exec/cuda/cuda_request.h"
#include "exec/cuda/issue_program.h"

namespace braid::exec {
namespace {

using cuda::Command;
using cuda::CudaRequest;

class CudaPrepared final : public PreparedModel {
 public:
  CudaPrepared(const ModelBundle& model, const CudaExecutorOptions& options)
      : graph_(model.graph),
        weights_(model.weights),
        units_(*model.units),
        plan_(*model.plan),
        options_(options),
        compiled_(*graph_, *weights_, units_, plan_, options_) {
    for (ValueId v : graph_->inputs()) input_offsets_.push_back(compiled_.memory.offset[index(v)]);
    for (ValueId v : graph_->outputs()) outputs_.push_back(compiled_.compiler->locate(v));
    // The interface takes and gives floats, and float16/bfloat16 where the caller exchanges a
    // float value so (ModelBundle's types). An input or output taken or given in a type other
    // than its storage (16-bit storage, int64, bool; or an FP16 model's input in an FP32 plan)
    // passes through a window of the request's staging buffer, converted on the device.
    auto add = [&](ValueId v, std::span<const models::ElementType> types, size_t i, bool input) {
      const cuda::Elem e = compiled_.compiler->storage_of(v);
      const cuda::Elem x = i < types.size() && graph_->value(v).type.dtype == ir::DType::kFloat32
                               ? exchanged(types[i])
                               : cuda::Elem::kF32;
      elems_.push_back(e);
      exchanged_.push_back(x);
      staging_offsets_.push_back(staging_bytes_);
      // An input may come as floats (set_input) or in its exchanged type (set_input_bytes).
      if (e != x || (input && e != cuda::Elem::kF32))
        staging_bytes_ += (float_bytes(v) + 255) / 256 * 256;
    };
    for (size_t i = 0; i < graph_->inputs().size(); ++i)
      add(graph_->inputs()[i], model.input_types, i, true);
    for (size_t i = 0; i < graph_->outputs().size(); ++i)
      add(graph_->outputs()[i], model.output_types, i, false);
  }

  std::unique_ptr<Request> new_request() const override {
    std::unique_lock lock(cuda::device_sync_mutex());  // its allocations and handles
    cuda::RequestLayout layout{.device = options_.device,
                               .arena_bytes = compiled_.memory.arena_bytes,
                               .scratch_bytes = compiled_.compiler->scratch_bytes(),
                               .num_lanes = plan_.lanes.size(),
                               .num_events = plan_.num_events,
                               .precision = options_.precision,
                               .num_inputs = graph_->inputs().size(),
                               .staging_bytes = staging_bytes_};
    for (ValueId v : graph_->inputs()) layout.pinned_bytes.push_back(float_bytes(v));
    for (ValueId v : graph_->outputs()) layout.pinned_bytes.push_back(float_bytes(v));
    return std::make_unique<CudaRequest>(layout);
  }

  void set_input(Request& request, size_t i, std::span<const float> data) const override {
    auto& r = static_cast<CudaRequest&>(request);
    const ir::Value& v = graph_->value(graph_->inputs()[i]);
    BRAID_CHECK(int64_t(data.size()) == v.type.elements(), ErrorCode::kInvalidArgument, "input '",
                v.name, "' needs ", v.type.elements(), " floats, got ", data.size());
    std::copy(data.begin(), data.end(), r.pinned[i]);
    r.given[i] = cuda::Elem::kF32;
  }

  // The bytes go to the device as they are: into the arena where the plan stores the input in
  // that type, else through staging and a conversion kernel.
  bool set_input_bytes(Request& request, size_t i, models::ElementType type,
                       std::span<const std::byte> bytes) const override {
    const cuda::Elem x = exchanged_[i];
    if (x == cuda::Elem::kF32 || x != exchanged(type)) return false;
    auto& r = static_cast<CudaRequest&>(request);
    const ir::Value& v = graph_->value(graph_->inputs()[i]);
    const auto want = size_t(v.type.elements() * cuda::elem_bytes(x));
    BRAID_CHECK(bytes.size() == want, ErrorCode::kInvalidArgument, "input '", v.name, "' needs ",
                want, " bytes of ", models::to_string(type), ", got ", bytes.size());
    std::memcpy(r.pinned[i], bytes.data(), want);
    r.given[i] = x;
    return true;
  }

  std::span<const float> output(const Request& request, size_t i) const override {
    const auto& r = static_cast<const CudaRequest&>(request);
    const size_t k = graph_->inputs().size() + i;
    const auto n = size_t(graph_->value(graph_->outputs()[i]).type.elements());
    if (exchanged_[k] == cuda::Elem::kF32) return {r.pinned[k], n};
    // Given in 16 bits: widened (exactly) only for a caller that asks for floats.
    std::vector<float>& wide = r.widened[i];
    wide.resize(n);
    models::load_floats(cuda::element_type(exchanged_[k]),
                        reinterpret_cast<const std::byte*>(r.pinned[k]), wide);
    return wide;
  }

  std::span<const std::byte> output_bytes(const Request& request, size_t i) const override {
    const size_t k = graph_->inputs().size() + i;
    if (exchanged_[k] == cuda::Elem::kF32) return {};
    const auto& r = static_cast<const CudaRequest&>(request);
    const ir::Value& v = graph_->value(graph_->outputs()[i]);
    return {reinterpret_cast<const std::byte*>(r.pinned[k]),
            size_t(v.type.elements() * cuda::elem_bytes(exchanged_[k]))};
  }

  size_t num_blocks() const override { return plan_.num_blocks; }
  Bytes activation_bytes() const override { return compiled_.memory.arena_bytes; }

  // Replays the range's graph (captured on its first run) unless an observer wants per-unit
  // times, which need events around every unit: observed runs go eagerly (issue_program.h).
  RunStats run_blocks(Request& request, size_t first, size_t last, RunObserver* observer) override {
    auto& r = static_cast<CudaRequest&>(request);
    BRAID_CU(cudaSetDevice(options_.device));
    const cuda::BlockRange range = cuda::block_range(plan_, first, last);
    const cuda::IssueProgram program =
        cuda::issue_program(plan_, {.num_inputs = graph_->inputs().size(),
                                    .num_outputs = graph_->outputs().size(),
                                    .first_block = range.first,
                                    .last_block = range.last,
                                    .graph = options_.graph,
                                    .time_units = observer != nullptr,
                                    .captured = r.graphs.contains(range)});
    {
      // A capturing walk keeps other threads from synchronizing the device under it.
      const bool captures =
          std::any_of(program.commands.begin(), program.commands.end(),
                      [](const Command& c) { return c.kind == Command::Kind::kBeginCapture; });
      std::shared_lock lock(cuda::device_sync_mutex(), std::defer_lock);
      if (captures) lock.lock();
      walk(r, program);
    }
    BRAID_CU(cudaStreamSynchronize(r.main));
    const RunStats stats{.device_time = Micros(cuda::elapsed_us(r.started, r.finished))};
    if (observer == nullptr) return stats;
    for (const auto& [lane, unit, begin, end] : r.unit_events)
      observer->on_unit(lane, unit, Micros(cuda::elapsed_us(r.started, begin)),
                        Micros(cuda::elapsed_us(r.started, end)));
    return stats;
  }

 private:
  // Issues the program's commands, one CUDA call (or a few) each. A failure inside a capture
  // joins the lanes a fork brought into it back to the main stream (a capture with an unjoined
  // fork cannot end cleanly) and ends it; after any failure the request's streams are drained,
  // so that the request can be reused. Errors met while cleaning up are dropped: the first one
  // is the one reported.
  void walk(CudaRequest& r, const cuda::IssueProgram& program) const {
    r.unit_events.clear();
    bool capturing = false, forked = false;
    try {
      for (const Command& c : program.commands) {
        capturing = capturing ? c.kind != Command::Kind::kEndCapture
                              : c.kind == Command::Kind::kBeginCapture;
        if (c.kind == Command::Kind::kFork) forked = true;
        if (c.kind == Command::Kind::kJoin) forked = false;
        issue(r, program.range, c);
      }
    } catch (...) {
      if (capturing) {
        if (forked)
          for (size_t i = 0; i < r.lanes.size(); ++i) {
            cudaEventRecord(r.joins[i], r.lanes[i].stream);
            cudaStreamWaitEvent(r.main, r.joins[i], 0);
          }
        cudaGraph_t partial = nullptr;
        cudaStreamEndCapture(r.main, &partial);
        if (partial != nullptr) cudaGraphDestroy(partial);
      }
      for (const cuda::LaneContext& l : r.lanes) cudaStreamSynchronize(l.stream);
      cudaStreamSynchronize(r.main);
      cudaGetLastError();
      throw;
    }
  }

  void issue(CudaRequest& r, cuda::BlockRange range, const Command& c) const {
    using Kind = Command::Kind;
    std::byte* arena = r.arena.get();
    switch (c.kind) {
      case Kind::kCopyIn: {
        const ValueId id = graph_->inputs()[c.index];
        std::byte* slot = arena + input_offsets_[c.index];
        copy_converted(r.main, r.pinned[c.index], r.given[c.index], slot, elems_[c.index],
                       r.staging.get() + staging_offsets_[c.index],
                       graph_->value(id).type.elements(), cudaMemcpyHostToDevice);
        return;
      }
      case Kind::kCopyOut: {
        const ValueId id = graph_->outputs()[c.index];
        const size_t k = graph_->inputs().size() + c.index;
        copy_converted(r.main, outputs_[c.index](arena), elems_[k], r.pinned[k], exchanged_[k],
                       r.staging.get() + staging_offsets_[k], graph_->value(id).type.elements(),
                       cudaMemcpyDeviceToHost);
        return;
      }
      case Kind::kBeginCapture:
        BRAID_CU(cudaStreamBeginCapture(r.main, cudaStreamCaptureModeThreadLocal));
        return;
      case Kind::kEndCapture: {
        cudaGraph_t graph = nullptr;
        BRAID_CU(cudaStreamEndCapture(r.main, &graph));
        cudaGraphExec_t exec = nullptr;
        const cudaError_t made = cudaGraphInstantiate(&exec, graph, 0);
        cudaGraphDestroy(graph);
        BRAID_CU(made);
        r.graphs[range] = exec;
        return;
      }
      case Kind::kFork:
        BRAID_CU(cudaEventRecord(r.fork, r.main));
        for (const cuda::LaneContext& l : r.lanes)
          BRAID_CU(cudaStreamWaitEvent(l.stream, r.fork, 0));
        return;
      case Kind::kJoin:
        for (size_t i = 0; i < r.lanes.size(); ++i) {
          BRAID_CU(cudaEventRecord(r.joins[i], r.lanes[i].stream));
          BRAID_CU(cudaStreamWaitEvent(r.main, r.joins[i], 0));
        }
        return;
      case Kind::kRecordStart:
        cuda::record_timing_event(r.started, r.main);
        return;
      case Kind::kRecordFinish:
        cuda::record_timing_event(r.finished, r.main);
        return;
      case Kind::kGraphLaunch:
        BRAID_CU(cudaGraphLaunch(r.graphs.at(range), r.main));
        return;
      case Kind::kUnitBegin:
      case Kind::kUnitEnd: {
        const UnitId unit = std::get<sched::LaunchStep>(plan_.lanes[c.lane].steps[c.index]).unit;
        const auto [begin, end] = r.unit_timing_events(index(unit));
        const bool at_begin = c.kind == Kind::kUnitBegin;
        cuda::record_timing_event(at_begin ? begin : end, r.lanes[c.lane].stream);
        if (!at_begin) r.unit_events.emplace_back(c.lane, unit, begin, end);
        return;
      }
      case Kind::kStep: {
        const sched::Step& step = plan_.lanes[c.lane].steps[c.index];
        const cuda::LaneContext& l = r.lanes[c.lane];
        if (const auto* wait = std::get_if<sched::WaitStep>(&step)) {
          BRAID_CU(cudaStreamWaitEvent(l.stream, r.events[wait->event], 0));
        } else if (const auto* record = std::get_if<sched::RecordStep>(&step)) {
          BRAID_CU(cudaEventRecord(r.events[record->event], l.stream));
        } else {
          // An operator merge compiled into one cuDNN convolution (Compiler::compile_merge) runs
          // it at its first unit, writing every unit's output; the others run nothing. A merge
          // that could not be one convolution runs its units one after another. Compiled here,
          // never run on a GPU yet (docs/executor.md).
          for (const cuda::Op& op :
               compiled_.ops_of_launch(std::get<sched::LaunchStep>(step), plan_))
            op(l, arena);
        }
        return;
      }
    }
  }

  std::shared_ptr<const ir::Graph> graph_;
  std::shared_ptr<const ir::Weights> weights_;
  const ir::UnitGraph units_;  // copies: the prepared model owns what it runs
  const sched::ExecutionPlan plan_;
  CudaExecutorOptions options_;
  cuda::CompiledModel compiled_;
  std::vector<int64_t> input_offsets_;
  std::vector<cuda::Locator> outputs_;
  // Inputs, then outputs: how each is stored, how the caller exchanges it (kF32: as floats; an
  // input given as floats anyway goes as kF32), and its staging window where those can differ.
  std::vector<cuda::Elem> elems_, exchanged_;
  std::vector<Bytes> staging_offsets_;
  Bytes staging_bytes_ = 0;

  // `n` elements from `src` (as `from`) to `dst` (as `to`) across `direction` on `stream`: the
  // bytes as they are when the types match, else through `staging` (device memory) and the
  // conversion kernel, on the device's side of the copy.
  static void copy_converted(cudaStream_t stream, const void* src, cuda::Elem from, void* dst,
                             cuda::Elem to, std::byte* staging, int64_t n,
                             cudaMemcpyKind direction) {
    const bool in = direction == cudaMemcpyHostToDevice;
    if (from == to) {
      BRAID_CU(cudaMemcpyAsync(dst, src, size_t(n * cuda::elem_bytes(from)), direction, stream));
      return;
    }
    if (in) {
      BRAID_CU(
          cudaMemcpyAsync(staging, src, size_t(n * cuda::elem_bytes(from)), direction, stream));
      cuda::convert(from, staging, to, dst, n, stream);
    } else {
      cuda::convert(from, src, to, staging, n, stream);
      BRAID_CU(cudaMemcpyAsync(dst, staging, size_t(n * cuda::elem_bytes(to)), direction, stream));
    }
  }

  // The device type of a float value exchanged as `t`: kF16/kBF16 for the 16-bit types, kF32
  // (floats at the interface) for the others.
  static cuda::Elem exchanged(models::ElementType t) {
    return t == models::ElementType::kFloat16    ? cuda::Elem::kF16
           : t == models::ElementType::kBFloat16 ? cuda::Elem::kBF16
                                                 : cuda::Elem::kF32;
  }

  // The bytes of `v` as the interface's floats.
  Bytes float_bytes(ValueId v) const {
    return graph_->value(v).type.elements() * Bytes(sizeof(float));
  }
};

class CudaExecutor final : public Executor {
 public:
  explicit CudaExecutor(const CudaExecutorOptions& options)
      : options_(options), name_("cuda:" + std::to_string(options.device)) {}
  std::string_view name() const override { return name_; }
  // The kinds cuda_runs names. Copies and index ops take int64 and bool tensors too; the
  // computing kernels float ones only.
  bool supports(const ir::Graph& graph, NodeId node) const override {
    const ir::Node& n = graph.node(node);
    if (!cuda_runs(n.kind)) return false;
    auto is_float = [&](ValueId v) { return graph.value(v).type.dtype == ir::DType::kFloat32; };
    if (!cuda_moves_any_dtype(n.kind) &&
        (!std::all_of(n.inputs.begin(), n.inputs.end(), is_float) ||
         !std::all_of(n.outputs.begin(), n.outputs.end(), is_float)))
      return false;
    switch (n.kind) {
      case ir::OpKind::Conv:
      case ir::OpKind::ConvTranspose:
      case ir::OpKind::MaxPool:
      case ir::OpKind::AveragePool:
        return graph.value(n.inputs[0]).type.shape.size() == 4;
      case ir::OpKind::Resize:
        return graph.value(n.inputs[0]).type.shape.size() <= size_t(cuda::kMaxRank);
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
                  model.graph->node(NodeId(i)).name, "' (",
                  ir::to_onnx_name(model.graph->node(NodeId(i)).kind),
                  ") is not supported (computing ops on int64/bool tensors, and convolutions "
                  "and pooling other than 2-D, run on the CPU executor only: braid ops --device "
                  "cuda:0)");
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

std::string cuda_device_description(int device) {
  cudaDeviceProp p{};
  BRAID_CU(cudaGetDeviceProperties(&p, device));
  int driver = 0;
  cudaDriverGetVersion(&driver);
  return std::string(p.name) + ", cc " + std::to_string(p.major) + "." + std::to_string(p.minor) +
         ", " + std::to_string(p.multiProcessorCount) + " SMs, driver " + std::to_string(driver);
}

int64_t cuda_l2_cache_bytes(int device) {
  int bytes = 0;
  BRAID_CU(cudaDeviceGetAttribute(&bytes, cudaDevAttrL2CacheSize, device));
  return bytes;
}

std::unique_ptr<Executor> make_cuda_executor(const CudaExecutorOptions& options) {
  check_cuda_device(options.device);
  return std::make_unique<CudaExecutor>(options);
}

}  // namespace braid::exec
