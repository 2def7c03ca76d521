#include "exec/sim/sim_executor.h"

#include <fmt/core.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "sim/program.h"

namespace braid::exec {
namespace {

class SimRequest final : public Request {
 public:
  std::unique_ptr<Request> values;  // the CPU executor's request, when computing values
  sim::Program program;
  sim::Result result;
  std::vector<std::vector<uint32_t>> unit_kernels;
  std::vector<size_t> stream_lane;
};

class SimPreparedModel final : public PreparedModel {
 public:
  SimPreparedModel(const ModelBundle& model, const SimExecutorOptions& options,
                   std::unique_ptr<PreparedModel> values)
      : units_(*model.units), plan_(*model.plan), options_(options), values_(std::move(values)) {
    for (const sched::PlanLane& lane : plan_.lanes)
      BRAID_CHECK(lane.device >= 0 && size_t(lane.device) < options_.devices.size(),
                  ErrorCode::kInvalidArgument, "the schedule uses device ", lane.device,
                  " but the simulator was given ", options_.devices.size(), " device(s)");
    for (const sim::DeviceSpec& spec : options_.devices)
      kernels_.push_back(std::make_unique<sim::UnitKernels>(units_, spec));
    for (const auto& k : kernels_) kernel_ptrs_.push_back(k.get());
  }

  std::unique_ptr<Request> new_request() const override {
    auto r = std::make_unique<SimRequest>();
    if (values_) r->values = values_->new_request();
    return r;
  }
  void set_input(Request& request, size_t i, std::span<const float> data) const override {
    auto& r = static_cast<SimRequest&>(request);
    if (values_) values_->set_input(*r.values, i, data);
  }
  std::span<const float> output(const Request& request, size_t i) const override {
    const auto& r = static_cast<const SimRequest&>(request);
    BRAID_CHECK(values_ != nullptr, ErrorCode::kInvalidArgument,
                "the sim executor was prepared without values (compute_values = false)");
    return values_->output(*r.values, i);
  }
  size_t num_blocks() const override { return plan_.num_blocks; }
  Bytes activation_bytes() const override { return values_ ? values_->activation_bytes() : 0; }

  RunStats run_blocks(Request& request, size_t first, size_t last, RunObserver* observer) override {
    auto& r = static_cast<SimRequest&>(request);
    if (values_) values_->run_blocks(*r.values, first, last, nullptr);
    sim::PlanProgram p = sim::plan_program(units_, plan_, kernel_ptrs_, first, last);
    const bool timeline = options_.record_timeline || observer != nullptr;
    r.result = sim::simulate(p.program, options_.devices,
                             {.graph_replay = options_.graph_replay, .record_timeline = timeline});
    r.program = std::move(p.program);
    r.unit_kernels = std::move(p.unit_kernels);
    r.stream_lane = std::move(p.stream_lane);
    const RunStats stats{.device_time = Micros(r.result.makespan_us)};
    if (observer == nullptr) return stats;
    for (size_t u = 0; u < units_.num_units(); ++u) {
      const auto& ks = r.unit_kernels[u];
      if (ks.empty()) continue;
      double begin = r.result.kernels[ks.front()].start_us, end = 0;
      for (uint32_t k : ks) {
        begin = std::min(begin, r.result.kernels[k].start_us);
        end = std::max(end, r.result.kernels[k].end_us);
      }
      const size_t lane = r.stream_lane[r.result.kernels[ks.front()].stream];
      observer->on_unit(lane, UnitId(u), Micros(begin), Micros(end));
    }
    return stats;
  }

