// braid._braid: the native half of `import braid` (nanobind). A thin layer over
// session::Session: it converts NumPy arrays in and lends the session's output buffers out
// without copying them; the Python half (braid/__init__.py) gives it ONNX Runtime's shape.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <thread>

#include "base/device.h"
#include "base/error.h"
#include "base/precision.h"
#include "runtime/inbox.h"
#include "runtime/runtime.h"
#include "runtime/scenario.h"
#include "sched/predict.h"
#include "sched/registry.h"
#include "sched/schedule.h"
#include "sched/validate.h"
#include "session/session.h"
#include "tune/auto_schedule.h"
#include "tune/bench.h"
#include "tune/cost_models.h"
#include "tune/planner.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace braid::python {
namespace {

// Model inputs or outputs as (name, shape, type) tuples, the type as NumPy names it (the model's
// own: "float16" for an FP16 model's tensors).
using Described = std::vector<std::tuple<std::string, std::vector<int64_t>, std::string>>;
Described describe(const std::vector<session::TensorInfo>& infos) {
  Described out;
  for (const session::TensorInfo& t : infos)
    out.emplace_back(t.name, t.shape, std::string(models::to_string(t.type)));
  return out;
}

struct Options {
  std::string scheduler = "auto", device = "cpu", cost, precision = "fp32";
  int threads_per_stream = 1;
  std::optional<std::string> schedule_json;
  int64_t batch = 1, image_size = 0;
  bool batch_given = false;
  int streams = 10;
  bool pin_threads = false;
  // An ONNX model's dynamic input dims: input name -> shape, dim_param -> value.
  std::map<std::string, std::vector<int64_t>> shapes;
  std::map<std::string, int64_t> dims;
};

session::SessionOptions session_options(const Options& o) {
  session::SessionOptions s{.scheduler = o.scheduler,
                            .device = parse_device(o.device),
                            .threads_per_stream = o.threads_per_stream,
                            .cost = tune::parse_cost_option(o.cost),
                            .precision = parse_precision(o.precision)};
  if (o.schedule_json) s.schedule = nlohmann::json::parse(*o.schedule_json);
  s.schedule_options.max_streams = o.streams;
  s.load.zoo.batch = o.batch;
  s.load.zoo.image_size = o.image_size;
  s.load.batch_given = o.batch_given;
  s.load.inputs.shapes = o.shapes;
  s.load.inputs.dims = o.dims;
  s.pin_threads = o.pin_threads;
  return s;
}

// A float32 NumPy array viewing `data` (writable, as ONNX Runtime's outputs are), kept alive by
// `owner`.
nb::object float_view(float* data, const std::vector<size_t>& shape, nb::capsule owner) {
  return nb::ndarray<nb::numpy, float>(data, shape.size(), shape.data(), owner).cast();
}

constexpr nb::dlpack::dtype kFloat16{uint8_t(nb::dlpack::dtype_code::Float), 16, 1};

// An int64, bool or float16 array of `shape`, its bytes (that type's) written by `fill`.
template <typename Fill>
nb::object typed_array(models::ElementType type, const std::vector<size_t>& shape, Fill fill) {
  using models::ElementType;
  size_t n = 1;
  for (size_t d : shape) n *= d;
  // `data` (new T[n]) filled and handed to NumPy, or freed when fill() throws.
  auto own = [&]<typename T>(T* data) {
    std::unique_ptr<T[]> guard(data);
    fill(std::span<std::byte>(reinterpret_cast<std::byte*>(data), n * sizeof(T)));
    return nb::capsule(guard.release(), [](void* p) noexcept { delete[] static_cast<T*>(p); });
  };
  if (type == ElementType::kFloat16) {
    auto* data = new uint16_t[n];
    nb::capsule owner = own(data);
    return nb::ndarray<nb::numpy>(data, shape.size(), shape.data(), owner, nullptr, kFloat16)
        .cast();
  }
  if (type == ElementType::kInt64) {
    auto* data = new int64_t[n];
    nb::capsule owner = own(data);
    return nb::ndarray<nb::numpy, int64_t>(data, shape.size(), shape.data(), owner).cast();
  }
  static_assert(sizeof(bool) == 1, "bool values are one byte each");
  auto* data = new bool[n];
  nb::capsule owner = own(data);
  return nb::ndarray<nb::numpy, bool>(data, shape.size(), shape.data(), owner).cast();
}

// Values of a type other than float32 (braid holds every value as float) converted into an
// array of their own: int64, bool, float16 (rounded to nearest even); bfloat16 as float32 (NumPy
// has no bfloat16), its values rounded to bfloat16.
nb::object converted(std::span<const float> v, const std::vector<size_t>& shape,
                     models::ElementType type) {
  if (type == models::ElementType::kBFloat16) {
    auto* data = new float[v.size()];
    std::copy(v.begin(), v.end(), data);
    models::round_floats(type, {data, v.size()});
    nb::capsule owner(data, [](void* p) noexcept { delete[] static_cast<float*>(p); });
    return float_view(data, shape, owner);
  }
  return typed_array(type, shape,
                     [&](std::span<std::byte> dst) { models::store_floats(type, v, dst.data()); });
}

// Output i of a run, of a type other than float32, as the session writes it in its own type
// (Outputs::write: on cuda:N a 16-bit output's bytes as the device gives them).
nb::object converted(const session::Outputs& outputs, size_t i, const std::vector<size_t>& shape,
                     models::ElementType type) {
  if (type == models::ElementType::kBFloat16) return converted(outputs.values(i), shape, type);
  return typed_array(type, shape, [&](std::span<std::byte> dst) { outputs.write(i, dst); });
}

// A read-only, C-contiguous NumPy array of any dtype (an input).
using Array = nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>;

// (bfloat16 arrays reach here as float32: the Python half converts them, exactly.)
models::ElementType type_of(const Array& a) {
  if (a.dtype() == nb::dtype<float>()) return models::ElementType::kFloat32;
  if (a.dtype() == kFloat16) return models::ElementType::kFloat16;
  if (a.dtype() == nb::dtype<int64_t>()) return models::ElementType::kInt64;
  if (a.dtype() == nb::dtype<bool>()) return models::ElementType::kBool;
  BRAID_THROW(ErrorCode::kInvalidArgument, "an input array of a dtype braid does not take");
}

// One run's outputs, kept alive by the arrays that view them.
using SharedOutputs = std::shared_ptr<session::Outputs>;

class PySession {
 public:
  PySession(nb::object model, const Options& o) {
    const session::SessionOptions options = session_options(o);
    if (nb::isinstance<nb::bytes>(model)) {
      const nb::bytes b = nb::cast<nb::bytes>(model);
      const std::string_view bytes(b.c_str(), b.size());
      nb::gil_scoped_release release;
      session_.emplace(session::Session::from_onnx_bytes(bytes, "model", options));
    } else {
      const std::string spec = nb::cast<std::string>(model);
      nb::gil_scoped_release release;
      session_.emplace(session::Session::open(spec, options));
    }
  }

