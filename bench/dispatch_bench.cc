// dispatch_bench — what replaying a lowered plan costs per unit on the CPU executor.
//
// Each unit is one Relu on a one-element tensor: a real oneDNN eltwise primitive (bind two
// arena pointers, execute, record the unit's timing), but with no arithmetic to speak of, so the
// time per unit is the executor's dispatch overhead plus oneDNN's fixed execute() cost.
// (Identity would not do: cpu_kernels.h says a view whose output the executor aliases to its
// input produces no kernel at all. And a chain of Relus would fuse into one unit, so every Relu
// carries its own unit hint.)
//
//   ninja -C build-bench dispatch_bench
//   taskset -c 0,1 build-bench/bench/dispatch_bench --benchmark_min_time=0.3
//   --benchmark_repetitions=3
//
// Graphs and schedules (N = units in the whole graph):
//   chain_sequential    x -> Relu -> ... -> Relu: one lane, no events.
//   chain_random2       the same chain dealt onto 2 streams at random (seed 1): about half the
//                       edges cross lanes, so each of those costs an event record + wait, i.e. a
//                       cross-thread wake-up; the worst case for a 2-stream plan.
//   two_lanes_parallel  two independent chains of N/2 units, one per lane, no events: two lanes
//                       dispatching side by side (each lane pinned to its own CPU).
//   KernelsOnly         the same N kernels executed back to back by the benchmark thread, no
//                       executor: oneDNN's own per-execute cost, to subtract. threads:2 runs
//                       two such loops at once (compare with two_lanes_parallel).
// Counters: us_per_unit = wall time of run() / N; N = 1 gives run()'s fixed cost (waking the
// lane threads and waiting for them). other_cores: CPU used by other processes meanwhile (above
// 0.10 the row is noisy). The target: under 2 µs per unit.
// Benchmarks measure, they do not assert (STYLE.md §5).
#include <benchmark/benchmark.h>
#include <omp.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "base/stats.h"
#include "exec/cpu/cpu_executor.h"
#include "exec/cpu/cpu_kernels.h"
#include "ir/graph.h"
#include "ir/unit_graph.h"
#include "ir/weights.h"
#include "sched/lower.h"
#include "sched/random_schedule.h"
#include "sched/registry.h"
#include "sched/validate.h"

