#include "session/session.h"

#include <mutex>

#include <fmt/format.h>

#include "base/error.h"
#include "cost/profile_cache.h"
#include "exec/chrome_trace.h"
#include "exec/cpu/cpu_executor.h"
#include "exec/cuda/cuda_executor.h"
#include "exec/sim/sim_executor.h"
#include "models/onnx_import.h"
#include "sched/lower.h"
#include "sched/validate.h"
#include "sim/device_spec.h"
#include "tune/auto_schedule.h"
#include "tune/cost_models.h"

namespace braid::session {

struct Session::Impl {
  std::string name;
  models::LoadedModel model;
  std::shared_ptr<const ir::Weights> weights;
  std::vector<TensorInfo> inputs, outputs;
  sched::Schedule schedule;
  std::string summary;
  Device device;
  sched::ExecutionPlan plan;  // the prepared model may keep a pointer to it
  std::unique_ptr<exec::Executor> executor;
  std::unique_ptr<exec::PreparedModel> prepared;

  // Requests (activation arenas) not lent to an Outputs: reused, so a run allocates nothing.
  std::mutex pool_mutex;
  std::vector<std::unique_ptr<exec::Request>> pool;
  // Executors whose requests cannot run side by side run one at a time.
  std::mutex run_mutex;

  std::unique_ptr<exec::Request> take_request() {
    {
      std::lock_guard lock(pool_mutex);
      if (!pool.empty()) {
        std::unique_ptr<exec::Request> r = std::move(pool.back());
        pool.pop_back();
        return r;
      }
    }
    return prepared->new_request();
  }
  void give_back(std::unique_ptr<exec::Request> r) {
    std::lock_guard lock(pool_mutex);
    pool.push_back(std::move(r));
  }
};

struct Outputs::Lease {
  std::shared_ptr<Session::Impl> session;
  std::unique_ptr<exec::Request> request;
  ~Lease() {
    if (request) session->give_back(std::move(request));
  }
};

namespace {

std::unique_ptr<exec::Executor> make_executor(const SessionOptions& o, int num_devices) {
  const exec::CpuExecutorOptions cpu{.threads_per_stream = o.threads_per_stream,
                                     .pin_threads = o.pin_threads};
  switch (o.device.kind) {
    case Device::Kind::kCpu:
      return exec::make_cpu_executor(cpu);
    case Device::Kind::kCuda:
      return exec::make_cuda_executor(
          {.device = o.device.index, .graph = true, .precision = o.precision});
    case Device::Kind::kSim: {
      // Simulated time, the values from the CPU executor (as tune::measure_schedule on sim).
      exec::SimExecutorOptions sim{.graph_replay = true, .compute_values = true, .cpu = cpu};
      sim.devices.assign(num_devices,
                         sim::with_precision(sim::load_device(o.device.sim), o.precision));
      return exec::make_sim_executor(std::move(sim));
    }
  }
  BRAID_THROW(ErrorCode::kInvalidArgument, "device '", to_string(o.device), "' of no kind");
}

std::shared_ptr<Session::Impl> build(models::LoadedModel model, const SessionOptions& o) {
  BRAID_CHECK(model.graph != nullptr, ErrorCode::kInvalidArgument, "'", model.spec,
              "' is a weighted DAG: it has no operators to run");
  BRAID_CHECK(o.threads_per_stream >= 1, ErrorCode::kInvalidArgument,
              "threads per stream must be at least 1, got ", o.threads_per_stream);
  auto s = std::make_shared<Session::Impl>();
  s->model = std::move(model);
  s->name = s->model.units.name();
  s->weights = std::make_shared<const ir::Weights>(std::move(s->model.weights));
  s->inputs = tensor_infos(*s->model.graph, s->model.graph->inputs(), s->model.declared.inputs);
  s->outputs = tensor_infos(*s->model.graph, s->model.graph->outputs(), s->model.declared.outputs);
  BRAID_CHECK(o.schedule_options.num_devices == 1 || o.device.is_sim(), ErrorCode::kInvalidArgument,
              "a session on ", to_string(o.device), " runs on one device (several: sim:NAME)");
  BRAID_CHECK(o.precision == Precision::kFp32 || o.device.is_gpu(), ErrorCode::kInvalidArgument,
              "precision ", to_string(o.precision), " needs a GPU device (cuda:N or sim:NAME); ",
              to_string(o.device), " computes FP32");
  tune::require_cuda_device(o.device);  // "no CUDA device" before a search that needs it
  tune::Plan plan = tune::plan_model(s->model.units, s->weights, plan_options(o));
  s->schedule = std::move(plan.schedule);
  s->summary = std::move(plan.summary);
  s->device = o.device;
  s->executor = make_executor(o, s->schedule.num_devices);
  s->plan = sched::lower(s->model.units, s->schedule);
  exec::ModelBundle bundle{s->model.graph, s->weights, &s->model.units, &s->plan};
  for (const TensorInfo& t : s->inputs) bundle.input_types.push_back(t.type);
  for (const TensorInfo& t : s->outputs) bundle.output_types.push_back(t.type);
  s->prepared = s->executor->prepare(bundle);
  return s;
}

}  // namespace

std::vector<TensorInfo> tensor_infos(const ir::Graph& g, std::span<const ValueId> values,
                                     std::span<const models::ElementType> declared) {
  std::vector<TensorInfo> out;
  for (size_t i = 0; i < values.size(); ++i) {
    const ir::Value& value = g.value(values[i]);
    out.push_back({value.name, value.type.shape, value.type.dtype,
                   i < declared.size() ? declared[i] : models::element_type_of(value.type.dtype)});
  }
  return out;
}

tune::PlanOptions plan_options(const SessionOptions& o) {
  return {.device = o.device,
          .algorithm = o.scheduler,
          .schedule = o.schedule,
          .cost = {.model = o.cost},
          .schedule_options = o.schedule_options,
          .measure = {.device = o.device,
                      .graph_replay = o.device.is_gpu(),
                      .precision = o.precision,
                      .executor = {.threads_per_stream = o.threads_per_stream,
                                   .pin_threads = o.pin_threads}},
          .batch = o.load.zoo.batch,
          .cache_dir = cost::ProfileCache::default_dir()};
}

tune::CostSpec cost_spec(const SessionOptions& o) {
  return tune::plan_cost_spec(plan_options(o), /*weighted_dag=*/false);
}

nlohmann::json search_schedule(std::string_view model, const SessionOptions& o) {
  tune::check_algorithm_name(o.scheduler);
  BRAID_CHECK(o.scheduler != tune::kAuto, ErrorCode::kInvalidArgument,
              "auto measures on a device: open an InferenceSession with scheduler='auto' and read "
              "its schedule");
  models::LoadedModel m = models::load_model(model, o.load);
  auto weights = std::make_shared<const ir::Weights>(std::move(m.weights));
  tune::PlanOptions plan = plan_options(o);
  plan.schedule.reset();
  return sched::to_json(tune::plan_model(m.units, weights, plan).schedule, m.units);
}

Session::Session(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;
Session::~Session() = default;

Session Session::open(std::string_view model, SessionOptions options) {
  return Session(build(models::load_model(model, options.load), options));
}

Session Session::from_onnx_bytes(std::string_view bytes, std::string_view name,
                                 SessionOptions options) {
  return Session(build(models::load_onnx_bytes(bytes, name, options.load), options));
}

const std::string& Session::name() const {
  return impl_->name;
}
const std::vector<TensorInfo>& Session::inputs() const {
  return impl_->inputs;
}
const std::vector<TensorInfo>& Session::outputs() const {
  return impl_->outputs;
}
const sched::Schedule& Session::schedule() const {
  return impl_->schedule;
}
nlohmann::json Session::schedule_json() const {
  return sched::to_json(impl_->schedule, impl_->model.units);
}
const std::string& Session::schedule_summary() const {
  return impl_->summary;
}
const ir::UnitGraph& Session::units() const {
  return impl_->model.units;
}
const models::ModelMetadata& Session::metadata() const {
  return impl_->model.metadata;
}
const Device& Session::device() const {
  return impl_->device;
}

namespace {

// Units as they end (lanes report from their own threads).
class Recorder final : public exec::RunObserver {
 public:
  explicit Recorder(const ir::UnitGraph& units) : units_(units) {}
  void on_unit(size_t lane, UnitId unit, Micros begin, Micros end) override {
    std::lock_guard lock(mutex_);
    timings_.push_back({units_.unit(unit).name, lane, double(begin.count()), double(end.count())});
  }
  std::vector<UnitTiming> take() {
    std::lock_guard lock(mutex_);
    return std::move(timings_);
  }

 private:
  const ir::UnitGraph& units_;
  std::mutex mutex_;
  std::vector<UnitTiming> timings_;
};

// Puts checked `inputs` into `request`: read in place where the executor can, else copied.
void put_inputs(const Session::Impl& s, exec::Request& request,
                std::span<const InputBuffer> inputs) {
  using models::ElementType;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const InputBuffer& in = inputs[i];
    const ElementType want = s.inputs[i].type;  // of the model
    // Given in the model's type, and braid computes in it: read in place where the executor can.
    const bool as_computed = in.type == want && want == models::element_type_of(s.inputs[i].dtype);
    if (as_computed && s.prepared->bind_input(request, i, in.bytes)) continue;
    // Given in the model's 16-bit type: to the device as it is where the executor takes it so.
    if (in.type == want && in.type != models::element_type_of(s.inputs[i].dtype) &&
        s.prepared->set_input_bytes(request, i, in.type, in.bytes))
      continue;
    const size_t count = in.bytes.size() / models::size_of(in.type);
    if (as_computed && in.type == ElementType::kFloat32 &&
        reinterpret_cast<uintptr_t>(in.bytes.data()) % alignof(float) == 0) {
      s.prepared->set_input(request, i, {reinterpret_cast<const float*>(in.bytes.data()), count});
      continue;
    }
    // set_input takes values as floats: int64 ones are exact to 2^24 only.
    if (in.type == ElementType::kInt64)
      if (const auto inexact = ir::first_inexact_int64(in.bytes.data(), count))
        BRAID_THROW(ErrorCode::kInvalidArgument, "input '", s.inputs[i].name, "': value ",
                    inexact->second, " at element ", inexact->first,
                    " is beyond ±2^24, which this device takes exactly only in place");
    std::vector<float> values(count);
    models::load_floats(in.type, in.bytes.data(), values);
    if (in.type != want) models::round_floats(want, values);  // float32 for a 16-bit input
    s.prepared->set_input(request, i, values);
  }
}

// Observers see one run at a time: their runs take the run lock whatever the executor allows.
void observed_runs(Session::Impl& s, std::span<const InputBuffer> inputs, int runs,
                   exec::RunObserver& observer, const std::function<void()>& between = {}) {
  BRAID_CHECK(runs >= 1, ErrorCode::kInvalidArgument, "runs must be at least 1, got ", runs);
  std::unique_ptr<exec::Request> request = s.take_request();
  put_inputs(s, *request, inputs);
  {
    std::lock_guard lock(s.run_mutex);
    s.prepared->run(*request);  // warm-up
    for (int r = 0; r < runs; ++r) {
      if (between) between();
      s.prepared->run(*request, &observer);
    }
  }
  s.give_back(std::move(request));
}

}  // namespace

void Session::check_inputs(std::span<const InputBuffer> inputs) const {
  const Impl& s = *impl_;
  BRAID_CHECK(inputs.size() == s.inputs.size(), ErrorCode::kInvalidArgument, "model '", s.name,
              "' takes ", s.inputs.size(), " inputs, got ", inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorInfo& want = s.inputs[i];
    const models::ElementType type = inputs[i].type;
    // A 16-bit input also takes float32 (rounded to its type when read).
    const bool widened = type == models::ElementType::kFloat32 && want.dtype == ir::DType::kFloat32;
    BRAID_CHECK(type == want.type || widened, ErrorCode::kInvalidArgument, "input '", want.name,
                "': ", models::to_string(type), " given, the model takes ",
                models::to_string(want.type));
    const int64_t elements = ir::num_elements(want.shape);
    const int64_t given = int64_t(inputs[i].bytes.size()) / models::size_of(type);
    BRAID_CHECK(int64_t(inputs[i].bytes.size()) == elements * models::size_of(type),
                ErrorCode::kInvalidArgument, "input '", want.name, "': ", given,
                " elements, its shape ", ir::to_string(want.shape), " holds ", elements);
  }
}

std::vector<UnitTiming> Session::profile(std::span<const InputBuffer> inputs, int runs) const {
  check_inputs(inputs);
  Recorder recorder(impl_->model.units);
  observed_runs(*impl_, inputs, runs, recorder, [&] { recorder.take(); });
  return recorder.take();
}

void Session::trace(std::span<const InputBuffer> inputs, const std::string& path, int runs) const {
  check_inputs(inputs);
  const Impl& s = *impl_;
  exec::ChromeTrace trace(s.model.units, fmt::format("{} {}", s.name, s.schedule.algorithm),
                          tune::trace_lane_names(s.model.units, s.schedule));
  bool first = true;
  observed_runs(*impl_, inputs, runs, trace, [&] {
    if (!first) trace.next_run();
    first = false;
  });
  trace.write(path);
}

Outputs Session::run(std::span<const std::span<const float>> inputs) const {
  const Impl& s = *impl_;
  BRAID_CHECK(inputs.size() == s.inputs.size(), ErrorCode::kInvalidArgument, "model '", s.name,
              "' takes ", s.inputs.size(), " inputs, got ", inputs.size());
  // Sizes are checked once, by the buffer run (check_inputs).
  std::vector<InputBuffer> buffers;
  std::vector<std::vector<std::byte>> converted;  // int64 and bool inputs
  converted.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    // float32, float16 and bfloat16 inputs take floats as they are (rounded when read).
    if (s.inputs[i].dtype == ir::DType::kFloat32) {
      buffers.push_back({models::ElementType::kFloat32, std::as_bytes(inputs[i])});
      continue;
    }
    const models::ElementType type = s.inputs[i].type;
    std::vector<std::byte>& bytes =
        converted.emplace_back(inputs[i].size() * models::size_of(type));
    models::store_floats(type, inputs[i], bytes.data());
    buffers.push_back({type, bytes});
  }
  return run(buffers);
}

