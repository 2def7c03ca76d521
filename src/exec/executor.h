// Executors: ask, prepare once, run many (ggml supports_op; oneDNN pd -> primitive; ORT plan ->
// steps). A PreparedModel holds everything shared by requests: kernels, weights (read-only),
// the lowered plan and the memory plan. A Request holds one inference's own state: its
// activation arena and its events. Several requests of one model can therefore be in flight,
// and a request can advance one block at a time (TOP's block pipelining).
//
//   auto cpu = make_cpu_executor({.threads_per_stream = 1});
//   auto model = cpu->prepare({graph, weights, units, plan});
//   auto request = model->new_request();
//   model->set_input(*request, 0, input);
//   model->run(*request);                       // or run_blocks(*request, b, b + 1) per block
//   std::span<const float> y = model->output(*request, 0);
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "base/ids.h"
#include "base/units.h"
#include "ir/graph.h"
#include "ir/unit_graph.h"
#include "ir/weights.h"
#include "models/element_type.h"
#include "sched/lower.h"

namespace braid::exec {

// Sim and real executors report the same events, so predicted and measured traces compare.
class RunObserver {
 public:
  virtual ~RunObserver() = default;
  // `at` is time since the start of the run (real or simulated).
  virtual void on_unit(size_t lane, UnitId unit, Micros begin, Micros end) = 0;
};

// What one run_blocks call took on its device: CUDA events around the blocks on the GPU (what
// IOS times: no host launch overhead before the first kernel), the simulated time on a simulated
// GPU, the wall clock from dispatch to the last lane's end on the CPU.
struct RunStats {
  Micros device_time{0};
};

// One inference's state: activations and events. Made by PreparedModel::new_request.
class Request {
 public:
  virtual ~Request() = default;
};

class PreparedModel;

// One unit of a request, as Executor::run_side_by_side runs it.
struct UnitCall {
  PreparedModel* model = nullptr;
  Request* request = nullptr;
  UnitId unit{};
};

class PreparedModel {
 public:
  virtual ~PreparedModel() = default;

  virtual std::unique_ptr<Request> new_request() const = 0;
  // Copies graph input `i` (in ir::Graph::inputs() order) into the request.
  virtual void set_input(Request& request, size_t i, std::span<const float> data) const = 0;
  // Makes graph input `i` of `request` the caller's `bytes` (the input's dtype, plain row-major,
  // exactly its size), read in place, without a copy, by the runs of `request` until the next
  // set_input or bind_input of `i`. The caller keeps them alive and unchanged until those runs
  // have returned. Returns false, binding nothing, when this model cannot read that input in
  // place (the caller then copies it with set_input); throws kInvalidArgument on a size mismatch.
  virtual bool bind_input(Request& /*request*/, size_t /*i*/,
                          std::span<const std::byte> /*bytes*/) const {
    return false;
  }
  // Copies graph input `i` given in `type`, the 16-bit float type the caller exchanges it in
  // (ModelBundle::input_types[i]), into the request as it is: no conversion on the host, the
  // device converts it where it computes in another type. Returns false, copying nothing, when
  // this model takes that input only as floats (the caller converts and calls set_input); throws
  // kInvalidArgument on a size mismatch.
  virtual bool set_input_bytes(Request& /*request*/, size_t /*i*/, models::ElementType /*type*/,
                               std::span<const std::byte> /*bytes*/) const {
    return false;
  }
  // Graph output `i` (in ir::Graph::outputs() order) after a run.
  virtual std::span<const float> output(const Request& request, size_t i) const = 0;
  // Graph output `i` after a run in the type the caller exchanges it in
  // (ModelBundle::output_types[i]) as the device wrote it, when this model gives it so (the
  // CUDA executor, for float16 and bfloat16 outputs); empty when it gives it only as floats
  // (output()).
  virtual std::span<const std::byte> output_bytes(const Request& /*request*/, size_t /*i*/) const {
    return {};
  }

  virtual size_t num_blocks() const = 0;
  // Runs blocks [first, last). Blocks must run in order within a request; block 0 starts a new
  // inference.
  virtual RunStats run_blocks(Request& request, size_t first, size_t last,
                              RunObserver* observer = nullptr) = 0;
  RunStats run(Request& request, RunObserver* observer = nullptr) {
    return run_blocks(request, 0, num_blocks(), observer);
  }
  // Starts a new inference in `request`: none of its units has run. run_blocks from block 0
  // does it too; runs of units (Executor::run_side_by_side) need it first. Executors without
  // unit runs have nothing to reset.
  virtual void start_inference(Request& /*request*/) const {}
  // Whether run_blocks may be called for different requests from several threads at once (the
  // requests then run side by side); else calls must not overlap.
  virtual bool concurrent_requests() const { return false; }

  // Activation memory of one request (the memory plan's arena), graph inputs included.
  virtual Bytes activation_bytes() const = 0;
};

// What prepare() needs. The graph and weights are shared: requests never write them. `units`
// and `plan` are read by prepare() only (a prepared model keeps its own copies), so they may
// go away once it returns.
struct ModelBundle {
  std::shared_ptr<const ir::Graph> graph;
  std::shared_ptr<const ir::Weights> weights;
  const ir::UnitGraph* units = nullptr;
  const sched::ExecutionPlan* plan = nullptr;
  // The types the caller exchanges the graph's inputs and outputs in, in graph order, where they
  // differ from what braid computes them in: float16 or bfloat16 for an FP16/BF16 model's float
  // inputs and outputs (models::DeclaredTypes). Empty or short: the rest as computed. Executors
  // that take or give them in that type (set_input_bytes, output_bytes) read these; the others
  // ignore them.
  std::vector<models::ElementType> input_types, output_types;
};

class Executor {
 public:
  virtual ~Executor() = default;
  virtual std::string_view name() const = 0;
  // Whether this executor can run `node`; prepare() throws kUnsupported naming the first that
  // it cannot.
  virtual bool supports(const ir::Graph& graph, NodeId node) const = 0;
  virtual std::unique_ptr<PreparedModel> prepare(const ModelBundle& model) = 0;
  // Runs each list of units on its own lane, the lists side by side, each in order; returns
  // when all are done (what one stage of TOP's combined blocks needs: units of several
  // requests, of several models prepared here, in an order of the caller's choosing). A unit
  // runs once per inference (PreparedModel::start_inference), after the units it reads from.
  // Executors that cannot throw kUnsupported.
  virtual RunStats run_side_by_side(std::span<const std::vector<UnitCall>> lanes);
};

inline RunStats Executor::run_side_by_side(std::span<const std::vector<UnitCall>>) {
  throw Error(ErrorCode::kUnsupported,
              std::string(name()) + ": runs units only in the order of a prepared plan");
}

}  // namespace braid::exec