namespace braid {
namespace {

using Clock = std::chrono::steady_clock;

// `chains` independent chains of `length` Relus each, on one shared 1-element input; every
// chain's last value is a graph output. Each Relu is its own unit.
std::shared_ptr<const ir::Graph> relu_chains(int chains, int length) {
  ir::GraphBuilder b("relu_chains");
  const ValueId x = b.add_input("x", {ir::DType::kFloat32, {1}});
  for (int c = 0; c < chains; ++c) {
    ValueId v = x;
    for (int i = 0; i < length; ++i) {
      const NodeId n = b.add_node(ir::OpKind::Relu, {}, {v},
                                  "relu_" + std::to_string(c) + "_" + std::to_string(i));
      b.add_unit_hint({n});
      v = b.output(n);
    }
    b.mark_output(v);
  }
  return std::make_shared<const ir::Graph>(std::move(b).build());
}

enum class Plan { kSequential, kRandom2, kParallel2 };

struct Fixture {
  std::shared_ptr<const ir::Graph> graph;
  std::shared_ptr<const ir::Weights> weights;
  ir::UnitGraph units;
  sched::ExecutionPlan plan;
  std::unique_ptr<exec::PreparedModel> model;
  std::unique_ptr<exec::Request> request;
  size_t events = 0;
};

std::unique_ptr<Fixture> make_fixture(int num_units, Plan kind) {
  auto f = std::make_unique<Fixture>();
  const int chains = kind == Plan::kParallel2 && num_units >= 2 ? 2 : 1;
  f->graph = relu_chains(chains, num_units / chains);
  f->weights = std::make_shared<const ir::Weights>(ir::Weights::generate(*f->graph, 1));
  f->units = ir::fuse(f->graph);
  sched::Schedule s;
  switch (kind) {
    case Plan::kSequential:
      s = sched::make_scheduler("sequential")->schedule(f->units);
      break;
    case Plan::kRandom2:
      s = sched::random_stream_schedule(f->units, 2, /*seed=*/1);
      break;
    case Plan::kParallel2: {
      // Chain c's units are the ids [c * L, (c + 1) * L): fuse numbers units topologically,
      // hints first, in graph order.
      s.algorithm = "two_lanes";
      for (int c = 0; c < chains; ++c) {
        sched::Lane lane{.stream = c};
        for (int i = 0; i < num_units / chains; ++i)
          lane.units.push_back(f->units.unit_of(make_id<NodeId>(c * (num_units / chains) + i)));
        s.lanes.push_back(std::move(lane));
      }
      break;
    }
  }
  sched::validate_or_throw(f->units, s);
  f->plan = sched::lower(f->units, s);
  f->events = f->plan.num_events;
  f->model = exec::make_cpu_executor({.threads_per_stream = 1})
                 ->prepare({f->graph, f->weights, &f->units, &f->plan});
  f->request = f->model->new_request();
  const std::vector<float> x = {0.5f};
  f->model->set_input(*f->request, 0, x);
  return f;
}

// Hygiene (bench/README.md): how many cores did other processes use while a benchmark ran?
// Busy ticks of every CPU in /proc/stat minus this process's own CPU time (threads included),
// less a slack of two ticks per CPU for the tick sampling. Coarse: trust it on runs of 0.3 s or
// more (--benchmark_min_time). Above 0.10 the numbers are noisy.
class CpuWatch {
 public:
  CpuWatch() : wall_(Clock::now()), ticks_(busy_ticks()), own_(own_seconds()) {}
  double other_cores() const {
    const double wall = std::chrono::duration<double>(Clock::now() - wall_).count();
    const double hz = static_cast<double>(sysconf(_SC_CLK_TCK));
    const double slack = 2.0 * static_cast<double>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
    const double busy = std::max(0.0, static_cast<double>(busy_ticks() - ticks_) - slack) / hz;
    return std::max(0.0, busy - (own_seconds() - own_)) / wall;
  }

 private:
  static int64_t busy_ticks() {
    std::ifstream in("/proc/stat");
    std::string cpu;
    int64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
    in >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal;
    return user + nice + system + irq + softirq + steal;
  }
  static double own_seconds() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    auto s = [](const timeval& t) {
      return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6;
    };
    return s(u.ru_utime) + s(u.ru_stime);
  }
  Clock::time_point wall_;
  int64_t ticks_;
  double own_;
};

void report(benchmark::State& state, double seconds, int64_t units_per_iteration,
            const CpuWatch& watch) {
  // Averaged over benchmark threads (KernelsOnly runs on two): each thread reports its own.
  constexpr auto kAvg = benchmark::Counter::kAvgThreads;
  state.counters["other_cores"] = benchmark::Counter(watch.other_cores(), kAvg);
  const double runs = static_cast<double>(state.iterations());
  state.counters["us_per_run"] = benchmark::Counter(seconds * 1e6 / runs, kAvg);
  state.counters["us_per_unit"] =
      benchmark::Counter(seconds * 1e6 / (runs * static_cast<double>(units_per_iteration)), kAvg);
}

// Pins the calling thread to one CPU for the scope; restores its mask after.
class PinCaller {
 public:
  explicit PinCaller(int cpu) {
    pthread_getaffinity_np(pthread_self(), sizeof(saved_), &saved_);
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
  }
  ~PinCaller() { pthread_setaffinity_np(pthread_self(), sizeof(saved_), &saved_); }