  std::string name() const { return session_->name(); }
  auto inputs() const { return describe(session_->inputs()); }
  auto outputs() const { return describe(session_->outputs()); }
  std::string schedule_json() const { return session_->schedule_json().dump(); }

  nb::list profile(const std::vector<Array>& inputs, int runs) {
    const std::vector<session::InputBuffer> buffers = buffers_of(inputs);
    std::vector<session::UnitTiming> timings;
    {
      nb::gil_scoped_release release;
      timings = session_->profile(buffers, runs);
    }
    nb::list out;
    for (const session::UnitTiming& t : timings) {
      nb::dict d;
      d["unit"] = t.unit;
      d["lane"] = t.lane;
      d["begin_us"] = t.begin_us;
      d["end_us"] = t.end_us;
      d["duration_us"] = t.end_us - t.begin_us;
      out.append(d);
    }
    return out;
  }
  void trace(const std::vector<Array>& inputs, const std::string& path, int runs) {
    const std::vector<session::InputBuffer> buffers = buffers_of(inputs);
    nb::gil_scoped_release release;
    session_->trace(buffers, path, runs);
  }
  // The arrays' own bytes: the session reads them in place (the CPU) or copies them.
  static std::vector<session::InputBuffer> buffers_of(const std::vector<Array>& inputs) {
    std::vector<session::InputBuffer> buffers;
    for (const Array& a : inputs) {
      const auto* data = static_cast<const std::byte*>(a.data());
      buffers.push_back({type_of(a), {data, a.nbytes()}});
    }
    return buffers;
  }
  std::string summary() const { return session_->schedule_summary(); }
  std::string device() const { return to_string(session_->device()); }
  // The model's own description, with ONNX Runtime's ModelMetadata field names.
  nb::dict metadata() const {
    const models::ModelMetadata& m = session_->metadata();
    nb::dict d, custom;
    d["producer_name"] = m.producer_name;
    d["graph_name"] = m.graph_name;
    d["domain"] = m.domain;
    d["description"] = m.description;
    d["graph_description"] = m.graph_description;
    d["version"] = m.version;
    for (const auto& [key, value] : m.custom) custom[key.c_str()] = value;
    d["custom_metadata_map"] = custom;
    return d;
  }

