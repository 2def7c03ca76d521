// What the server counts, per model, and how it shows it: Triton's statistics extension
// (GET /v2/models/stats, which perf_analyzer reads for its server-side breakdown) and the
// Prometheus text format with Triton's metric names and labels (GET /metrics), so existing
// dashboards work unchanged, plus a latency histogram (p99 across replicas) and braid's own
// runtime gauges under a braid_ prefix.
//
//   serve::Metrics metrics;
//   metrics.set_models({{"resnet50", "1"}, {"squeezenet", "1"}});   // what is loaded now
//   metrics.record_success("resnet50", {.queue_us = 120, .compute_us = 4100, .total_us = 4300});
//   std::string text = metrics.prometheus(gauges);    // text/plain; version=0.0.4
//   nlohmann::json stats = metrics.stats(std::nullopt);
//
// Counters are kept by model name, so a model loaded again (EXPLICIT model control) keeps its
// counts, and a request still finishing on a model just unloaded is counted, not lost.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace braid::serve {

struct RequestTimes {
  double queue_us = 0;    // accepted to dequeued by the runtime
  double compute_us = 0;  // dequeued to its outputs
  double total_us = 0;    // the request as the server saw it: parse to response
  size_t inferences = 1;  // samples in the request (a batching model's leading dimension)
};

// Gauges read at scrape time.
struct Gauges {
  std::vector<size_t> pending;  // per listed model (set_models' order): accepted, not answered
  double cpu_utilization = 0;   // the process's CPU time over the cores' time since the last scrape
  size_t in_flight_instances = 0;
  double queue_variance = 0;  // σ_t of the runtime's remaining tasks
  uint64_t steps = 0, combined_steps = 0, stage_dict_hits = 0;
};

// Upper bounds (µs) of the latency histogram's buckets; +Inf is implied.
inline constexpr double kLatencyBucketsUs[] = {
    500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000, 1000000, 2500000, 5000000};

class Metrics {
 public:
  struct Listed {
    std::string name, version;
  };
  // The models shown (labels and statistics), in order: those loaded now.
  void set_models(std::vector<Listed> models);

  void record_success(const std::string& model, const RequestTimes& times);
  // A request that reached the model and failed (bad input, timed out, failed, cancelled).
  void record_failure(const std::string& model, double total_us);

  std::string prometheus(const Gauges& gauges) const;
  // Triton's {"model_stats": [...]}: every listed model, or the one named.
  nlohmann::json stats(std::optional<std::string> model) const;

 private:
  struct Counters {
    uint64_t success = 0, failure = 0;
    uint64_t inferences = 0;  // samples of the successful requests
    double success_us = 0, failure_us = 0, queue_us = 0, compute_us = 0;
    uint64_t last_inference_ms = 0;  // since the epoch
    std::vector<uint64_t> buckets;   // per bound, non-cumulative; the last is +Inf
  };
  Counters& counters(const std::string& model);  // under mutex_; made on first use

  mutable std::mutex mutex_;
  std::vector<Listed> listed_;
  std::map<std::string, Counters> counters_;  // by model name
};

// A Prometheus label value, escaped (backslash, double quote, newline).
std::string escape_label(const std::string& value);

}  // namespace braid::serve
