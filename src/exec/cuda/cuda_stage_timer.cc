#include "exec/cuda/cuda_stage_timer.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <random>
#include <string>

#include <spdlog/spdlog.h>

#include "base/error.h"
#include "exec/cuda/cuda_compiler.h"
#include "exec/cuda/cuda_executor.h"
#include "exec/cuda/cuda_kernels.h"
#include "exec/cuda/cuda_request.h"
#include "sched/lower.h"

namespace braid::exec {
namespace {

using cuda::CudaRequest;
using cuda::DeviceBuffer;

// Every unit in id order (a topological order) on one lane: the plan the model is compiled under.
sched::ExecutionPlan sequential_plan(const ir::UnitGraph& units) {
  sched::Schedule s;
  s.algorithm = "stage-timer";
  sched::Stage all;
  all.groups.emplace_back();
  for (size_t u = 0; u < units.num_units(); ++u) all.groups.back().push_back(UnitId(u));
  s.stages.push_back(std::move(all));
  return sched::lower(units, s);
}

// A graph captured on `main`, instantiated; destroyed with its owner.
class GraphExec {
 public:
  GraphExec() = default;
  ~GraphExec() {
    if (exec_ != nullptr) cudaGraphExecDestroy(exec_);
  }
  GraphExec(const GraphExec&) = delete;
  GraphExec& operator=(const GraphExec&) = delete;

  // Captures what `issue` enqueues on `main` (and on streams forked from it).
  template <typename Issue>
  void capture(cudaStream_t main, Issue&& issue) {
    BRAID_CU(cudaStreamBeginCapture(main, cudaStreamCaptureModeThreadLocal));
    try {
      issue();
    } catch (...) {
      cudaGraph_t partial = nullptr;
      cudaStreamEndCapture(main, &partial);
      if (partial != nullptr) cudaGraphDestroy(partial);
      throw;
    }
    cudaGraph_t graph = nullptr;
    BRAID_CU(cudaStreamEndCapture(main, &graph));
    const cudaError_t made = cudaGraphInstantiate(&exec_, graph, 0);
    cudaGraphDestroy(graph);
    BRAID_CU(made);
  }
  // A graph of one empty node (cudaGraphAddEmptyNode: a no-op), what a launch alone costs.
  void make_empty() {
    cudaGraph_t graph = nullptr;
    BRAID_CU(cudaGraphCreate(&graph, 0));
    cudaGraphNode_t node = nullptr;
    cudaError_t made = cudaGraphAddEmptyNode(&node, graph, nullptr, 0);
    if (made == cudaSuccess) made = cudaGraphInstantiate(&exec_, graph, 0);
    cudaGraphDestroy(graph);
    BRAID_CU(made);
  }
  // One replay on `r.main`, timed by the request's events (recorded outside any capture).
  double timed_launch(CudaRequest& r) const {
    cuda::record_timing_event(r.started, r.main);
    BRAID_CU(cudaGraphLaunch(exec_, r.main));
    cuda::record_timing_event(r.finished, r.main);
    BRAID_CU(cudaStreamSynchronize(r.main));
    return cuda::elapsed_us(r.started, r.finished);
  }

 private:
  cudaGraphExec_t exec_ = nullptr;
};

class StageTimer final : public CudaStageTimer {
 public:
  StageTimer(const ir::UnitGraph& units, std::shared_ptr<const ir::Weights> weights, int device,
             uint64_t input_seed, Precision precision)
      : units_(units),
        weights_(std::move(weights)),
        plan_(sequential_plan(units)),
        options_{.device = device, .precision = precision},
        // No reuse: concurrent groups never share storage, and every value stays as filled.
        compiled_(*units.graph(), *weights_, units, plan_, options_, {.reuse = false}),
        request_(cuda::RequestLayout{.device = device,
                                     .arena_bytes = compiled_.memory.arena_bytes,
                                     .scratch_bytes = compiled_.compiler->scratch_bytes(),
                                     .num_lanes = 1,
                                     .precision = precision}) {
    request_scratch_ = compiled_.compiler->scratch_bytes();
    fill(input_seed);
    empty_.make_empty();
    int l2_bytes = 0;
    BRAID_CU(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, device));
    flush_floats_ = 2 * int64_t(std::max(l2_bytes, 1 << 20)) / int64_t(sizeof(float));
    flush_ = DeviceBuffer((flush_floats_ + 1) * sizeof(float));  // + the sink
    BRAID_CU(cudaMemset(flush_.get(), 0, (flush_floats_ + 1) * sizeof(float)));
  }

