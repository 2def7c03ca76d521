#include "exec/cpu/cpu_executor.h"

#include <omp.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>

#include "base/error.h"
#include "exec/cpu/cpu_kernels.h"
#include "exec/cpu/layout.h"

namespace braid::exec {
namespace {

using Clock = std::chrono::steady_clock;

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

// Spins until `done()` or `budget` has passed; returns done(). The clock is read once every
// 64 probes, so a probe costs a few nanoseconds.
template <class Done>
bool spin_until(Done done, std::chrono::microseconds budget) {
  if (budget.count() <= 0) return done();
  const auto deadline = Clock::now() + budget;
  for (;;) {
    for (int k = 0; k < 64; ++k) {
      if (done()) return true;
      cpu_relax();
    }
    if (Clock::now() >= deadline) return done();
  }
}

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
  CpuRequest(Bytes arena_bytes, size_t num_events, const std::vector<size_t>& launches_per_lane)
      : arena_(
            static_cast<std::byte*>(std::aligned_alloc(kTensorAlignment, round_up(arena_bytes)))),
        events_(num_events),
        timings_(launches_per_lane.size()) {
    // Reserved once, so recording timings allocates nothing during a run.
    for (size_t i = 0; i < timings_.size(); ++i) timings_[i].reserve(launches_per_lane[i]);
    BRAID_CHECK(arena_ != nullptr, ErrorCode::kInternal, "cannot allocate a ", arena_bytes,
                "-byte arena");
    std::memset(arena_, 0, round_up(arena_bytes));
    for (auto& e : events_) e.store(0);
  }
  ~CpuRequest() override { std::free(arena_); }

  std::byte* arena() const { return arena_; }
  std::vector<std::atomic<uint64_t>>& events() { return events_; }
  std::vector<std::vector<UnitTiming>>& timings() { return timings_; }
  uint64_t epoch = 0;       // the current inference; events hold the epoch they were recorded in
  size_t next_block = 0;    // blocks must run in order
  Clock::time_point start;  // of the current inference

 private:
  static Bytes round_up(Bytes n) {
    return std::max<Bytes>(kTensorAlignment,
                           (n + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment);
  }
  std::byte* arena_;
  std::vector<std::atomic<uint64_t>> events_;
  std::vector<std::vector<UnitTiming>> timings_;
};

class CpuPreparedModel final : public PreparedModel {
 public:
  CpuPreparedModel(const ModelBundle& bundle, const CpuExecutorOptions& options);
  ~CpuPreparedModel() override;

  std::unique_ptr<Request> new_request() const override {
    std::vector<size_t> launches;
    for (const Lane& lane : lanes_)
      launches.push_back(std::count_if(
          lane.steps.begin(), lane.steps.end(),
          [](const CompiledStep& s) { return s.kind == CompiledStep::Kind::kLaunch; }));
    return std::make_unique<CpuRequest>(memory_.arena_bytes, num_events_, launches);
  }
  void set_input(Request& request, size_t i, std::span<const float> data) const override;
  std::span<const float> output(const Request& request, size_t i) const override;
  size_t num_blocks() const override { return num_blocks_; }
  RunStats run_blocks(Request& request, size_t first, size_t last, RunObserver* observer) override;
  Bytes activation_bytes() const override { return memory_.arena_bytes; }

 private:
  struct Lane {
    std::vector<CompiledStep> steps;
    std::vector<uint32_t> block_begin;
    cpu::LaneState state;
    std::vector<std::byte> scratchpad;
    std::thread thread;
  };
  void lane_main(size_t lane_index, const std::vector<int>& cpus);
  void run_lane(Lane& lane, size_t lane_index, CpuRequest& request, size_t first, size_t last);

  std::shared_ptr<const ir::Graph> graph_;
  std::shared_ptr<const ir::Weights> weights_;
  CpuExecutorOptions options_;
  MemoryPlan memory_;
  dnnl::engine engine_{dnnl::engine::kind::cpu, 0};
  std::vector<std::vector<std::unique_ptr<Kernel>>> unit_kernels_;  // per UnitId
  std::vector<Lane> lanes_;
  size_t num_events_ = 0;
  size_t num_blocks_ = 0;

