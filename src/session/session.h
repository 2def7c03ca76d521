// braid::Session: one model ready to run, the way ONNX Runtime's InferenceSession is one. It is
// loaded (a zoo name, an .onnx file or ONNX bytes), scheduled (auto, a scheduler's name, or a
// schedule given as data), lowered and prepared on its device once; then run() any number of
// times, from any number of threads. What `import braid` wraps (python/), and what a C++ user
// links.
//
//   session::Session s = session::Session::open("inception_v3", {.scheduler = "greedy"});
//   s.inputs()[0].shape;                        // [1, 3, 299, 299]
//   session::Outputs out = s.run({x});           // x: one span of floats per input, read in
//                                               // place during the run (no copy on the CPU)
//   out.values(0);                              // a span into the request's arena, valid while
//                                               // `out` lives; the request is reused after
//
// Thread safety: run() may be called from several threads at once. Each call takes a request
// (an activation arena) from a pool and gives it back when its Outputs is destroyed; requests
// run side by side on executors that allow it (the CPU's lane pool) and one at a time elsewhere.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/device.h"
#include "base/precision.h"
#include "ir/tensor_type.h"
#include "models/loader.h"
#include "sched/registry.h"
#include "sched/schedule.h"
#include "tune/cost_models.h"
#include "tune/planner.h"

namespace braid::session {

struct SessionOptions {
  // "auto" (measure the best candidates here and keep the fastest; the decision is cached, as
  // `braid run` does), or a scheduler of the registry ("sequential", "ios", ...).
  std::string scheduler = "auto";
  // cpu, cuda:N, or sim:NAME (simulated time; the values computed by the CPU executor).
  Device device;
  int threads_per_stream = 1;
  // Pin each lane to its own CPUs, as `braid run` does by default. Off by default: sessions of
  // one process would pin their lanes to the same CPUs.
  bool pin_threads = false;
  // The cost model scheduling uses (none: the planner's default for the device).
  std::optional<tune::CostName> cost;
  // What a cuda:N plan computes in (base/precision.h); the CPU and the simulator take fp32 only.
  Precision precision = Precision::kFp32;
  // A schedule to run instead of searching one (the braid.schedule/1 JSON of
  // docs/schedule-format.md); validated against the model.
  std::optional<nlohmann::json> schedule;
  sched::ScheduleOptions schedule_options;
  models::LoadOptions load;
};

struct TensorInfo {
  std::string name;
  std::vector<int64_t> shape;
  ir::DType dtype = ir::DType::kFloat32;  // what braid computes it in
  // What the model exchanges it in: its file's own type (float16 for an FP16 model's input,
  // computed as float32), else the dtype's.
  models::ElementType type = models::ElementType::kFloat32;
};

class Outputs;

// An input the caller owns, in the input's own type (TensorInfo::type: float32, float16,
// bfloat16, int64, or bool as one byte), row-major, of exactly its size; a float16 or bfloat16
// input may also be given as float32, rounded to its type (to nearest, ties to even) as it is
// read. A float32, int64 or bool buffer is read in place where the device can (the CPU executor:
// exec::PreparedModel::bind_input), so it must stay unchanged until run() returns; the others
// are converted, a copy. On cuda:N a float16 or bfloat16 buffer in the model's type is copied to
// the device as it is, converted there when the plan stores another type.
struct InputBuffer {
  models::ElementType type = models::ElementType::kFloat32;
  std::span<const std::byte> bytes;
};

// When a unit of one observed inference ran (session.profile()).
struct UnitTiming {
  std::string unit;                 // its name (the fused unit's)
  size_t lane = 0;                  // the executor's lane (a stream of the schedule)
  double begin_us = 0, end_us = 0;  // from the run's start, on the executor's clock
};

class Session {
 public:
  // `model`: a zoo name or an .onnx file. Throws braid::Error: kNotFound (no such model or
  // file), kInvalidModel / kUnsupported (a bad or unsupported model), kInvalidSchedule (a
  // schedule that does not fit it), kInvalidArgument (bad options).
  static Session open(std::string_view model, SessionOptions options = {});
  // ONNX bytes (a serialized ModelProto); `name` names it in messages and schedules.
  static Session from_onnx_bytes(std::string_view bytes, std::string_view name,
                                 SessionOptions options = {});

  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;
  ~Session();