  StageTimes time_stage(std::span<const std::vector<UnitId>> groups,
                        const StageTimingOptions& o) override {
    BRAID_CHECK(!groups.empty() && o.copies >= 1 && o.replays >= 1 && o.warmup >= 0,
                ErrorCode::kInvalidArgument,
                "stage timing: a stage needs groups, copies >= 1, replays >= 1");
    BRAID_CU(cudaSetDevice(options_.device));
    request_.add_lanes(groups.size());
    return time_copies(o, [&] { issue_stage(groups); });
  }

  std::optional<std::vector<LaunchedKernel>> unit_kernels(UnitId unit) override {
    BRAID_CU(cudaSetDevice(options_.device));
    const cuda::LaneContext& lane = request_.lanes[0];
    return capture_kernels(lane.stream, [&] {
      for (const cuda::Op& op : compiled_.unit_ops[index(unit)]) op(lane, request_.arena.get());
    });
  }

  StageTimes time_merge(std::span<const UnitId> units, const StageTimingOptions& o) override {
    BRAID_CHECK(units.size() >= 2 && o.copies >= 1 && o.replays >= 1 && o.warmup >= 0,
                ErrorCode::kInvalidArgument,
                "merge timing: a merge needs two units or more, copies >= 1, replays >= 1");
    BRAID_CU(cudaSetDevice(options_.device));
    request_.add_lanes(1);
    const std::vector<UnitId> key(units.begin(), units.end());
    auto it = merges_.find(key);
    if (it == merges_.end()) {
      std::vector<std::vector<NodeId>> ops;
      for (UnitId u : units) {
        const auto unit_ops = units_.unit(u).ops;
        ops.emplace_back(unit_ops.begin(), unit_ops.end());
      }
      std::string why;
      std::unique_lock lock(cuda::device_sync_mutex());  // compiling probes and synchronizes
      Merge m{.ops = compiled_.compiler->compile_merge(ops, &why)};
      if (m.ops.empty()) spdlog::debug("merge timing: units one after another: {}", why);
      // The merged conv's scratch (workspace and merged output) may exceed the request's.
      if (compiled_.compiler->scratch_bytes() > request_scratch_)
        m.scratch = DeviceBuffer(size_t(compiled_.compiler->scratch_bytes()));
      it = merges_.emplace(key, std::move(m)).first;
    }
    const Merge& m = it->second;
    CudaRequest& r = request_;
    cuda::LaneContext lane = r.lanes[0];
    if (m.scratch.get() != nullptr) lane.workspace = m.scratch.get();
    return time_copies(o, [&] {  // one group on lane 0, as issue_stage runs it
      BRAID_CU(cudaEventRecord(r.fork, r.main));
      BRAID_CU(cudaStreamWaitEvent(lane.stream, r.fork, 0));
      if (!m.ops.empty()) {
        for (const cuda::Op& op : m.ops) op(lane, r.arena.get());
      } else {
        for (UnitId u : key)
          for (const cuda::Op& op : compiled_.unit_ops[index(u)]) op(lane, r.arena.get());
      }
      BRAID_CU(cudaEventRecord(r.joins[0], lane.stream));
      BRAID_CU(cudaStreamWaitEvent(r.main, r.joins[0], 0));
    });
  }

 private:
  // `issue`'s work (enqueued on main, or on lanes forked from it and joined back) captured as
  // `copies` copies into one graph, each after an L2 flush when cold, and timed replay by replay
  // against the baseline.
  template <typename Issue>
  StageTimes time_copies(const StageTimingOptions& o, Issue&& issue) {
    GraphExec stage, flushes;
    stage.capture(request_.main, [&] {
      for (int k = 0; k < o.copies; ++k) {
        if (o.cold_l2) flush();
        issue();
      }
    });
    if (o.cold_l2)
      flushes.capture(request_.main, [&] {
        for (int k = 0; k < o.copies; ++k) flush();
      });
    const GraphExec& baseline = o.cold_l2 ? flushes : empty_;
    for (int i = 0; i < o.warmup; ++i) {
      baseline.timed_launch(request_);
      stage.timed_launch(request_);
    }
    StageTimes t;
    for (int i = 0; i < o.replays; ++i) {
      t.empty_us.push_back(baseline.timed_launch(request_));
      t.stage_us.push_back(stage.timed_launch(request_));
    }
    return t;
  }

