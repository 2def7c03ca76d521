#include "exec/cpu/cpu_executor.h"

#include <omp.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>

#include "base/error.h"
#include "exec/cpu/cpu_kernels.h"
#include "exec/cpu/lane_pool.h"
#include "exec/cpu/layout.h"

namespace braid::exec {
namespace {

using Clock = std::chrono::steady_clock;
using cpu::GangJob;
using cpu::LanePool;

// One compiled step of a lane: integers only.
struct CompiledStep {
  enum class Kind : uint8_t { kLaunch, kRecord, kWait };
  Kind kind;
  uint32_t id;  // unit (launch) or event (record, wait)
};

struct UnitTiming {
  UnitId unit;
  Clock::time_point begin, end;
};

class CpuRequest final : public Request {
 public:
  CpuRequest(Bytes arena_bytes, const std::vector<int64_t>& input_offsets, size_t num_events,
             size_t num_units, const std::vector<size_t>& launches_per_lane)
      : arena_(
            static_cast<std::byte*>(std::aligned_alloc(kTensorAlignment, round_up(arena_bytes)))),
        events_(num_events),
        unit_done_(num_units),
        timings_(launches_per_lane.size()) {
    // Reserved once, so recording timings allocates nothing during a run.
    for (size_t i = 0; i < timings_.size(); ++i) timings_[i].reserve(launches_per_lane[i]);
    BRAID_CHECK(arena_ != nullptr, ErrorCode::kInternal, "cannot allocate a ", arena_bytes,
                "-byte arena");
    std::memset(arena_, 0, round_up(arena_bytes));
    input_slots_.reserve(input_offsets.size());
    for (int64_t offset : input_offsets) input_slots_.push_back(arena_ + offset);
    inputs_ = input_slots_;
    for (auto& e : events_) e.store(0);
    for (auto& d : unit_done_) d.store(0);
  }
  ~CpuRequest() override { std::free(arena_); }

  std::byte* arena() const { return arena_; }
  // Per graph input: where a run reads it, its arena slot or a buffer bound in place.
  std::byte* const* inputs() const { return inputs_.data(); }
  void bind(size_t i, const std::byte* data) { inputs_[i] = const_cast<std::byte*>(data); }
  void unbind(size_t i) { inputs_[i] = input_slots_[i]; }
  std::vector<std::atomic<uint64_t>>& events() { return events_; }
  std::vector<std::vector<UnitTiming>>& timings() { return timings_; }
  // The epoch in which each unit last ran: done in this inference when it equals `epoch`.
  bool done(size_t unit) const { return unit_done_[unit].load(std::memory_order_acquire) == epoch; }
  void mark_done(size_t unit) { unit_done_[unit].store(epoch, std::memory_order_release); }

  uint64_t epoch = 0;       // the current inference; events hold the epoch they were recorded in
  Clock::time_point start;  // of the current inference

 private:
  static Bytes round_up(Bytes n) {
    return std::max<Bytes>(kTensorAlignment,
                           (n + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment);
  }
  std::byte* arena_;
  std::vector<std::byte*> input_slots_;  // per graph input: its arena slot
  std::vector<std::byte*> inputs_;       // kernels never write a graph input's storage
  std::vector<std::atomic<uint64_t>> events_;
  std::vector<std::atomic<uint64_t>> unit_done_;
  std::vector<std::vector<UnitTiming>> timings_;
};

class CpuPreparedModel final : public PreparedModel {
 public:
  CpuPreparedModel(const ModelBundle& bundle, const CpuExecutorOptions& options,
                   std::shared_ptr<LanePool> pool);