  // The job the lanes run; one request at a time on the lanes (run_blocks is serialized).
  std::mutex run_mutex_;
  std::mutex job_mutex_;
  std::condition_variable job_cv_, done_cv_;
  std::atomic<uint64_t> job_generation_{0};  // written under job_mutex_; spun on without it
  size_t lanes_busy_ = 0;
  std::atomic<bool> shutdown_{false};
  std::chrono::microseconds spin_{0};  // options_.spin_us, or 0 where lanes share CPUs
  CpuRequest* job_request_ = nullptr;
  size_t job_first_ = 0, job_last_ = 0;
  std::atomic<bool> failed_{false};
  std::exception_ptr failure_;
};

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

CpuPreparedModel::CpuPreparedModel(const ModelBundle& b, const CpuExecutorOptions& options)
    : graph_(b.graph), weights_(b.weights), options_(options) {
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
  num_events_ = plan.num_events;
  num_blocks_ = plan.num_blocks;
  TensorLocator locate = [&](ValueId v) {
    TensorRef ref;
    ref.type = g.value(v).type;
    ref.layout = layouts[index(v)];
    if (g.value(v).kind == ir::ValueKind::kParameter)
      ref.fixed = weights_->data(v).data();
    else
      ref.arena_offset = memory_.offset[index(v)];
    return ref;
  };
  // Primitives fix their thread count at creation (ecosystem.md §2.4): create them under the
  // budget the lanes will run with.
  const int saved_threads = omp_get_max_threads();
  omp_set_num_threads(options.threads_per_stream);
  Bytes scratch = 0;
  unit_kernels_.resize(units.num_units());
  for (size_t u = 0; u < units.num_units(); ++u) {
    const UnitId unit = make_id<UnitId>(u);
    Bytes unit_scratch = 0;
    if (!options.is_local || options.is_local(unit))
      unit_kernels_[u] =
          cpu::make_unit_kernels(g, units.unit(unit).ops, locate, {engine_}, &unit_scratch);
    if (options.extra_kernels)
      for (auto& k : options.extra_kernels(unit, locate)) unit_kernels_[u].push_back(std::move(k));
    scratch = std::max(scratch, unit_scratch);
  }
  omp_set_num_threads(saved_threads);

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
    lane.scratchpad.resize(std::max<Bytes>(scratch, 1));
    lane.state.stream = dnnl::stream(engine_);
    lane.state.scratchpad = lane.scratchpad.data();
  }
  // Lane i gets threads_per_stream consecutive CPUs (wrapping around): its OpenMP team inherits
  // the lane thread's mask, so a one-CPU mask would stack the whole team on one core.
  std::vector<int> cpus = allowed_cpus();
  if (lanes_.size() * static_cast<size_t>(options.threads_per_stream) <= cpus.size())
    spin_ = std::chrono::microseconds(options.spin_us);
  const size_t width = static_cast<size_t>(options.threads_per_stream);
  for (size_t i = 0; i < lanes_.size(); ++i) {
    std::vector<int> mine;
    if (options.pin_threads && !cpus.empty())
      for (size_t k = 0; k < std::min(width, cpus.size()); ++k)
        mine.push_back(cpus[(i * width + k) % cpus.size()]);
    lanes_[i].thread = std::thread([this, i, mine] { lane_main(i, mine); });
  }
}

CpuPreparedModel::~CpuPreparedModel() {
  {
    std::lock_guard lock(job_mutex_);
    shutdown_ = true;
  }
  job_cv_.notify_all();
  for (Lane& lane : lanes_)
    if (lane.thread.joinable()) lane.thread.join();
}

void CpuPreparedModel::lane_main(size_t lane_index, const std::vector<int>& cpus) {
  if (!cpus.empty()) {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int cpu : cpus) CPU_SET(cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
  }
  // OpenMP's thread budget is per thread: this lane's primitives use threads_per_stream.
  omp_set_num_threads(options_.threads_per_stream);
  uint64_t seen = 0;
  for (;;) {
    CpuRequest* request;
    size_t first, last;
    {
      auto ready = [&] { return shutdown_ || job_generation_.load() != seen; };
      spin_until(ready, spin_);
      std::unique_lock lock(job_mutex_);
      job_cv_.wait(lock, ready);
      if (shutdown_) return;
      seen = job_generation_;
      request = job_request_;
      first = job_first_;
      last = job_last_;
    }
    try {
      run_lane(lanes_[lane_index], lane_index, *request, first, last);
    } catch (...) {
      std::lock_guard lock(job_mutex_);
      if (!failed_.exchange(true)) failure_ = std::current_exception();
      // Release every waiter so no lane blocks forever on an event this lane will not record.
      for (auto& e : request->events()) {
        e.store(request->epoch, std::memory_order_release);
        e.notify_all();
      }
    }
    {
      std::lock_guard lock(job_mutex_);
      --lanes_busy_;
    }
    done_cv_.notify_all();
  }
}

void CpuPreparedModel::run_lane(Lane& lane, size_t lane_index, CpuRequest& request, size_t first,
                                size_t last) {
  const uint64_t epoch = request.epoch;
  auto& events = request.events();
  auto& timings = request.timings()[lane_index];
  const KernelContext context{request.arena(), &lane.state};
  for (uint32_t i = lane.block_begin[first]; i < lane.block_begin[last]; ++i) {
    const CompiledStep& step = lane.steps[i];
    switch (step.kind) {
      case CompiledStep::Kind::kLaunch: {
        if (failed_.load(std::memory_order_relaxed)) return;
        auto begin = Clock::now();
        for (const auto& kernel : unit_kernels_[step.id]) kernel->execute(context);
        timings.push_back({make_id<UnitId>(step.id), begin, Clock::now()});
        break;
      }
      case CompiledStep::Kind::kRecord:
        events[step.id].store(epoch, std::memory_order_release);
        events[step.id].notify_all();
        break;
      case CompiledStep::Kind::kWait: {
        auto& e = events[step.id];
        spin_until([&] { return e.load(std::memory_order_acquire) == epoch; }, spin_);
        for (uint64_t v = e.load(std::memory_order_acquire); v != epoch;
             v = e.load(std::memory_order_acquire))
          e.wait(v, std::memory_order_acquire);
        break;
      }
    }
  }
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
  BRAID_CHECK(first == 0 || first == request.next_block, ErrorCode::kInvalidArgument, "block ",
              first, " run out of order: the request is at block ", request.next_block);
  std::lock_guard run_lock(run_mutex_);
  if (first == 0) {
    ++request.epoch;
    request.start = Clock::now();
  }
  for (auto& t : request.timings()) t.clear();
  const Clock::time_point dispatched = Clock::now();
  {
    std::lock_guard lock(job_mutex_);
    job_request_ = &request;
    job_first_ = first;
    job_last_ = last;
    lanes_busy_ = lanes_.size();
    failed_ = false;
    failure_ = nullptr;
    ++job_generation_;
  }
  job_cv_.notify_all();
  {
    std::unique_lock lock(job_mutex_);
    done_cv_.wait(lock, [&] { return lanes_busy_ == 0; });
  }
  const RunStats stats{.device_time = Clock::now() - dispatched};
  request.next_block = last;
  if (failure_) std::rethrow_exception(failure_);
  if (observer)
    for (size_t lane = 0; lane < request.timings().size(); ++lane)
      for (const UnitTiming& t : request.timings()[lane])
        observer->on_unit(lane, t.unit, t.begin - request.start, t.end - request.start);
  return stats;
}

class CpuExecutor final : public Executor {
 public:
  explicit CpuExecutor(const CpuExecutorOptions& options) : options_(options) {}
  std::string_view name() const override { return "cpu"; }
  bool supports(const ir::Graph& graph, NodeId node) const override {
    return cpu::supports(graph, node);
  }
  std::unique_ptr<PreparedModel> prepare(const ModelBundle& model) override {
    BRAID_CHECK(
        model.graph && model.weights && model.units && model.plan, ErrorCode::kInvalidArgument,
        "the CPU executor needs a graph, weights, units and a plan (a weighted DAG cannot run)");
    return std::make_unique<CpuPreparedModel>(model, options_);
  }

 private:
  CpuExecutorOptions options_;
};

}  // namespace

std::unique_ptr<Executor> make_cpu_executor(const CpuExecutorOptions& options) {
  BRAID_CHECK(options.threads_per_stream >= 1, ErrorCode::kInvalidArgument,
              "threads per stream must be >= 1, got ", options.threads_per_stream);
  return std::make_unique<CpuExecutor>(options);
}

}  // namespace braid::exec