  // `inputs`: one C-contiguous array per model input, in order, of its dtype (the Python half
  // checks names, dtypes and shapes). They are read in place on the CPU: the list holds them
  // until run() returns. Returns the outputs: float32 ones view the session's buffers (no
  // copy), the others are converted.
  nb::list run(const std::vector<Array>& inputs) {
    const std::vector<session::InputBuffer> buffers = buffers_of(inputs);
    SharedOutputs outputs;
    {
      nb::gil_scoped_release release;  // other Python threads run meanwhile
      outputs = std::make_shared<session::Outputs>(session_->run(buffers));
    }
    nb::list result;
    const auto& infos = session_->outputs();
    for (size_t i = 0; i < infos.size(); ++i) {
      std::vector<size_t> shape(infos[i].shape.begin(), infos[i].shape.end());
      if (infos[i].type != models::ElementType::kFloat32) {
        result.append(converted(*outputs, i, shape, infos[i].type));
        continue;
      }
      const std::span<const float> v = outputs->values(i);
      // The capsule holds this run's outputs: the request returns to the pool when the last
      // array viewing it is gone. The arena is this run's alone until then: writable.
      auto* keep = new SharedOutputs(outputs);
      nb::capsule owner(keep, [](void* p) noexcept { delete static_cast<SharedOutputs*>(p); });
      result.append(float_view(const_cast<float*>(v.data()), shape, owner));
    }
    return result;
  }

 private:
  std::optional<session::Session> session_;
};

// braid.schedule(): a schedule searched for a model, as braid.schedule/1 JSON text.
std::string search_schedule(const std::string& model, const std::string& algo, const Options& o) {
  session::SessionOptions s = session_options(o);
  s.scheduler = algo;
  nb::gil_scoped_release release;
  return session::search_schedule(model, s).dump();
}

// braid.validate(): the validator's diagnostics of a schedule against a model.
std::vector<std::tuple<std::string, std::string>> validate_schedule(const std::string& model,
                                                                    const std::string& json,
                                                                    const Options& o) {
  const session::SessionOptions s = session_options(o);
  models::LoadOptions load = s.load;
  load.with_weights = false;
  const models::LoadedModel m = models::load_model(model, load);
  const sched::Schedule schedule = sched::schedule_from_json(nlohmann::json::parse(json), m.units);
  std::vector<std::tuple<std::string, std::string>> out;
  for (const sched::Diagnostic& d : sched::check(m.units, schedule))
    out.emplace_back(d.severity == sched::Severity::kError ? "error" : "warning", d.message);
  return out;
}

// braid.bench(): rows as JSON text (the Python half flattens them for pandas).
std::string bench_rows(const std::vector<std::string>& models,
                       const std::vector<std::string>& algorithms, const Options& o,
                       const std::string& device, int iters, int warmup, bool run) {
  const session::SessionOptions s = session_options(o);
  tune::BenchOptions b{.algorithms = algorithms,
                       .schedule = s.schedule_options,
                       .cost = session::cost_spec(s),
                       .measure = {.device = parse_device(device),
                                   .graph_replay = parse_device(device).is_gpu(),
                                   .executor = {.threads_per_stream = o.threads_per_stream,
                                                .pin_threads = o.pin_threads},
                                   .iters = iters,
                                   .warmup = warmup},
                       .load = s.load,
                       .run = run};
  nlohmann::json rows = nlohmann::json::array();
  {
    nb::gil_scoped_release release;
    for (const tune::BenchRow& r : tune::bench(models, b)) rows.push_back(tune::to_json(r));
  }
  return rows.dump();
}

// braid.StagePricer: the cost model a session with these options schedules under, asked for
// stages named by unit names, so that another optimizer (IOS's reference code,
// bench/ios_reference.py) is priced by the very function braid's schedulers are. The model
// and the cost model are made once: a search asks for hundreds of thousands of stages.
class PyStagePricer {
 public:
  PyStagePricer(const std::string& model, const Options& o) {
    const session::SessionOptions s = session_options(o);
    plan_ = session::plan_options(s);
    models::LoadOptions load = s.load;
    load.with_weights = tune::cost_needs_weights(session::cost_spec(s), model);
    nb::gil_scoped_release release;
    model_ = std::make_unique<models::LoadedModel>(models::load_model(model, load));
    weights_ = std::make_shared<const ir::Weights>(std::move(model_->weights));
    cost_ = tune::make_plan_cost(model_->units, weights_, plan_);
  }

