#include "exec/mpi/mpi_executor.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#include "base/error.h"

namespace braid::exec {
namespace {

using Clock = std::chrono::steady_clock;

// Sends started by the units of one run; completed before the run returns (their staging
// copies must outlive them).
struct PendingSends {
  std::mutex mutex;
  std::vector<MPI_Request> requests;
  void add(MPI_Request r) {
    std::lock_guard lock(mutex);
    requests.push_back(r);
  }
  void wait_all() {
    std::lock_guard lock(mutex);
    if (!requests.empty()) MPI_Waitall(int(requests.size()), requests.data(), MPI_STATUSES_IGNORE);
    requests.clear();
  }
};

struct Message {
  ValueId value{};
  int peer = 0;  // destination (send) or source (receive) rank
  TensorRef ref;
};

// After a local unit: copy each output another device needs and send it.
class SendKernel final : public Kernel {
 public:
  SendKernel(std::vector<Message> messages, PendingSends& pending)
      : messages_(std::move(messages)), pending_(pending) {
    for (const Message& m : messages_) staging_.emplace_back(size_t(m.ref.type.elements()));
  }
  void execute(const KernelContext& context) const override {
    for (size_t i = 0; i < messages_.size(); ++i) {
      const Message& m = messages_[i];
      std::memcpy(staging_[i].data(), m.ref.data(context), staging_[i].size() * sizeof(float));
      MPI_Request request;
      MPI_Isend(staging_[i].data(), int(staging_[i].size()), MPI_FLOAT, m.peer, int(index(m.value)),
                MPI_COMM_WORLD, &request);
      pending_.add(request);
    }
  }

 private:
  std::vector<Message> messages_;
  PendingSends& pending_;
  mutable std::vector<std::vector<float>> staging_;
};

// In place of a remote unit: receive the outputs this rank needs, polling so that a dead peer
// ends the job instead of hanging it.
class ReceiveKernel final : public Kernel {
 public:
  ReceiveKernel(std::vector<Message> messages, const ir::Graph& graph, double timeout_s)
      : messages_(std::move(messages)), graph_(graph), timeout_s_(timeout_s) {}
  void execute(const KernelContext& context) const override {
    for (const Message& m : messages_) {
      MPI_Request request;
      MPI_Irecv(m.ref.data(context), int(m.ref.type.elements()), MPI_FLOAT, m.peer,
                int(index(m.value)), MPI_COMM_WORLD, &request);
      const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s_);
      for (int done = 0;;) {
        MPI_Test(&request, &done, MPI_STATUS_IGNORE);
        if (done) break;
        if (Clock::now() > deadline) {
          std::fprintf(stderr,
                       "braid: error: rank %d: no tensor '%s' from rank %d after %.0f s (did "
                       "rank %d fail?); aborting every rank\n",
                       mpi_rank(), graph_.value(m.value).name.c_str(), m.peer, timeout_s_, m.peer);
          MPI_Abort(MPI_COMM_WORLD, 2);
        }
        std::this_thread::sleep_for(std::chrono::microseconds(20));
      }
    }
  }

 private:
  std::vector<Message> messages_;
  const ir::Graph& graph_;
  double timeout_s_;
};

class MpiPreparedModel final : public PreparedModel {
 public:
  MpiPreparedModel(const ModelBundle& bundle, const MpiExecutorOptions& options)
      : graph_(*bundle.graph) {
    const ir::UnitGraph& units = *bundle.units;
    const sched::ExecutionPlan& plan = *bundle.plan;
    const int rank = mpi_rank(), size = mpi_size();
    // Where each unit runs.
    std::vector<int> device(units.num_units(), -1);
    int devices = 1;
    for (const sched::PlanLane& lane : plan.lanes) {
      devices = std::max(devices, lane.device + 1);
      for (const sched::Step& step : lane.steps)
        if (const auto* l = std::get_if<sched::LaunchStep>(&step))
          device[index(l->unit)] = lane.device;
    }
    BRAID_CHECK(devices <= size, ErrorCode::kInvalidArgument, "the schedule uses ", devices,
                " devices but mpirun started ", size, " rank(s): run with -np ", devices);
    int* tag_ub = nullptr;
    int found = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &found);
    BRAID_CHECK(!found || int64_t(graph_.num_values()) <= int64_t(*tag_ub), ErrorCode::kUnsupported,
                "mpi: ", graph_.num_values(), " tensors exceed MPI's largest tag ", *tag_ub);
    // Who needs each value: the devices of its consumers, and rank 0 for graph outputs.
    auto needed_by = [&](ValueId v) {
      std::vector<int> ranks;
      for (NodeId c : graph_.value(v).consumers) ranks.push_back(device[index(units.unit_of(c))]);
      if (graph_.is_output(v)) ranks.push_back(0);
      std::sort(ranks.begin(), ranks.end());
      ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
      return ranks;
    };
    CpuExecutorOptions cpu = options.cpu;
    cpu.is_local = [device, rank](UnitId u) { return device[index(u)] == rank; };
    cpu.extra_kernels = [this, &units, device, rank, needed_by, timeout = options.timeout_s](
                            UnitId u, const TensorLocator& locate) {
      std::vector<std::unique_ptr<Kernel>> out;
      std::vector<Message> messages;
      const int at = device[index(u)];
      for (NodeId n : units.unit(u).ops)
        for (ValueId v : graph_.node(n).outputs)
          for (int peer : needed_by(v)) {
            if (at == rank && peer != rank) messages.push_back({v, peer, locate(v)});  // send
            if (at != rank && peer == rank) messages.push_back({v, at, locate(v)});    // receive
          }
      if (messages.empty()) return out;
      if (at == rank)
        out.push_back(std::make_unique<SendKernel>(std::move(messages), sends_));
      else
        out.push_back(std::make_unique<ReceiveKernel>(std::move(messages), graph_, timeout));
      return out;
    };
    cpu_ = make_cpu_executor(cpu)->prepare(bundle);
  }

