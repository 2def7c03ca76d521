// The backends a conformance suite runs every case on (IREE's CTS, ggml's test-backend-ops): one
// ordered table, the reference first. A backend absent here (CUDA without a GPU) or unable to
// run a case (an op it has no kernel for) is skipped with the reason, never silently passed.
//
//   for (const Backend& b : selected_backends()) {
//     if (std::string why = unavailable_reason(b, graph); !why.empty()) skip(why);
//     auto outputs = run(b, graph, weights, inputs);   // kUnsupported at prepare: skip too
//   }
//
// BRAID_CONFORMANCE_BACKENDS=cpu,cuda0_fp16 (ids, comma-separated) runs only those rows; CTest
// runs one entry per row that way (tests/conformance/CMakeLists.txt).
#pragma once

#include <memory>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/precision.h"
#include "ir/graph.h"
#include "ir/weights.h"

namespace braid::conformance {

struct Backend {
  enum class Kind { kRef, kCpu, kSim, kCuda };
  std::string_view id;  // in test and CTest names: "cuda0_fp16"
  Kind kind;
  std::string_view device;  // as --device spells it: "ref", "cpu", "sim:h100", "cuda:0"
  Precision precision = Precision::kFp32;
};

// Every backend, in the order results are listed. Add new ones here (and to CMakeLists.txt).
inline constexpr Backend kBackends[] = {
    {"ref", Backend::Kind::kRef, "ref"},
    {"cpu", Backend::Kind::kCpu, "cpu"},
    // Simulated time on an H100; the values are the CPU executor's, through the sim executor.
    {"sim_h100", Backend::Kind::kSim, "sim:h100"},
    {"cuda0_fp32", Backend::Kind::kCuda, "cuda:0", Precision::kFp32},
    {"cuda0_tf32", Backend::Kind::kCuda, "cuda:0", Precision::kTf32},
    {"cuda0_fp16", Backend::Kind::kCuda, "cuda:0", Precision::kFp16},
    {"cuda0_bf16", Backend::Kind::kCuda, "cuda:0", Precision::kBf16},
};

// "cuda:0 fp16", "cpu fp32": for messages.
std::string label(const Backend& b);
// What GoogleTest prints for a test's parameter: the id.
inline void PrintTo(const Backend& b, std::ostream* os) {
  *os << b.id;
}

// The rows BRAID_CONFORMANCE_BACKENDS names (all when unset), in table order; ids it names that
// no row has go to `unknown`.
std::vector<Backend> selected_backends(std::vector<std::string>* unknown = nullptr);

// Why `b` cannot run `graph` here, before trying: an op the CUDA executor has no kernel for
// (exec::cuda_runs), then no CUDA device. Empty when it may run (prepare can still refuse it
// with kUnsupported).
std::string unavailable_reason(const Backend& b, const ir::Graph& graph);

// Runs `graph` once on `b` (a sequential schedule) with `inputs` in graph input order. One entry
// per graph output; nullopt for outputs `b` does not return (the CPU and simulated executors
// return float32 ones only; the reference and CUDA every dtype as float). Throws what prepare
// throws (kUnsupported for a case the backend cannot run).
std::vector<std::optional<std::vector<float>>> run(const Backend& b,
                                                   std::shared_ptr<const ir::Graph> graph,
                                                   std::shared_ptr<const ir::Weights> weights,
                                                   std::span<const std::vector<float>> inputs);

}  // namespace braid::conformance