  std::unique_ptr<Request> new_request() const override {
    std::vector<size_t> launches;
    for (const Lane& lane : lanes_)
      launches.push_back(std::count_if(
          lane.steps.begin(), lane.steps.end(),
          [](const CompiledStep& s) { return s.kind == CompiledStep::Kind::kLaunch; }));
    return std::make_unique<CpuRequest>(memory_.arena_bytes, input_offsets_, num_events_,
                                        unit_kernels_.size(), launches);
  }
  void set_input(Request& request, size_t i, std::span<const float> data) const override;
  bool bind_input(Request& request, size_t i, std::span<const std::byte> bytes) const override;
  std::span<const float> output(const Request& request, size_t i) const override;
  size_t num_blocks() const override { return num_blocks_; }
  RunStats run_blocks(Request& request, size_t first, size_t last, RunObserver* observer) override;
  Bytes activation_bytes() const override { return memory_.arena_bytes; }
  void start_inference(Request& request) const override {
    auto& r = static_cast<CpuRequest&>(request);
    ++r.epoch;
    r.start = Clock::now();
  }
  bool concurrent_requests() const override { return true; }

  const LanePool* pool() const { return pool_.get(); }
  bool unit_runs() const { return unit_runs_; }
  Bytes scratch_bytes() const { return scratch_; }
  // Runs `unit` of `request` on the calling lane, checking first that it may run now.
  void run_unit(CpuRequest& request, UnitId unit, cpu::LaneState& lane);

 private:
  struct Lane {
    std::vector<CompiledStep> steps;
    std::vector<uint32_t> block_begin;
  };
  // What one run_blocks call hands its gang: member i runs lane i.
  struct BlocksJob {
    CpuPreparedModel* model;
    CpuRequest* request;
    size_t first, last;
    GangJob gang;
  };
  void run_lane(size_t lane_index, CpuRequest& request, size_t first, size_t last,
                cpu::LaneState& state, const GangJob& job);
  void launch(UnitId unit, CpuRequest& request, cpu::LaneState& state);