 private:
  cpu_set_t saved_;
};

// model->run(request) on a prepared plan, timed by wall clock (the caller blocks while the lane
// threads work, so CPU time of this thread says nothing). Arg 1, caller_cpu: which allowed CPU
// the calling thread is pinned to after prepare. Lane 0 sits on the first allowed CPU, so 0 means
// the caller shares lane 0's CPU and 1 means run() has to wake lane 0 on another CPU (a
// cross-CPU futex wake-up, tens of microseconds on this VM: see bench/README.md).
void BM_Run(benchmark::State& state, Plan kind) {
  const int n = static_cast<int>(state.range(0));
  const std::vector<int> cpus = allowed_cpus();
  auto f = make_fixture(n, kind);  // lanes take CPUs from the whole mask, before the pin below
  const PinCaller pin(cpus.empty() ? 0 : cpus[static_cast<size_t>(state.range(1)) % cpus.size()]);
  for (int i = 0; i < 10; ++i) f->model->run(*f->request);  // warm-up: lanes awake, pages touched
  double seconds = 0;
  const CpuWatch watch;
  for (auto _ : state) {
    const auto begin = Clock::now();
    f->model->run(*f->request);
    seconds += std::chrono::duration<double>(Clock::now() - begin).count();
  }
  benchmark::DoNotOptimize(f->model->output(*f->request, 0).data());
  report(state, seconds, n, watch);
  state.counters["lanes"] = static_cast<double>(f->plan.lanes.size());
  state.counters["events"] = static_cast<double>(f->events);
}

// The same N kernels, built exactly as the executor builds them, executed back to back on the
// benchmark thread: no lanes, no events, no timing records.
void BM_KernelsOnly(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  auto graph = relu_chains(1, n);
  omp_set_num_threads(1);  // as a lane with threads_per_stream = 1, at build and at execute
  alignas(64) float arena[16] = {};  // per benchmark thread: no sharing between threads
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  exec::TensorLocator locate = [&](ValueId v) {
    exec::TensorRef ref;
    ref.type = graph->value(v).type;
    ref.arena_offset = (index(v) % 2) * sizeof(float);  // ping-pong between two slots
    return ref;
  };
  std::vector<std::unique_ptr<exec::Kernel>> kernels;
  Bytes scratch = 0;
  for (size_t i = 0; i < graph->num_nodes(); ++i) {
    const NodeId node = make_id<NodeId>(i);
    auto k = exec::cpu::make_unit_kernels(*graph, std::span(&node, 1), locate, {engine}, &scratch);
    for (auto& kernel : k) kernels.push_back(std::move(kernel));
  }
  std::vector<std::byte> scratchpad(std::max<Bytes>(scratch, 64));
  exec::cpu::LaneState lane{dnnl::stream(engine), scratchpad.data()};
  const exec::KernelContext context{.arena = reinterpret_cast<std::byte*>(arena),
                                    .lane_state = &lane};
  arena[0] = 0.5f;
  double seconds = 0;
  const CpuWatch watch;
  for (auto _ : state) {
    const auto begin = Clock::now();
    for (const auto& k : kernels) k->execute(context);
    seconds += std::chrono::duration<double>(Clock::now() - begin).count();
  }
  benchmark::DoNotOptimize(arena[1]);
  report(state, seconds, n, watch);
}

std::string read_line(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

BENCHMARK_CAPTURE(BM_Run, chain_sequential, Plan::kSequential)
    ->ArgNames({"units", "caller_cpu"})
    ->ArgsProduct({{1, 100, 1000}, {0, 1}})
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Run, chain_random2, Plan::kRandom2)
    ->ArgNames({"units", "caller_cpu"})
    ->ArgsProduct({{100, 1000}, {0}})
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Run, two_lanes_parallel, Plan::kParallel2)
    ->ArgNames({"units", "caller_cpu"})
    ->ArgsProduct({{2, 100, 1000}, {0}})
    ->UseRealTime();
BENCHMARK(BM_KernelsOnly)->Arg(100)->Arg(1000)->UseRealTime();
BENCHMARK(BM_KernelsOnly)->Arg(1000)->Threads(2)->UseRealTime();

}  // namespace
}  // namespace braid

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  // Hygiene: the load when the run started, in the report's context (bench/README.md).
  benchmark::AddCustomContext("loadavg_before", braid::read_line("/proc/loadavg"));
  benchmark::RunSpecifiedBenchmarks();
  std::fprintf(stderr, "loadavg after: %s\n", braid::read_line("/proc/loadavg").c_str());
  benchmark::Shutdown();
  return 0;
}
