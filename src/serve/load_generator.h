// braid load: open-loop traffic against any server that speaks the Open Inference Protocol v2
// (braid serve, Triton): per model, requests at their own rate (TOP's asynchronous tasks,
// periodic or Poisson, runtime/arrivals.h), sent when due whatever the answers — a request's
// latency counts from when it was due, so a slow server shows as latency, not as a lower rate
// (no coordinated omission). Up to `concurrency` requests are outstanding; the rest wait, their
// wait counted. The window closes at `duration_s`: requests still waiting then are not sent but
// counted (`unsent`, perf_analyzer's "could not keep up"), so a server slower than the pattern
// bounds the run to the window plus the answers in flight instead of draining the backlog.
//
//   serve::LoadReport r = serve::run_load({.url = "127.0.0.1:8000",
//                                          .pattern = {{"resnet50", 30}, {"squeezenet", 120}},
//                                          .duration_s = 30});
//   std::cout << serve::perf_analyzer_text(r);
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/arrivals.h"

namespace braid::serve {

// Sender threads at most (LoadOptions::concurrency); rates and duration: runtime/arrivals.h.
inline constexpr int kMaxConcurrency = 1024;

struct LoadOptions {
  std::string url = "127.0.0.1:8000";                   // host:port, http:// optional
  std::vector<std::pair<std::string, double>> pattern;  // model, requests per second
  double duration_s = 10;
  runtime::ArrivalKind arrivals = runtime::ArrivalKind::kPeriodic;
  int concurrency = 16;          // requests outstanding at most (each sender keeps one connection)
  uint64_t seed = 1;             // arrival phases / Poisson draws, and the inputs' values
  bool binary = true;            // binary tensors (Triton's extension) or JSON
  double sample_period_s = 0.5;  // how often the server's queues are read (/metrics)
  double request_timeout_s = 60;
};

struct ModelLoad {
  std::string name;
  uint64_t due = 0;   // arrivals in the window
  uint64_t sent = 0;  // of them, sent before the window closed
  uint64_t ok = 0;    // of them, answered 200
  // Still waiting for a free sender when the window closed.
  uint64_t unsent() const { return due - sent; }
  std::map<int, uint64_t> errors;  // by HTTP status; 0: no answer (connection failed)
  double throughput = 0;           // answered 200 per second of the run
  double avg_us = 0, p50_us = 0, p90_us = 0, p95_us = 0, p99_us = 0;  // of 200s, from due time
  // The server's view over the run (statistics extension, before/after), per 200: µs.
  double server_queue_us = 0, server_compute_us = 0, server_request_us = 0;
};

struct LoadSample {
  double t_s = 0;
  std::vector<double> pending;  // per model: nv_inference_pending_request_count
};

struct LoadReport {
  std::string url;
  double duration_s = 0;  // from the first due time to the last answer
  int concurrency = 0;
  // Over the models.
  uint64_t due() const;
  uint64_t sent() const;
  uint64_t ok() const;
  uint64_t unsent() const { return due() - sent(); }
  uint64_t failed() const { return sent() - ok(); }  // answered other than 200 or not at all
  std::vector<ModelLoad> models;
  std::vector<LoadSample> samples;
};

// Throws kInvalidArgument for a bad URL or pattern, kNotFound when the server does not know a
// model (its metadata is read first), kUnsupported for a BYTES input. FP32, FP16 and BF16 inputs
// are random in their own type, the other numeric and BOOL ones zero.
LoadReport run_load(const LoadOptions& options);

// perf_analyzer's shape: a Client block (request count, throughput, p50/p90/p95/p99 latency)
// and a Server block (queue and compute from the statistics extension) per model.
std::string perf_analyzer_text(const LoadReport& report);
// perf_analyzer's -f CSV header and a row per model.
std::string perf_analyzer_csv(const LoadReport& report);
nlohmann::json to_json(const LoadReport& report);

// "resnet50:30,squeezenet:120" -> pattern; kInvalidArgument naming the bad item.
std::vector<std::pair<std::string, double>> parse_pattern(const std::string& text);

}  // namespace braid::serve