  std::shared_ptr<const ir::Graph> graph_;
  std::shared_ptr<const ir::Weights> weights_;
  std::shared_ptr<LanePool> pool_;  // shared by every model of the executor
  MemoryPlan memory_;
  std::vector<int64_t> input_offsets_;  // per graph input: its arena offset
  // Per graph input: whether a run may read it from the caller's buffer (plain, and no graph
  // output lies in its storage: outputs are read from the request after the run).
  std::vector<bool> bindable_;
  bool unit_runs_ = false;  // the memory plan allows any order that keeps dependences
  std::vector<std::vector<std::unique_ptr<Kernel>>> unit_kernels_;  // per UnitId
  // A kernel rebinds its memory handles on every execute (cpu_kernels.h), so two requests'
  // lanes must not execute one unit's kernels at once: one lock per unit (uncontended unless
  // two requests are at the same unit).
  std::unique_ptr<std::mutex[]> unit_locks_;
  // Operator merges (plan.merges) compiled into one kernel each (cpu_kernels.h,
  // make_merged_conv_kernel): per unit, the index of its merge's kernel or -1. The first of a
  // merge's units launched in an inference runs the merged kernel, which writes every unit's
  // output; the others' launches only mark them done.
  std::vector<int32_t> merge_of_;
  std::vector<std::unique_ptr<Kernel>> merged_kernels_;
  std::vector<std::vector<UnitId>> merged_units_;
  std::unique_ptr<std::mutex[]> merge_locks_;
  std::vector<std::vector<UnitId>> predecessors_;     // per unit
  std::vector<std::vector<UnitId>> block_units_;      // per plan block
  std::vector<std::vector<uint32_t>> block_records_;  // per plan block: the events it records
  std::vector<std::string> unit_names_;
  std::vector<Lane> lanes_;
  // The plan's allotment: per unit, the threads its kernels were built for; empty without one.
  std::vector<int> unit_threads_;
  size_t cores_ = 0;
  bool widens_ = false;  // some unit runs on more than one thread
  Bytes scratch_ = 0;    // the largest unit's scratchpad
  size_t num_events_ = 0;
  size_t num_blocks_ = 0;
};

CpuPreparedModel::CpuPreparedModel(const ModelBundle& b, const CpuExecutorOptions& options,
                                   std::shared_ptr<LanePool> pool)
    : graph_(b.graph), weights_(b.weights), pool_(std::move(pool)) {
  const ir::Graph& g = *graph_;
  const ir::UnitGraph& units = *b.units;
  const sched::ExecutionPlan& plan = *b.plan;
  for (size_t i = 0; i < g.num_nodes(); ++i) {
    const ir::Node& n = g.node(make_id<NodeId>(i));
    BRAID_CHECK(cpu::supports(g, make_id<NodeId>(i)), ErrorCode::kUnsupported, "node '", n.name,
                "' (", ir::to_string(n.kind), "): not supported by the CPU executor");
  }
  weights_->check_complete(g);
  // Graph inputs and outputs stay plain (unless the caller lays them out), so set_input/output
  // copy as they are.
  const std::vector<TensorLayout> layouts =
      options.value_layouts.empty() ? cpu::choose_layouts(g, {.blocked = options.layout})
                                    : options.value_layouts;
  BRAID_CHECK(layouts.size() == g.num_values(), ErrorCode::kInvalidArgument,
              "value layouts: ", layouts.size(), " given for ", g.num_values(), " values");
  for (size_t i = 0; i < layouts.size(); ++i)
    BRAID_CHECK(cpu::can_be_blocked(g, make_id<ValueId>(i), layouts[i]),
                ErrorCode::kInvalidArgument, "value '", g.value(make_id<ValueId>(i)).name,
                "' cannot be laid out as ", cpu::layout_name(layouts[i]),
                ": its producer or a consumer does not take that layout");
  MemoryPlanOptions memory_options = options.memory;
  if (options.concat_in_place)
    memory_options.concat_in_place = [&](ValueId input, ValueId concat, int64_t offset) {
      return cpu::can_write_into_concat(g, layouts, input, concat, offset);
    };
  memory_ = plan_memory(g, units, plan, memory_options);
  unit_runs_ = memory_options.order == ReuseOrder::kDependences;
  num_events_ = plan.num_events;
  num_blocks_ = plan.num_blocks;
  // Graph inputs by ValueId: the tensors in their storage are found through the request's
  // input table, so a run can read an input from the caller's buffer.
  std::vector<int32_t> input_index(g.num_values(), -1);
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    const ValueId v = g.inputs()[i];
    input_index[index(v)] = static_cast<int32_t>(i);
    input_offsets_.push_back(memory_.offset[index(v)]);
    bindable_.push_back(layouts[index(v)] == TensorLayout::kPlain);
  }
  for (ValueId out : g.outputs())
    if (const int32_t i = input_index[index(memory_.storage_of[index(out)])]; i >= 0)
      bindable_[i] = false;
  TensorLocator locate = [&](ValueId v) {
    TensorRef ref;
    ref.type = g.value(v).type;
    ref.layout = layouts[index(v)];
    if (g.value(v).kind == ir::ValueKind::kParameter) {
      ref.fixed = weights_->data(v).data();
      return ref;
    }
    ref.arena_offset = memory_.offset[index(v)];
    if (const int32_t i = input_index[index(memory_.storage_of[index(v)])]; i >= 0) {
      ref.input = i;
      ref.within_input = ref.arena_offset - input_offsets_[i];
    }
    return ref;
  };
  // Primitives fix their thread count at creation (ecosystem.md §2.4): create them under the
  // budget the pool's workers run with, or the unit's threads under the plan's allotment.
  const int saved_threads = omp_get_max_threads();
  if (!plan.unit_threads.empty()) {
    BRAID_CHECK(plan.unit_threads.size() == units.num_units(), ErrorCode::kInvalidArgument,
                "the plan's allotment gives ", plan.unit_threads.size(),
                " units threads, the model has ", units.num_units());
    unit_threads_ = plan.unit_threads;
    cores_ = static_cast<size_t>(plan.cores);
    for (int k : unit_threads_) widens_ = widens_ || k > 1;
  }
  unit_kernels_.resize(units.num_units());
  for (size_t u = 0; u < units.num_units(); ++u) {
    const UnitId unit = make_id<UnitId>(u);
    omp_set_num_threads(unit_threads_.empty() ? options.threads_per_stream : unit_threads_[u]);
    Bytes unit_scratch = 0;
    if (!options.is_local || options.is_local(unit))
      unit_kernels_[u] =
          cpu::make_unit_kernels(g, units.unit(unit).ops, locate, {pool_->engine()}, &unit_scratch);
    if (options.extra_kernels)
      for (auto& k : options.extra_kernels(unit, locate)) unit_kernels_[u].push_back(std::move(k));
    scratch_ = std::max(scratch_, unit_scratch);
  }
  // Operator merges: one kernel per merge whose units are one Conv chain each on one block,
  // with one thread budget; any other runs its units one after another as before.
  merge_of_.assign(units.num_units(), -1);
  if (!options.is_local && !options.extra_kernels)
    for (const std::vector<UnitId>& merge : plan.merges) {
      if (merge.size() < 2) continue;
      bool fits = true;
      std::vector<std::vector<NodeId>> ops;
      for (UnitId u : merge) {
        fits = fits && plan.block_of_unit[index(u)] == plan.block_of_unit[index(merge[0])] &&
               (unit_threads_.empty() || unit_threads_[index(u)] == unit_threads_[index(merge[0])]);
        const auto unit_ops = units.unit(u).ops;
        ops.emplace_back(unit_ops.begin(), unit_ops.end());
      }
      if (!fits) continue;
      omp_set_num_threads(unit_threads_.empty() ? options.threads_per_stream
                                                : unit_threads_[index(merge[0])]);
      Bytes merged_scratch = 0;
      std::string why;
      auto kernel =
          cpu::make_merged_conv_kernel(g, ops, locate, {pool_->engine()}, &merged_scratch, &why);
      if (!kernel) {
        spdlog::warn("operator merge of '{}' runs its {} convs one after another: {}",
                     units.unit(merge[0]).name, merge.size(), why);
        continue;
      }
      scratch_ = std::max(scratch_, merged_scratch);
      for (UnitId u : merge) {
        merge_of_[index(u)] = static_cast<int32_t>(merged_kernels_.size());
        unit_kernels_[index(u)].clear();
      }
      merged_kernels_.push_back(std::move(kernel));
      merged_units_.push_back(merge);
    }
  merge_locks_ = std::make_unique<std::mutex[]>(merged_kernels_.size());
  omp_set_num_threads(saved_threads);
  unit_locks_ = std::make_unique<std::mutex[]>(units.num_units());
  predecessors_.resize(units.num_units());
  unit_names_.resize(units.num_units());
  for (size_t u = 0; u < units.num_units(); ++u) {
    auto preds = units.predecessors(make_id<UnitId>(u));
    predecessors_[u].assign(preds.begin(), preds.end());
    unit_names_[u] = units.unit(make_id<UnitId>(u)).name;
  }
  block_units_.resize(num_blocks_);
  for (size_t u = 0; u < plan.block_of_unit.size(); ++u)
    block_units_[plan.block_of_unit[u]].push_back(make_id<UnitId>(u));