  const std::string& name() const;
  const std::vector<TensorInfo>& inputs() const;
  const std::vector<TensorInfo>& outputs() const;
  const sched::Schedule& schedule() const;
  nlohmann::json schedule_json() const;  // braid.schedule/1, as `braid schedule --json` writes
  // auto: "WINNER (measured X.XXx over the best intra-operator run, ...)"; otherwise the
  // scheduler's name.
  const std::string& schedule_summary() const;
  const ir::UnitGraph& units() const;
  const models::ModelMetadata& metadata() const;  // get_modelmeta()'s fields
  const Device& device() const;

  // One inference: `inputs` one buffer per graph input in inputs() order. Throws
  // kInvalidArgument naming the input on a dtype or size mismatch.
  Outputs run(std::span<const InputBuffer> inputs) const;
  // The same with every input given as floats, of exactly the input's element count (int64 and
  // bool inputs as their values in float, exact to 2^24, float16 and bfloat16 ones rounded to
  // their type; those are converted, a copy).
  Outputs run(std::span<const std::span<const float>> inputs) const;
  // `runs` inferences observed unit by unit (after one unobserved warm-up), the last one's
  // timings returned, in the order the units ended. Same input checks as run().
  std::vector<UnitTiming> profile(std::span<const InputBuffer> inputs, int runs = 1) const;
  // `runs` inferences written as a Chrome trace (chrome://tracing, Perfetto) to `path`: a lane
  // per stream, a slice per unit, runs one after the other. kInvalidArgument if it cannot write.
  void trace(std::span<const InputBuffer> inputs, const std::string& path, int runs = 1) const;

  struct Impl;  // session.cc's

 private:
  explicit Session(std::shared_ptr<Impl> impl);
  // kInvalidArgument unless `inputs` has one buffer per input of its dtype and size.
  void check_inputs(std::span<const InputBuffer> inputs) const;
  std::shared_ptr<Impl> impl_;  // shared with the Outputs still lent out
  friend class Outputs;
};

// The outputs of one run, in outputs() order: spans into the request's arena, valid until this
// object is destroyed; then the request goes back to the session's pool. Movable, not copyable.
class Outputs {
 public:
  Outputs(Outputs&&) noexcept;
  Outputs& operator=(Outputs&&) noexcept;
  ~Outputs();
  size_t size() const;
  // Output i as float values (an FP16 or BF16 model's outputs as computed, upcast: write() gives
  // them in the model's own type; on cuda:N the device gives those in that type, which this
  // widens exactly).
  std::span<const float> values(size_t i) const;
  // Output i in its TensorInfo::type into `dst`, of exactly its size in that type (float16 and
  // bfloat16 rounded to nearest, ties to even). kInvalidArgument on a size mismatch.
  void write(size_t i, std::span<std::byte> dst) const;

 private:
  struct Lease;
  explicit Outputs(std::unique_ptr<Lease> lease);
  std::unique_ptr<Lease> lease_;
  friend class Session;
};

// The name, shape, dtype and type of each of `values` (graph inputs or outputs), as inputs()
// gives them; `declared[i]` (models::DeclaredTypes) is value i's type in the model's file, where
// given.
std::vector<TensorInfo> tensor_infos(const ir::Graph& graph, std::span<const ValueId> values,
                                     std::span<const models::ElementType> declared = {});

// What a session with these options asks the planner (tune/planner.h) for: every front end
// plans through it, so the same model, device and options get the same schedule everywhere.
tune::PlanOptions plan_options(const SessionOptions& options);
// The cost model a session schedules under: options.cost, or the planner's default for the
// device, profiled with the session's threads per stream.
tune::CostSpec cost_spec(const SessionOptions& options);

// A schedule of `model` (a zoo name or .onnx file) by options.scheduler under cost_spec(options),
// as braid.schedule/1 JSON: what a session with these options would run, without preparing one.
// kInvalidArgument for auto (it measures its candidates on the device: open a Session).
nlohmann::json search_schedule(std::string_view model, const SessionOptions& options);

}  // namespace braid::session