 private:
  const ir::UnitGraph units_;  // copies: the prepared model owns what it runs
  const sched::ExecutionPlan plan_;
  SimExecutorOptions options_;
  std::unique_ptr<PreparedModel> values_;
  std::vector<std::unique_ptr<sim::UnitKernels>> kernels_;
  std::vector<const sim::UnitKernels*> kernel_ptrs_;
};

class SimExecutor final : public Executor {
 public:
  explicit SimExecutor(SimExecutorOptions options) : options_(std::move(options)) {
    BRAID_CHECK(!options_.devices.empty(), ErrorCode::kInvalidArgument,
                "the sim executor needs at least one device");
    name_ = "sim:" + options_.devices.front().name;
    if (options_.compute_values) cpu_ = make_cpu_executor(options_.cpu);
  }
  std::string_view name() const override { return name_; }
  bool supports(const ir::Graph& graph, NodeId node) const override {
    return cpu_ ? cpu_->supports(graph, node) : true;
  }
  std::unique_ptr<PreparedModel> prepare(const ModelBundle& model) override {
    BRAID_CHECK(model.units != nullptr && model.plan != nullptr, ErrorCode::kInvalidArgument,
                "sim executor: a model bundle needs units and a plan");
    std::unique_ptr<PreparedModel> values;
    if (cpu_ && model.graph) values = cpu_->prepare(model);
    return std::make_unique<SimPreparedModel>(model, options_, std::move(values));
  }

 private:
  SimExecutorOptions options_;
  std::string name_;
  std::unique_ptr<Executor> cpu_;
};

}  // namespace

std::unique_ptr<Executor> make_sim_executor(SimExecutorOptions options) {
  return std::make_unique<SimExecutor>(std::move(options));
}

const sim::Result* last_simulation(const Request& request) {
  const auto* r = dynamic_cast<const SimRequest*>(&request);
  return r ? &r->result : nullptr;
}

const sim::Program* last_program(const Request& request) {
  const auto* r = dynamic_cast<const SimRequest*>(&request);
  return r ? &r->program : nullptr;
}

void write_sim_trace(const Request& request, const ir::UnitGraph& units, const std::string& title,
                     const std::string& path) {
  const auto* r = dynamic_cast<const SimRequest*>(&request);
  BRAID_CHECK(r != nullptr && r->result.kernels.size() == r->program.kernels.size(),
              ErrorCode::kInvalidArgument,
              "write_sim_trace: the request's last run kept no sim timeline");
  using nlohmann::json;
  json events = json::array();
  events.push_back(
      {{"ph", "M"}, {"pid", 0}, {"name", "process_name"}, {"args", {{"name", title}}}});
  for (size_t s = 0; s < r->program.streams.size(); ++s) {
    const sim::StreamInfo& info = r->program.streams[s];
    events.push_back(
        {{"ph", "M"},
         {"pid", info.device},
         {"tid", s},
         {"name", "thread_name"},
         {"args", {{"name", fmt::format("device {} stream {}", info.device, info.id)}}}});
  }
  for (size_t k = 0; k < r->program.kernels.size(); ++k) {
    const sim::Kernel& kernel = r->program.kernels[k];
    const sim::KernelTiming& t = r->result.kernels[k];
    events.push_back({{"ph", "X"},
                      {"pid", t.device},
                      {"tid", t.stream},
                      {"name", kernel.name},
                      {"ts", t.start_us},
                      {"dur", t.end_us - t.start_us},
                      {"args",
                       {{"unit", units.unit(kernel.unit).name},
                        {"blocks", kernel.blocks},
                        {"threads", kernel.threads},
                        {"issued_us", t.issue_us}}}});
  }
  for (const sim::OccupancySample& o : r->result.occupancy)
    events.push_back(
        {{"ph", "C"},
         {"pid", o.device},
         {"name", "occupancy"},
         {"ts", o.at_us},
         {"args", {{"achieved_occupancy", o.occupancy}, {"active_sms", o.active_sms}}}});
  std::ofstream out(path);
  BRAID_CHECK(out.good(), ErrorCode::kInvalidArgument, "cannot write '", path, "'");
  out << json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}.dump() << "\n";
}

}  // namespace braid::exec