  std::string cost_name() const { return std::string(cost_->name()); }
  // (name, signature, successors' names) per unit, in unit order: what a caller needs to
  // match its own graph to braid's.
  using UnitRow = std::tuple<std::string, std::string, std::vector<std::string>>;
  std::vector<UnitRow> units() const {
    const ir::UnitGraph& g = model_->units;
    std::vector<UnitRow> rows;
    for (size_t i = 0; i < g.num_units(); ++i) {
      const UnitId u = make_id<UnitId>(i);
      std::vector<std::string> successors;
      for (UnitId v : g.successors(u)) successors.push_back(g.unit(v).name);
      rows.emplace_back(g.unit(u).name, g.signature(u), std::move(successors));
    }
    return rows;
  }

  // One latency (µs) per stage: (groups of unit names, merge). A concurrent stage's groups run
  // side by side (CostModel::stage_latency); a merge stage's units, one per group, run as one
  // kernel (merge_latency).
  using Stage = std::tuple<std::vector<std::vector<std::string>>, bool>;
  std::vector<double> stage_latencies(const std::vector<Stage>& stages) const {
    std::vector<std::vector<std::vector<UnitId>>> ids;
    for (const auto& [groups, merge] : stages) {
      auto& g = ids.emplace_back();
      for (const auto& names : groups) {
        auto& group = g.emplace_back();
        for (const std::string& name : names) group.push_back(unit(name));
      }
    }
    std::vector<double> out;
    nb::gil_scoped_release release;
    for (size_t k = 0; k < ids.size(); ++k) {
      if (std::get<1>(stages[k])) {
        std::vector<UnitId> units;
        for (const auto& group : ids[k]) units.insert(units.end(), group.begin(), group.end());
        out.push_back(cost_->merge_latency(units).count());
      } else {
        out.push_back(cost_->stage_latency(ids[k]).count());
      }
    }
    return out;
  }

  // A braid.schedule/1 schedule's latency (µs) as `braid schedule` predicts it
  // (sched::predicted_latency); kInvalidSchedule, with the validator's first error, for one
  // that does not fit the model.
  double schedule_latency(const std::string& json) const {
    const sched::Schedule s = sched::schedule_from_json(nlohmann::json::parse(json), model_->units);
    sched::validate_or_throw(model_->units, s);
    nb::gil_scoped_release release;
    return sched::predicted_latency(model_->units, s, *cost_).count();
  }

 private:
  UnitId unit(const std::string& name) const {
    const std::optional<UnitId> u = model_->units.find_unit(name);
    BRAID_CHECK(u.has_value(), ErrorCode::kNotFound, "no unit '", name, "' in ",
                model_->units.name());
    return *u;
  }

  tune::PlanOptions plan_;
  std::unique_ptr<models::LoadedModel> model_;  // the cost model holds its units' address
  std::shared_ptr<const ir::Weights> weights_;
  std::unique_ptr<cost::CostModel> cost_;
};

// braid.Server: TOP's runtime in-process. Tasks go in through an inbox; the runtime's loop (its
// own thread) answers each through the Python callable given with it, under the GIL.
class PyServer {
 public:
  PyServer(const std::vector<std::tuple<std::string, std::string>>& models,
           const std::string& policy, const Options& o, int max_sub_blocks, size_t queue_capacity) {
    runtime::Scenario scenario{.device = parse_device(o.device),
                               .policies = {policy},
                               .max_sub_blocks = max_sub_blocks,
                               .batch = o.batch,
                               .image_size = o.image_size,
                               .scheduler = o.scheduler,
                               .cost = tune::parse_cost_option(o.cost)};
    for (const auto& [model, blocks] : models) {
      runtime::ScenarioModel m{.model = model, .inputs = session_options(o).load.inputs};
      BRAID_CHECK(blocks.empty() || blocks == "ir" || blocks == "stages",
                  ErrorCode::kInvalidArgument, "model '", model,
                  "': blocks must be 'ir' or 'stages', got '", blocks, "'");
      if (blocks == "stages") m.blocks = runtime::BlockGrouping::kStages;
      scenario.models.push_back(m);
    }
    BRAID_CHECK(!scenario.models.empty(), ErrorCode::kInvalidArgument, "a server of no models");
    {
      nb::gil_scoped_release release;
      runner_ = std::make_unique<runtime::ScenarioRunner>(std::move(scenario));
      policy_ = runner_->make_policy(policy);
      inbox_ = std::make_unique<runtime::Inbox>(
          runner_->models().size(), runtime::InboxOptions{.queue_capacity = queue_capacity});
      runtime_ =
          std::make_unique<runtime::Runtime>(runner_->models(), runner_->backend(), *policy_,
                                             &runner_->combiner(), runtime::RuntimeOptions{});
      loop_ = std::thread([this] { runtime_->serve(*inbox_); });
    }
  }
  ~PyServer() { close(true); }