  lanes_.resize(plan.lanes.size());
  for (size_t i = 0; i < plan.lanes.size(); ++i) {
    Lane& lane = lanes_[i];
    for (const sched::Step& step : plan.lanes[i].steps) {
      if (auto* l = std::get_if<sched::LaunchStep>(&step))
        lane.steps.push_back({CompiledStep::Kind::kLaunch, static_cast<uint32_t>(index(l->unit))});
      else if (auto* r = std::get_if<sched::RecordStep>(&step))
        lane.steps.push_back({CompiledStep::Kind::kRecord, r->event});
      else
        lane.steps.push_back({CompiledStep::Kind::kWait, std::get<sched::WaitStep>(step).event});
    }
    lane.block_begin = plan.lanes[i].block_begin;
  }
  block_records_.resize(num_blocks_);
  for (const Lane& lane : lanes_)
    for (size_t b = 0; b < num_blocks_; ++b)
      for (uint32_t i = lane.block_begin[b]; i < lane.block_begin[b + 1]; ++i)
        if (lane.steps[i].kind == CompiledStep::Kind::kRecord)
          block_records_[b].push_back(lane.steps[i].id);
}

void CpuPreparedModel::launch(UnitId unit, CpuRequest& request, cpu::LaneState& state) {
  const KernelContext context{request.arena(), request.inputs(), &state};
  std::lock_guard lock(unit_locks_[index(unit)]);
  // braid's own OpenMP loops read the thread budget when they run (a per-thread ICV); the
  // worker's own budget is back before it runs another model's unit.
  struct Budget {
    int restore = 0;
    ~Budget() {
      if (restore > 0) omp_set_num_threads(restore);
    }
  } budget;
  if (!unit_threads_.empty()) {
    budget.restore = pool_->threads_per_stream();
    omp_set_num_threads(unit_threads_[index(unit)]);
  }
  if (const int32_t m = merge_of_[index(unit)]; m >= 0) {
    // The merged kernel wrote every unit of the merge when the first of them was launched.
    bool ran = false;
    for (UnitId other : merged_units_[static_cast<size_t>(m)])
      ran = ran || request.done(index(other));
    if (!ran) {
      std::lock_guard merge_lock(merge_locks_[m]);
      merged_kernels_[static_cast<size_t>(m)]->execute(context);
    }
  }
  for (const auto& kernel : unit_kernels_[index(unit)]) kernel->execute(context);
  request.mark_done(index(unit));
}

void CpuPreparedModel::run_lane(size_t lane_index, CpuRequest& request, size_t first, size_t last,
                                cpu::LaneState& state, const GangJob& job) {
  const Lane& lane = lanes_[lane_index];
  const uint64_t epoch = request.epoch;
  auto& events = request.events();
  auto& timings = request.timings()[lane_index];
  for (uint32_t i = lane.block_begin[first]; i < lane.block_begin[last]; ++i) {
    const CompiledStep& step = lane.steps[i];
    switch (step.kind) {
      case CompiledStep::Kind::kLaunch: {
        if (job.failed.load(std::memory_order_relaxed)) return;
        auto begin = Clock::now();
        launch(make_id<UnitId>(step.id), request, state);
        timings.push_back({make_id<UnitId>(step.id), begin, Clock::now()});
        break;
      }
      case CompiledStep::Kind::kRecord:
        events[step.id].store(epoch, std::memory_order_release);
        events[step.id].notify_all();
        break;
      case CompiledStep::Kind::kWait:
        cpu::wait_for(events[step.id], epoch, job.spin);
        break;
    }
  }
}

void CpuPreparedModel::run_unit(CpuRequest& request, UnitId unit, cpu::LaneState& state) {
  const size_t u = index(unit);
  BRAID_CHECK(u < unit_kernels_.size(), ErrorCode::kInvalidArgument, "unit #", u,
              " does not exist: the model has ", unit_kernels_.size());
  BRAID_CHECK(!request.done(u), ErrorCode::kInvalidArgument, "unit '", unit_names_[u],
              "' run twice in one inference");
  for (UnitId p : predecessors_[u])
    BRAID_CHECK(request.done(index(p)), ErrorCode::kInvalidArgument, "unit '", unit_names_[u],
                "' run before unit '", unit_names_[index(p)], "', whose output it reads");
  launch(unit, request, state);
}

void CpuPreparedModel::set_input(Request& r, size_t i, std::span<const float> data) const {
  auto& request = static_cast<CpuRequest&>(r);
  const ir::Graph& g = *graph_;
  BRAID_CHECK(i < g.inputs().size(), ErrorCode::kInvalidArgument, "input #", i, " does not exist");
  ValueId v = g.inputs()[i];
  BRAID_CHECK(static_cast<int64_t>(data.size()) == g.value(v).type.elements(),
              ErrorCode::kInvalidArgument, "input '", g.value(v).name, "' needs ",
              g.value(v).type.elements(), " values, got ", data.size());
  // int64 and bool inputs convert from the float values given (ir::store_floats).
  ir::store_floats(g.value(v).type.dtype, data, request.arena() + memory_.offset[index(v)]);
  request.unbind(i);
}

bool CpuPreparedModel::bind_input(Request& r, size_t i, std::span<const std::byte> bytes) const {
  auto& request = static_cast<CpuRequest&>(r);
  const ir::Graph& g = *graph_;
  BRAID_CHECK(i < g.inputs().size(), ErrorCode::kInvalidArgument, "input #", i, " does not exist");
  const ir::Value& value = g.value(g.inputs()[i]);
  BRAID_CHECK(static_cast<int64_t>(bytes.size()) == value.type.bytes(), ErrorCode::kInvalidArgument,
              "input '", value.name, "' needs ", value.type.bytes(), " bytes (",
              value.type.elements(), " ", ir::to_string(value.type.dtype), " values), got ",
              bytes.size());
  // Kernels load elements of their dtype from it: a misaligned buffer is copied instead.
  const auto at = reinterpret_cast<uintptr_t>(bytes.data());
  if (!bindable_[i] || at % static_cast<uintptr_t>(ir::size_of(value.type.dtype)) != 0)
    return false;
  request.bind(i, bytes.data());
  return true;
}

std::span<const float> CpuPreparedModel::output(const Request& r, size_t i) const {
  const auto& request = static_cast<const CpuRequest&>(r);
  const ir::Graph& g = *graph_;
  BRAID_CHECK(i < g.outputs().size(), ErrorCode::kInvalidArgument, "output #", i,
              " does not exist");
  ValueId v = g.outputs()[i];
  BRAID_CHECK(g.value(v).type.dtype == ir::DType::kFloat32, ErrorCode::kUnsupported, "output '",
              g.value(v).name, "' is ", ir::to_string(g.value(v).type.dtype),
              "; the CPU executor returns float32 outputs only");
  const auto* data = reinterpret_cast<const float*>(request.arena() + memory_.offset[index(v)]);
  return {data, static_cast<size_t>(g.value(v).type.elements())};
}

RunStats CpuPreparedModel::run_blocks(Request& r, size_t first, size_t last,
                                      RunObserver* observer) {
  auto& request = static_cast<CpuRequest&>(r);
  BRAID_CHECK(first <= last && last <= num_blocks_, ErrorCode::kInvalidArgument, "blocks [", first,
              ", ", last, ") out of range: the model has ", num_blocks_);
  if (first == 0) {
    start_inference(request);
  } else {
    // Every earlier block done (by run_blocks or by runs of units), block `first` not begun.
    for (size_t b = 0; b < first; ++b)
      for (UnitId u : block_units_[b])
        BRAID_CHECK(request.done(index(u)), ErrorCode::kInvalidArgument, "block ", first,
                    " run out of order: the request is at block ", b);
    for (UnitId u : block_units_[first])
      BRAID_CHECK(!request.done(index(u)), ErrorCode::kInvalidArgument, "block ", first,
                  " run out of order: its unit '", unit_names_[index(u)], "' has already run");
    // Earlier blocks run unit by unit recorded none of their events, which later blocks' lanes
    // may wait on: their units are all done, so their events are.
    for (size_t b = 0; b < first; ++b)
      for (uint32_t e : block_records_[b])
        request.events()[e].store(request.epoch, std::memory_order_release);
  }
  for (auto& t : request.timings()) t.clear();
  BlocksJob job{this, &request, first, last, {}};
  job.gang.run = [](void* context, size_t member, cpu::LaneState& state) {
    auto& j = *static_cast<BlocksJob*>(context);
    j.model->run_lane(member, *j.request, j.first, j.last, state, j.gang);
  };
  job.gang.context = &job;
  job.gang.members = lanes_.size();
  job.gang.scratch = scratch_;
  if (!unit_threads_.empty()) {
    job.gang.cpus = cores_;
    job.gang.pin = lanes_.size() == 1;  // one lane's team cannot meet another's
    job.gang.team = cores_;
    job.gang.may_spin = !widens_ || lanes_.size() == 1;
  }
  // Release every waiter so no lane blocks forever on an event a failed lane will not record
  // (the lanes stop at their next launch).
  job.gang.on_failure = [](void* context) {
    auto& j = *static_cast<BlocksJob*>(context);
    for (auto& e : j.request->events()) {
      e.store(j.request->epoch, std::memory_order_release);
      e.notify_all();
    }
  };
  const Clock::time_point dispatched = Clock::now();
  pool_->run(job.gang);  // rethrows a lane's failure
  const RunStats stats{.device_time = Clock::now() - dispatched};
  if (observer)
    for (size_t lane = 0; lane < request.timings().size(); ++lane)
      for (const UnitTiming& t : request.timings()[lane])
        observer->on_unit(lane, t.unit, t.begin - request.start, t.end - request.start);
  return stats;
}

class CpuExecutor final : public Executor {
 public:
  explicit CpuExecutor(const CpuExecutorOptions& options)
      : options_(options),
        pool_(std::make_shared<LanePool>(
            cpu::LanePoolOptions{.threads_per_stream = options.threads_per_stream,
                                 .pin_threads = options.pin_threads,
                                 .spin_us = options.spin_us})) {}
  std::string_view name() const override { return "cpu"; }
  bool supports(const ir::Graph& graph, NodeId node) const override {
    return cpu::supports(graph, node);
  }
  std::unique_ptr<PreparedModel> prepare(const ModelBundle& model) override {
    BRAID_CHECK(
        model.graph && model.weights && model.units && model.plan, ErrorCode::kInvalidArgument,
        "the CPU executor needs a graph, weights, units and a plan (a weighted DAG cannot run)");
    return std::make_unique<CpuPreparedModel>(model, options_, pool_);
  }
  RunStats run_side_by_side(std::span<const std::vector<UnitCall>> lanes) override;

