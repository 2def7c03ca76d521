#include "backends.h"

#include <cstdlib>
#include <set>
#include <sstream>

#include "exec/cpu/cpu_executor.h"
#include "exec/cuda/cuda_executor.h"
#include "exec/ref/ref_executor.h"
#include "exec/sim/sim_executor.h"
#include "ir/unit_graph.h"
#include "sched/lower.h"
#include "sched/registry.h"
#include "sim/device_spec.h"

namespace braid::conformance {

std::string label(const Backend& b) {
  return std::string(b.device) + " " + to_string(b.precision);
}

std::vector<Backend> selected_backends(std::vector<std::string>* unknown) {
  const char* env = std::getenv("BRAID_CONFORMANCE_BACKENDS");
  if (env == nullptr || *env == '\0') return {std::begin(kBackends), std::end(kBackends)};
  std::set<std::string, std::less<>> wanted;
  std::stringstream ids(env);
  for (std::string id; std::getline(ids, id, ',');)
    if (!id.empty()) wanted.insert(id);
  std::vector<Backend> rows;
  for (const Backend& b : kBackends)
    if (wanted.erase(std::string(b.id))) rows.push_back(b);
  if (unknown) unknown->assign(wanted.begin(), wanted.end());
  return rows;
}

std::string unavailable_reason(const Backend& b, const ir::Graph& graph) {
  if (b.kind != Backend::Kind::kCuda) return {};
  // Before the device: without a GPU this still says which cases wait for kernels and which
  // only for a GPU.
  for (size_t i = 0; i < graph.num_nodes(); ++i)
    if (const ir::OpKind kind = graph.node(NodeId(i)).kind; !exec::cuda_runs(kind))
      return "cuda: " + std::string(ir::to_onnx_name(kind)) +
             " has no CUDA kernel yet (exec::cuda_runs)";
  if (exec::cuda_device_count() == 0) return exec::cuda_unavailable_reason();
  return {};
}

namespace {

std::unique_ptr<exec::Executor> make_executor(const Backend& b) {
  switch (b.kind) {
    case Backend::Kind::kCpu:
      return exec::make_cpu_executor({});
    case Backend::Kind::kSim:
      // As a session on sim:NAME runs: replayed as one graph, values from the CPU executor.
      return exec::make_sim_executor(
          {.devices = {sim::load_device(std::string(b.device.substr(4)))},
           .graph_replay = true,
           .compute_values = true});
    case Backend::Kind::kCuda:
      return exec::make_cuda_executor({.device = 0, .precision = b.precision});
    case Backend::Kind::kRef:
      break;
  }
  return nullptr;
}

}  // namespace

std::vector<std::optional<std::vector<float>>> run(const Backend& b,
                                                   std::shared_ptr<const ir::Graph> graph,
                                                   std::shared_ptr<const ir::Weights> weights,
                                                   std::span<const std::vector<float>> inputs) {
  std::vector<std::optional<std::vector<float>>> outputs;
  if (b.kind == Backend::Kind::kRef) {
    for (auto& out : exec::ref::run_reference(*graph, *weights, inputs))
      outputs.emplace_back(std::move(out));
    return outputs;
  }
  const ir::UnitGraph units = ir::fuse(graph);
  const sched::ExecutionPlan plan =
      sched::lower(units, sched::make_scheduler("sequential")->schedule(units));
  const std::unique_ptr<exec::Executor> executor = make_executor(b);
  auto model = executor->prepare({graph, weights, &units, &plan});
  auto request = model->new_request();
  for (size_t i = 0; i < inputs.size(); ++i) model->set_input(*request, i, inputs[i]);
  model->run(*request);
  for (size_t i = 0; i < graph->outputs().size(); ++i) {
    // The CPU executor gives float32 outputs only; the CUDA one int64 and bool ones too (stored
    // so, read back as exact floats).
    if (graph->value(graph->outputs()[i]).type.dtype != ir::DType::kFloat32 &&
        b.kind != Backend::Kind::kCuda) {
      outputs.emplace_back(std::nullopt);
      continue;
    }
    const std::span<const float> out = model->output(*request, i);
    outputs.emplace_back(std::vector<float>(out.begin(), out.end()));
  }
  return outputs;
}

}  // namespace braid::conformance