  std::vector<std::string> models() const {
    std::vector<std::string> names;
    for (size_t m = 0; m < runner_->models().size(); ++m)
      names.push_back(runner_->models().model(m).name);
    return names;
  }
  Described inputs(size_t m) const {
    const models::LoadedModel& loaded = runner_->models().model(m).loaded;
    return describe(
        session::tensor_infos(*loaded.graph, loaded.graph->inputs(), loaded.declared.inputs));
  }

  // "accepted", "queue full" or "closed". `done(status, outputs, error, queue_us, run_us)` is
  // called once, from the runtime's thread, for an accepted task.
  std::string submit(size_t model, const std::vector<Array>& inputs, double timeout_us,
                     nb::object done) {
    BRAID_CHECK(model < runner_->models().size(), ErrorCode::kInvalidArgument, "model ", model);
    runtime::Submission task{.model = uint32_t(model), .timeout_us = timeout_us};
    const models::LoadedModel& loaded = runner_->models().model(model).loaded;
    const ir::Graph& g = *loaded.graph;
    // A queued task outlives the call: its inputs are copied (as the runtime's floats).
    for (size_t i = 0; i < inputs.size(); ++i) {
      const auto* data = static_cast<const std::byte*>(inputs[i].data());
      const models::ElementType type = type_of(inputs[i]);
      if (type == models::ElementType::kInt64)
        if (const auto inexact = ir::first_inexact_int64(data, inputs[i].size()))
          BRAID_THROW(ErrorCode::kInvalidArgument, "input '", g.value(g.inputs()[i]).name,
                      "': value ", inexact->second, " at element ", inexact->first,
                      " is beyond ±2^24, which the runtime's float tasks do not hold exactly");
      std::vector<float>& values = task.inputs.emplace_back(inputs[i].size());
      models::load_floats(type, data, values);
      // float32 given for a bfloat16 input: its values in that type, as a session reads them.
      const models::ElementType want =
          i < loaded.declared.inputs.size() ? loaded.declared.inputs[i] : type;
      if (want != type) models::round_floats(want, values);
    }
    std::vector<std::vector<size_t>> shapes;
    std::vector<models::ElementType> dtypes;
    for (const session::TensorInfo& t :
         session::tensor_infos(g, g.outputs(), loaded.declared.outputs)) {
      shapes.emplace_back(t.shape.begin(), t.shape.end());
      dtypes.push_back(t.type);
    }
    // The callable is released under the GIL, whoever drops the last reference.
    auto callback = std::shared_ptr<nb::object>(new nb::object(std::move(done)), [](nb::object* p) {
      nb::gil_scoped_acquire gil;
      delete p;
    });
    task.done = [callback, shapes, dtypes](runtime::TaskOutcome o) {
      nb::gil_scoped_acquire gil;
      nb::list outputs;
      for (size_t i = 0; i < o.outputs.size() && i < shapes.size(); ++i)
        outputs.append(to_numpy(std::move(o.outputs[i]), shapes[i], dtypes[i]));
      try {
        (*callback)(std::string(runtime::to_string(o.status)), outputs, o.error, o.queue_us,
                    o.run_us);
      } catch (nb::python_error& e) {
        e.discard_as_unraisable("braid.Server task callback");
      }
    };
    runtime::SubmitStatus status;
    {
      nb::gil_scoped_release release;
      status = inbox_->submit(std::move(task));
    }
    return std::string(runtime::to_string(status));
  }

  // No new tasks; accepted ones finish (or, with `cancel`, are answered cancelled); the loop
  // ends. Idempotent.
  void close(bool cancel) {
    if (!loop_.joinable()) return;
    nb::gil_scoped_release release;  // callbacks take the GIL on the loop's thread
    if (cancel)
      inbox_->stop();
    else
      inbox_->close();
    loop_.join();
  }