 private:
  CpuExecutorOptions options_;
  std::shared_ptr<LanePool> pool_;
};

RunStats CpuExecutor::run_side_by_side(std::span<const std::vector<UnitCall>> lanes) {
  // Checked before anything runs: every call names a model prepared here, able to run units
  // outside its plan, and a request.
  Bytes scratch = 0;
  for (const std::vector<UnitCall>& lane : lanes)
    for (const UnitCall& call : lane) {
      auto* model = dynamic_cast<CpuPreparedModel*>(call.model);
      BRAID_CHECK(model != nullptr && model->pool() == pool_.get(), ErrorCode::kInvalidArgument,
                  "run_side_by_side: a unit of a model not prepared by this executor");
      BRAID_CHECK(model->unit_runs(), ErrorCode::kInvalidArgument,
                  "run_side_by_side: the model was prepared with a memory plan that reuses "
                  "buffers in its plan's order (MemoryPlanOptions::order = kDependences allows "
                  "runs of units)");
      BRAID_CHECK(call.request != nullptr, ErrorCode::kInvalidArgument,
                  "run_side_by_side: a unit without a request");
      scratch = std::max(scratch, model->scratch_bytes());
    }
  struct Job {
    std::span<const std::vector<UnitCall>> lanes;
    GangJob gang;
  } job{lanes, {}};
  job.gang.run = [](void* context, size_t member, cpu::LaneState& state) {
    auto& j = *static_cast<Job*>(context);
    for (const UnitCall& call : j.lanes[member]) {
      if (j.gang.failed.load(std::memory_order_relaxed)) return;
      static_cast<CpuPreparedModel*>(call.model)
          ->run_unit(*static_cast<CpuRequest*>(call.request), call.unit, state);
    }
  };
  job.gang.context = &job;
  job.gang.members = lanes.size();
  job.gang.scratch = scratch;
  const Clock::time_point dispatched = Clock::now();
  pool_->run(job.gang);
  return {.device_time = Clock::now() - dispatched};
}

}  // namespace

std::unique_ptr<Executor> make_cpu_executor(const CpuExecutorOptions& options) {
  BRAID_CHECK(options.threads_per_stream >= 1, ErrorCode::kInvalidArgument,
              "threads per stream must be >= 1, got ", options.threads_per_stream);
  return std::make_unique<CpuExecutor>(options);
}

}  // namespace braid::exec