Outputs Session::run(std::span<const InputBuffer> inputs) const {
  Impl& s = *impl_;
  check_inputs(inputs);
  auto lease = std::make_unique<Outputs::Lease>();
  lease->session = impl_;
  lease->request = s.take_request();
  put_inputs(s, *lease->request, inputs);
  if (s.prepared->concurrent_requests()) {
    s.prepared->run(*lease->request);
  } else {
    std::lock_guard lock(s.run_mutex);
    s.prepared->run(*lease->request);
  }
  return Outputs(std::move(lease));
}

Outputs::Outputs(std::unique_ptr<Lease> lease) : lease_(std::move(lease)) {}
Outputs::Outputs(Outputs&&) noexcept = default;
Outputs& Outputs::operator=(Outputs&&) noexcept = default;
Outputs::~Outputs() = default;
size_t Outputs::size() const {
  return lease_->session->outputs.size();
}
std::span<const float> Outputs::values(size_t i) const {
  BRAID_CHECK(i < size(), ErrorCode::kInvalidArgument, "output ", i, " of ", size());
  return lease_->session->prepared->output(*lease_->request, i);
}
void Outputs::write(size_t i, std::span<std::byte> dst) const {
  BRAID_CHECK(i < size(), ErrorCode::kInvalidArgument, "output ", i, " of ", size());
  const TensorInfo& info = lease_->session->outputs[i];
  const auto want = size_t(ir::num_elements(info.shape) * models::size_of(info.type));
  BRAID_CHECK(dst.size() == want, ErrorCode::kInvalidArgument, "output '", info.name,
              "': ", dst.size(), " bytes given, it takes ", want, " as ",
              models::to_string(info.type));
  // Given by the device in the model's type (a 16-bit output on CUDA): as it is.
  const std::span<const std::byte> bytes =
      lease_->session->prepared->output_bytes(*lease_->request, i);
  if (bytes.size() == want) {
    std::copy(bytes.begin(), bytes.end(), dst.begin());
    return;
  }
  models::store_floats(info.type, values(i), dst.data());
}

}  // namespace braid::session
