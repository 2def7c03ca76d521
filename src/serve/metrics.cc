#include "serve/metrics.h"

#include <chrono>

#include <fmt/format.h>

#include "base/error.h"

namespace braid::serve {
namespace {

constexpr size_t kBuckets = std::size(kLatencyBucketsUs) + 1;

uint64_t now_ms() {
  return uint64_t(std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count());
}

uint64_t ns(double us) {
  return uint64_t(us * 1e3 + 0.5);
}

}  // namespace

std::string escape_label(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

void Metrics::set_models(std::vector<Listed> models) {
  std::lock_guard lock(mutex_);
  listed_ = std::move(models);
  for (const Listed& m : listed_) counters(m.name);
}

Metrics::Counters& Metrics::counters(const std::string& model) {
  Counters& c = counters_[model];
  if (c.buckets.empty()) c.buckets.assign(kBuckets, 0);
  return c;
}

void Metrics::record_success(const std::string& model, const RequestTimes& t) {
  size_t b = 0;
  while (b < std::size(kLatencyBucketsUs) && t.total_us > kLatencyBucketsUs[b]) ++b;
  std::lock_guard lock(mutex_);
  Counters& c = counters(model);
  ++c.success;
  c.inferences += t.inferences;
  c.success_us += t.total_us;
  c.queue_us += t.queue_us;
  c.compute_us += t.compute_us;
  c.last_inference_ms = now_ms();
  ++c.buckets[b];
}

void Metrics::record_failure(const std::string& model, double total_us) {
  std::lock_guard lock(mutex_);
  Counters& c = counters(model);
  ++c.failure;
  c.failure_us += total_us;
}

std::string Metrics::prometheus(const Gauges& g) const {
  std::lock_guard lock(mutex_);
  std::string out;
  auto labels = [&](size_t m) {
    return fmt::format("model=\"{}\",version=\"{}\"", escape_label(listed_[m].name),
                       escape_label(listed_[m].version));
  };
  // Listed models have counters (set_models makes them).
  auto counters_of = [&](size_t m) -> const Counters& { return counters_.at(listed_[m].name); };
  auto family = [&](const char* name, const char* type, const char* help, auto value) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
    for (size_t m = 0; m < listed_.size(); ++m)
      out += fmt::format("{}{{{}}} {}\n", name, labels(m), value(m));
  };
  // Triton's names: counters of requests and microseconds (cumulative), gauges of the moment.
  family("nv_inference_request_success", "counter", "Number of successful inference requests",
         [&](size_t m) { return counters_of(m).success; });
  family("nv_inference_request_failure", "counter", "Number of failed inference requests",
         [&](size_t m) { return counters_of(m).failure; });
  // Each sample runs as its own task: as many executions as inferences.
  family("nv_inference_count", "counter", "Number of inferences performed",
         [&](size_t m) { return counters_of(m).inferences; });
  family("nv_inference_exec_count", "counter", "Number of model executions performed",
         [&](size_t m) { return counters_of(m).inferences; });
  family("nv_inference_request_duration_us", "counter",
         "Cumulative inference request duration in microseconds",
         [&](size_t m) { return uint64_t(counters_of(m).success_us + counters_of(m).failure_us); });
  family("nv_inference_queue_duration_us", "counter",
         "Cumulative inference queuing duration in microseconds",
         [&](size_t m) { return uint64_t(counters_of(m).queue_us); });
  family("nv_inference_compute_infer_duration_us", "counter",
         "Cumulative compute inference duration in microseconds",
         [&](size_t m) { return uint64_t(counters_of(m).compute_us); });
  family("nv_inference_pending_request_count", "gauge",
         "Instantaneous number of pending requests awaiting execution per-model",
         [&](size_t m) { return m < g.pending.size() ? g.pending[m] : size_t{0}; });
  out +=
      "# HELP nv_cpu_utilization CPU utilization rate [0.0 - 1.0]\n"
      "# TYPE nv_cpu_utilization gauge\n";
  out += fmt::format("nv_cpu_utilization {}\n", g.cpu_utilization);

  // A histogram of request latency, so p99 can be combined across replicas.
  const char* h = "braid_inference_request_duration_us";
  out += fmt::format(
      "# HELP {} Latency of successful inference requests in microseconds\n# TYPE {} "
      "histogram\n",
      h, h);
  for (size_t m = 0; m < listed_.size(); ++m) {
    uint64_t cumulative = 0;
    for (size_t b = 0; b < kBuckets; ++b) {
      cumulative += counters_of(m).buckets[b];
      const std::string le =
          b < std::size(kLatencyBucketsUs) ? fmt::format("{}", kLatencyBucketsUs[b]) : "+Inf";
      out += fmt::format("{}_bucket{{{},le=\"{}\"}} {}\n", h, labels(m), le, cumulative);
    }
    out += fmt::format("{}_sum{{{}}} {}\n", h, labels(m), counters_of(m).success_us);
    out += fmt::format("{}_count{{{}}} {}\n", h, labels(m), counters_of(m).success);
  }

  // TOP's runtime (top.txt §III): instances in flight, steps, the stage dict, σ_t.
  auto gauge = [&](const char* name, const char* type, const char* help, auto value) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n{} {}\n", name, help, name, type, name, value);
  };
  gauge("braid_in_flight_instances", "gauge", "Tasks dequeued and being inferred block by block",
        g.in_flight_instances);
  gauge("braid_queue_variance", "gauge",
        "Variance over models of their remaining tasks (queued and in flight)", g.queue_variance);
  gauge("braid_steps_total", "counter", "Steps the runtime ran", g.steps);
  gauge("braid_combined_steps_total", "counter", "Steps that ran combined blocks",
        g.combined_steps);
  gauge("braid_stage_dict_hits_total", "counter",
        "Combined-block schedules found in the stage dict", g.stage_dict_hits);
  return out;
}

nlohmann::json Metrics::stats(std::optional<std::string> model) const {
  std::lock_guard lock(mutex_);
  nlohmann::json list = nlohmann::json::array();
  for (const Listed& listed : listed_) {
    if (model && *model != listed.name) continue;
    const Counters& c = counters_.at(listed.name);
    auto pair = [](uint64_t count, double us) {
      return nlohmann::json{{"count", count}, {"ns", ns(us)}};
    };
    list.push_back({{"name", listed.name},
                    {"version", listed.version},
                    {"last_inference", c.last_inference_ms},
                    {"inference_count", c.inferences},
                    {"execution_count", c.inferences},
                    {"inference_stats",
                     {{"success", pair(c.success, c.success_us)},
                      {"fail", pair(c.failure, c.failure_us)},
                      {"queue", pair(c.success, c.queue_us)},
                      {"compute_input", pair(c.success, 0)},
                      {"compute_infer", pair(c.success, c.compute_us)},
                      {"compute_output", pair(c.success, 0)}}},
                    {"batch_stats", nlohmann::json::array()}});
  }
  return {{"model_stats", list}};
}

}  // namespace braid::serve