 private:
  static nb::object to_numpy(std::vector<float> values, const std::vector<size_t>& shape,
                             models::ElementType type) {
    if (type != models::ElementType::kFloat32) return converted(values, shape, type);
    auto* owned = new std::vector<float>(std::move(values));
    nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::vector<float>*>(p); });
    return float_view(owned->data(), shape, owner);
  }

  std::unique_ptr<runtime::ScenarioRunner> runner_;
  std::unique_ptr<runtime::Policy> policy_;
  std::unique_ptr<runtime::Inbox> inbox_;
  std::unique_ptr<runtime::Runtime> runtime_;
  std::thread loop_;
};

}  // namespace
}  // namespace braid::python

namespace braid::python {
void bind_env(nb::module_& m);  // env_module.cc
}  // namespace braid::python

NB_MODULE(_braid, m) {
  using namespace braid::python;
  m.doc() = "braid's native module (use `import braid`)";

  // braid::Error by code, as the Python half's exception classes (braid/__init__.py).
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const braid::Error& e) {
      nb::object cls = nb::module_::import_("braid").attr("_error_class")(
          std::string(braid::to_string(e.code())));
      PyErr_SetString(cls.ptr(), e.what());
    } catch (const nlohmann::json::exception& e) {
      PyErr_SetString(PyExc_ValueError,
                      (std::string("malformed schedule JSON: ") + e.what()).c_str());
    }
  });

  nb::class_<Options>(m, "Options")
      .def(nb::init<>())
      .def_rw("scheduler", &Options::scheduler)
      .def_rw("device", &Options::device)
      .def_rw("cost", &Options::cost)
      .def_rw("precision", &Options::precision)
      .def_rw("threads_per_stream", &Options::threads_per_stream)
      .def_rw("schedule_json", &Options::schedule_json)
      .def_rw("batch", &Options::batch)
      .def_rw("batch_given", &Options::batch_given)
      .def_rw("image_size", &Options::image_size)
      .def_rw("streams", &Options::streams)
      .def_rw("pin_threads", &Options::pin_threads)
      .def_rw("shapes", &Options::shapes)
      .def_rw("dims", &Options::dims);

  nb::class_<PySession>(m, "Session")
      .def(nb::init<nb::object, const Options&>(), "model"_a, "options"_a)
      .def_prop_ro("name", &PySession::name)
      .def_prop_ro("inputs", &PySession::inputs)
      .def_prop_ro("outputs", &PySession::outputs)
      .def_prop_ro("schedule_summary", &PySession::summary)
      .def_prop_ro("device", &PySession::device)
      .def("metadata", &PySession::metadata)
      .def("schedule_json", &PySession::schedule_json)
      .def("run", &PySession::run, "inputs"_a)
      .def("profile", &PySession::profile, "inputs"_a, "runs"_a)
      .def("trace", &PySession::trace, "inputs"_a, "path"_a, "runs"_a);

  m.def("bench_rows", &bench_rows, "models"_a, "algorithms"_a, "options"_a, "device"_a, "iters"_a,
        "warmup"_a, "run"_a);

  nb::class_<PyServer>(m, "Server")
      .def(nb::init<const std::vector<std::tuple<std::string, std::string>>&, const std::string&,
                    const Options&, int, size_t>(),
           "models"_a, "policy"_a, "options"_a, "max_sub_blocks"_a, "queue_capacity"_a)
      .def_prop_ro("models", &PyServer::models)
      .def("inputs", &PyServer::inputs, "model"_a)
      .def("submit", &PyServer::submit, "model"_a, "inputs"_a, "timeout_us"_a, "done"_a)
      .def("close", &PyServer::close, "cancel"_a);

  nb::class_<PyStagePricer>(m, "StagePricer")
      .def(nb::init<const std::string&, const Options&>(), "model"_a, "options"_a)
      .def_prop_ro("cost", &PyStagePricer::cost_name)
      .def_prop_ro("units", &PyStagePricer::units)
      .def("stage_latencies", &PyStagePricer::stage_latencies, "stages"_a)
      .def("schedule_latency", &PyStagePricer::schedule_latency, "schedule_json"_a);

  m.def("search_schedule", &search_schedule, "model"_a, "algo"_a, "options"_a);
  m.def("validate_schedule", &validate_schedule, "model"_a, "schedule_json"_a, "options"_a);

  bind_env(m);
}