  std::unique_ptr<Request> new_request() const override { return cpu_->new_request(); }
  void set_input(Request& request, size_t i, std::span<const float> data) const override {
    cpu_->set_input(request, i, data);
  }
  std::span<const float> output(const Request& request, size_t i) const override {
    return cpu_->output(request, i);  // complete on rank 0
  }
  size_t num_blocks() const override { return cpu_->num_blocks(); }
  Bytes activation_bytes() const override { return cpu_->activation_bytes(); }
  RunStats run_blocks(Request& request, size_t first, size_t last, RunObserver* observer) override {
    // Fault injection for the failure test: this rank leaves before running (as if it died).
    if (const char* die = std::getenv("BRAID_MPI_TEST_EXIT_RANK");
        die && std::atoi(die) == mpi_rank())
      std::_Exit(3);
    if (const char* stall = std::getenv("BRAID_MPI_TEST_STALL_RANK");
        stall && std::atoi(stall) == mpi_rank())
      for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));  // alive but silent
    const RunStats stats = cpu_->run_blocks(request, first, last, observer);
    sends_.wait_all();
    return stats;
  }

 private:
  const ir::Graph& graph_;
  PendingSends sends_;
  std::unique_ptr<PreparedModel> cpu_;
};

class MpiExecutor final : public Executor {
 public:
  explicit MpiExecutor(const MpiExecutorOptions& options)
      : options_(options), name_("mpi:" + std::to_string(mpi_size())) {}
  std::string_view name() const override { return name_; }
  bool supports(const ir::Graph& graph, NodeId node) const override {
    return make_cpu_executor(options_.cpu)->supports(graph, node);
  }
  std::unique_ptr<PreparedModel> prepare(const ModelBundle& bundle) override {
    return std::make_unique<MpiPreparedModel>(bundle, options_);
  }

 private:
  MpiExecutorOptions options_;
  std::string name_;
};

}  // namespace

bool launched_by_mpirun() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMI_SIZE") != nullptr;
}

void mpi_init() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) return;
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
  BRAID_CHECK(provided >= MPI_THREAD_MULTIPLE, ErrorCode::kUnsupported,
              "mpi: the MPI library does not support MPI_THREAD_MULTIPLE");
  std::atexit([] {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  });
}

int mpi_rank() {
  int initialized = 0, rank = 0;
  MPI_Initialized(&initialized);
  if (initialized) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

int mpi_size() {
  int initialized = 0, size = 1;
  MPI_Initialized(&initialized);
  if (initialized) MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

void mpi_barrier() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) MPI_Barrier(MPI_COMM_WORLD);
}

LinkMeasurement measure_link() {
  BRAID_CHECK(mpi_size() >= 2, ErrorCode::kInvalidArgument,
              "measuring a link needs two ranks: run under mpirun -np 2");
  const int rank = mpi_rank();
  LinkMeasurement m;
  for (int64_t bytes = 1024; bytes <= (int64_t{32} << 20); bytes *= 4) {
    std::vector<char> buffer(size_t(bytes), 1);
    const int rounds = bytes >= (int64_t{4} << 20) ? 5 : 20;
    double best = 1e300;
    for (int r = -1; r < rounds; ++r) {  // round -1 warms up
      MPI_Barrier(MPI_COMM_WORLD);
      const auto begin = Clock::now();
      if (rank == 0) {
        MPI_Send(buffer.data(), int(bytes), MPI_BYTE, 1, 7, MPI_COMM_WORLD);
        MPI_Recv(buffer.data(), int(bytes), MPI_BYTE, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else if (rank == 1) {
        MPI_Recv(buffer.data(), int(bytes), MPI_BYTE, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(buffer.data(), int(bytes), MPI_BYTE, 0, 7, MPI_COMM_WORLD);
      }
      const double one_way =
          std::chrono::duration<double, std::micro>(Clock::now() - begin).count() / 2;
      if (r >= 0) best = std::min(best, one_way);  // the least disturbed round trip
    }
    MPI_Bcast(&best, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    m.samples.push_back({double(bytes), best});
  }
  // Least squares: one_way = latency + bytes / (gbps * 1e3).
  double n = double(m.samples.size()), sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (auto [x, y] : m.samples) sx += x, sy += y, sxx += x * x, sxy += x * y;
  const double slope = (n * sxy - sx * sy) / (n * sxx - sx * sx);  // us per byte
  m.gbps = slope > 0 ? 1.0 / (slope * 1e3) : 1e6;
  // The bandwidth from the fit (large messages dominate it); the fixed cost from the smallest
  // message, which the fit's intercept (pulled by the large ones) can get below zero.
  m.latency_us = std::max(0.0, m.samples.front().second - m.samples.front().first / (m.gbps * 1e3));
  return m;
}

std::unique_ptr<Executor> make_mpi_executor(const MpiExecutorOptions& given) {
  MpiExecutorOptions options = given;
  if (const char* t = std::getenv("BRAID_MPI_TIMEOUT_S"); t && std::atof(t) > 0)
    options.timeout_s = std::atof(t);
  int initialized = 0;
  MPI_Initialized(&initialized);
  BRAID_CHECK(initialized, ErrorCode::kInvalidArgument,
              "the MPI executor needs MPI initialized (run under mpirun)");
  return std::make_unique<MpiExecutor>(options);
}

}  // namespace braid::exec