  // Fork from main, group i on lane i (its units' compiled ops in order), join back to main.
  void issue_stage(std::span<const std::vector<UnitId>> groups) {
    CudaRequest& r = request_;
    BRAID_CU(cudaEventRecord(r.fork, r.main));
    for (size_t i = 0; i < groups.size(); ++i) {
      const cuda::LaneContext& lane = r.lanes[i];
      BRAID_CU(cudaStreamWaitEvent(lane.stream, r.fork, 0));
      for (UnitId u : groups[i])
        for (const cuda::Op& op : compiled_.unit_ops[index(u)]) op(lane, r.arena.get());
      BRAID_CU(cudaEventRecord(r.joins[i], lane.stream));
      BRAID_CU(cudaStreamWaitEvent(r.main, r.joins[i], 0));
    }
  }

  // Reads twice the L2's size on main: what the stage reads next comes from device memory.
  void flush() {
    float* data = reinterpret_cast<float*>(flush_.get());
    cuda::read_through(data, flush_floats_, data + flush_floats_, request_.main);
  }

  // Uniform [-1, 1] graph inputs, then one sequential run: every activation holds a real value
  // (uninitialized memory may hold NaNs or denormals, which time differently).
  void fill(uint64_t seed) {
    const ir::Graph& g = *units_.graph();
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> noise(-1.0f, 1.0f);
    for (ValueId v : g.inputs()) {
      const cuda::Elem e = compiled_.compiler->storage_of(v);
      std::vector<float> x(g.value(v).type.elements());
      for (float& f : x) f = noise(rng);
      std::byte* slot = request_.arena.get() + compiled_.memory.offset[index(v)];
      if (e == cuda::Elem::kI64 || e == cuda::Elem::kBool) {
        // Index inputs (token ids, masks): zeros, valid for any Gather.
        BRAID_CU(cudaMemset(slot, 0, size_t(x.size()) * size_t(cuda::elem_bytes(e))));
        continue;
      }
      // The arena holds the input in its storage type (16 bits in 16-bit plans).
      std::vector<std::byte> bytes(x.size() * size_t(cuda::elem_bytes(e)));
      models::store_floats(cuda::element_type(e), x, bytes.data());
      BRAID_CU(cudaMemcpy(slot, bytes.data(), bytes.size(), cudaMemcpyHostToDevice));
    }
    const cuda::LaneContext& lane = request_.lanes[0];
    for (const std::vector<cuda::Op>& ops : compiled_.unit_ops)
      for (const cuda::Op& op : ops) op(lane, request_.arena.get());
    BRAID_CU(cudaStreamSynchronize(lane.stream));
  }

  const ir::UnitGraph& units_;
  std::shared_ptr<const ir::Weights> weights_;
  sched::ExecutionPlan plan_;
  CudaExecutorOptions options_;
  cuda::CompiledModel compiled_;
  CudaRequest request_;
  int64_t request_scratch_ = 0;  // per lane, as request_ was made
  // Merges compiled by time_merge, by their units: the merged op (empty: not mergeable) and a
  // scratch of its own where the request's is too small for it.
  struct Merge {
    std::vector<cuda::Op> ops;
    DeviceBuffer scratch;
  };
  std::map<std::vector<UnitId>, Merge> merges_;
  GraphExec empty_;     // nothing in it: what a graph launch alone costs
  DeviceBuffer flush_;  // zeros, read to evict the L2 cache, and a float sink after them
  int64_t flush_floats_ = 0;
};

}  // namespace

std::unique_ptr<CudaStageTimer> make_cuda_stage_timer(const ir::UnitGraph& units,
                                                      std::shared_ptr<const ir::Weights> weights,
                                                      int device, uint64_t input_seed,
                                                      Precision precision) {
  check_cuda_device(device);
  BRAID_CHECK(units.graph() != nullptr && weights != nullptr, ErrorCode::kInvalidArgument,
              "stage timing needs a model with operators and weights");
  return std::make_unique<StageTimer>(units, std::move(weights), device, input_seed, precision);
}

}  // namespace braid::exec
