#include "serve/load_generator.h"

#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <thread>
#include <tuple>

#include <fmt/format.h>

#include "base/error.h"
#include "base/parse.h"
#include "base/stats.h"
#include "models/element_type.h"
#include "serve/protocol.h"

namespace braid::serve {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

constexpr int64_t kMaxInputElements = int64_t{1} << 28;  // 1 GiB of FP32

std::pair<std::string, int> host_port(std::string url) {
  if (url.starts_with("http://")) url = url.substr(7);
  while (!url.empty() && url.back() == '/') url.pop_back();
  const size_t colon = url.rfind(':');
  BRAID_CHECK(colon != std::string::npos && colon > 0, ErrorCode::kInvalidArgument, "URL '", url,
              "': expected HOST:PORT");
  const auto port = static_cast<int>(parse_int(std::string_view(url).substr(colon + 1), 1, 65535,
                                               "the port", "URL '" + url + "'"));
  return {url.substr(0, colon), port};
}

// One model's request, built once: every request of the model sends the same body.
struct Prepared {
  std::string path, body, content_type;
  httplib::Headers headers;
};

Prepared prepare_request(httplib::Client& client, const std::string& model, bool binary,
                         uint64_t seed) {
  auto r = client.Get("/v2/models/" + model);
  BRAID_CHECK(r, ErrorCode::kInvalidArgument,
              "cannot reach the server: ", httplib::to_string(r.error()));
  BRAID_CHECK(r->status == 200, ErrorCode::kNotFound, "model '", model, "': the server answered ",
              r->status, " ", r->body);
  const json meta = json::parse(r->body, nullptr, false);
  BRAID_CHECK(meta.is_object() && meta.contains("inputs") && meta["inputs"].is_array(),
              ErrorCode::kInvalidArgument, "model '", model, "': metadata without inputs");
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-1, 1);
  json inputs = json::array();
  std::string payload;
  for (const json& in : meta["inputs"]) {
    const std::string name = in.value("name", "");
    // Float inputs random, in the model's own type (an FP16 or BF16 model's are FP16 or BF16);
    // integer and bool ones zero (perf_analyzer's --input-data zero): a valid index for any
    // Gather, a token id or mask any embedding takes.
    const std::string datatype = in.value("datatype", "");
    const std::optional<DataType> type = parse_datatype(datatype);
    BRAID_CHECK(type.has_value() && *type != DataType::kBytes, ErrorCode::kUnsupported, "model '",
                model, "' input '", name, "' is ", datatype.empty() ? "?" : datatype,
                "; braid load sends numeric and BOOL inputs only");
    std::optional<models::ElementType> float_type;  // FP32, FP16 or BF16
    for (models::ElementType t : {models::ElementType::kFloat32, models::ElementType::kFloat16,
                                  models::ElementType::kBFloat16})
      if (datatype_of(t) == *type) float_type = t;
    std::vector<int64_t> shape;
    int64_t elements = 1;
    for (const json& d : in["shape"]) {
      const int64_t n = d.is_number_integer() && d.get<int64_t>() > 0 ? d.get<int64_t>() : 1;
      shape.push_back(n);
      // The server's metadata is input too: a shape it claims is not allocated beyond 1 GiB.
      BRAID_CHECK(n <= kMaxInputElements / elements, ErrorCode::kUnsupported, "model '", model,
                  "' input '", name, "': its shape has more than ", kMaxInputElements,
                  " elements; braid load sends at most that many");
      elements *= n;
    }
    json tensor = {{"name", name}, {"shape", shape}, {"datatype", datatype}};
    const auto count = static_cast<size_t>(elements);
    std::vector<float> x;
    if (float_type) {
      x.resize(count);
      for (float& f : x) f = dist(rng);
    }
    if (binary) {
      // Zero is all zero bytes in every type; floats are written in their type.
      std::string bytes(count * element_bytes(*type), '\0');
      if (float_type)
        models::store_floats(*float_type, x, reinterpret_cast<std::byte*>(bytes.data()));
      tensor["parameters"] = {{"binary_data_size", bytes.size()}};
      payload += bytes;
    } else if (float_type) {
      tensor["data"] = x;  // the server rounds FP16 and BF16 data to the type
    } else if (*type == DataType::kBool) {
      tensor["data"] = std::vector<bool>(count, false);
    } else {
      tensor["data"] = std::vector<int64_t>(count, 0);
    }
    inputs.push_back(tensor);
  }
  json body = {{"inputs", inputs}};
  if (binary) body["parameters"] = {{"binary_data_output", true}};
  Prepared p{.path = "/v2/models/" + model + "/infer", .body = body.dump()};
  if (binary) {
    p.headers.emplace("Inference-Header-Content-Length", std::to_string(p.body.size()));
    p.body += payload;
    p.content_type = "application/octet-stream";
  } else {
    p.content_type = "application/json";
  }
  return p;
}

// The statistics extension's counters for one model (zeros where the server has none).
struct ServerCounters {
  double success = 0, success_ns = 0, queue_ns = 0, compute_ns = 0;
};
ServerCounters read_stats(httplib::Client& client, const std::string& model) {
  ServerCounters c;
  auto r = client.Get("/v2/models/" + model + "/stats");
  if (!r || r->status != 200) return c;
  const json j = json::parse(r->body, nullptr, false);
  if (!j.is_object() || !j.contains("model_stats") || j["model_stats"].empty()) return c;
  const json& s = j["model_stats"][0]["inference_stats"];
  auto get = [&](const char* key, const char* field) {
    return s.contains(key) ? s[key].value(field, 0.0) : 0.0;
  };
  c.success = get("success", "count");
  c.success_ns = get("success", "ns");
  c.queue_ns = get("queue", "ns");
  c.compute_ns =
      get("compute_infer", "ns") + get("compute_input", "ns") + get("compute_output", "ns");
  return c;
}

// nv_inference_pending_request_count per model, from the Prometheus text.
std::vector<double> read_pending(httplib::Client& client, const std::vector<std::string>& models) {
  std::vector<double> pending(models.size(), -1);
  auto r = client.Get("/metrics");
  if (!r || r->status != 200) return pending;
  std::istringstream in(r->body);
  const std::string prefix = "nv_inference_pending_request_count{";
  for (std::string line; std::getline(in, line);) {
    if (!line.starts_with(prefix)) continue;
    for (size_t m = 0; m < models.size(); ++m)
      if (line.find("model=\"" + models[m] + "\"") != std::string::npos) {
        try {  // the server's text: a malformed count is left out (-1), not an error
          pending[m] = parse_double(std::string_view(line).substr(line.rfind(' ') + 1), 0, 1e15,
                                    "a pending request count");
        } catch (const Error&) {
        }
      }
  }
  return pending;
}

// A count summed over the models.
uint64_t total(const std::vector<ModelLoad>& models, uint64_t ModelLoad::*count) {
  uint64_t n = 0;
  for (const ModelLoad& m : models) n += m.*count;
  return n;
}

}  // namespace

std::vector<std::pair<std::string, double>> parse_pattern(const std::string& text) {
  std::vector<std::pair<std::string, double>> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    const size_t colon = item.rfind(':');
    BRAID_CHECK(colon != std::string::npos && colon > 0, ErrorCode::kInvalidArgument, "pattern '",
                item, "': expected MODEL:RATE");
    const std::string where = "pattern '" + item + "'";
    const double rate = parse_double(std::string_view(item).substr(colon + 1), 0, runtime::kMaxFps,
                                     "the rate (requests per second)", where);
    BRAID_CHECK(rate > 0, ErrorCode::kInvalidArgument, where,
                ": the rate must be > 0 requests per second");
    out.emplace_back(item.substr(0, colon), rate);
  }
  BRAID_CHECK(!out.empty(), ErrorCode::kInvalidArgument, "the pattern names no model");
  return out;
}

LoadReport run_load(const LoadOptions& o) {
  BRAID_CHECK(!o.pattern.empty(), ErrorCode::kInvalidArgument, "the pattern names no model");
  BRAID_CHECK(o.duration_s > 0, ErrorCode::kInvalidArgument, "duration must be > 0");
  check_int_in_range(o.concurrency, 1, kMaxConcurrency, "the concurrency (a sender thread each)",
                     "--concurrency");
  // The arrivals' limits (rates, duration, their task count) before the server is asked anything;
  // the run keeps a result per request.
  std::vector<double> rates;
  for (const auto& [name, rate] : o.pattern) rates.push_back(rate);
  runtime::check_arrival_limits(rates, o.duration_s, "--pattern/--duration");
  // Plain variables, not a structured binding: the senders' lambdas capture them (clang before
  // 16 refuses to capture a binding).
  std::string host;
  int port = 0;
  std::tie(host, port) = host_port(o.url);
  httplib::Client control(host, port);
  control.set_read_timeout(std::chrono::seconds(10));
  std::vector<std::string> names;
  std::vector<Prepared> requests;
  runtime::ArrivalPattern pattern{.kind = o.arrivals, .duration_s = o.duration_s, .seed = o.seed};
  for (size_t m = 0; m < o.pattern.size(); ++m) {
    names.push_back(o.pattern[m].first);
    requests.push_back(prepare_request(control, names.back(), o.binary, o.seed + m));
    pattern.fps.push_back(o.pattern[m].second);
  }
  std::vector<ServerCounters> before;
  for (const std::string& n : names) before.push_back(read_stats(control, n));
  const std::vector<runtime::Arrival> arrivals = runtime::make_arrivals(pattern);

  struct Result {
    bool sent = false;
    int status = 0;
    double latency_us = 0;
  };
  std::vector<Result> results(arrivals.size());
  std::mutex mutex;
  std::condition_variable cv;
  std::deque<size_t> due;
  bool dispatched_all = false;
  const Clock::time_point start = Clock::now() + std::chrono::milliseconds(20);
  auto due_time = [&](size_t i) {
    return start + std::chrono::duration_cast<Clock::duration>(
                       std::chrono::duration<double, std::micro>(arrivals[i].at_us));
  };

  std::vector<std::thread> senders;
  for (int t = 0; t < o.concurrency; ++t)
    senders.emplace_back([&] {
      httplib::Client client(host, port);
      client.set_keep_alive(true);
      client.set_read_timeout(std::chrono::duration_cast<std::chrono::microseconds>(
          std::chrono::duration<double>(o.request_timeout_s)));
      for (;;) {
        size_t i;
        {
          std::unique_lock lock(mutex);
          cv.wait(lock, [&] { return !due.empty() || dispatched_all; });
          if (due.empty()) return;
          i = due.front();
          due.pop_front();
        }
        const Prepared& p = requests[arrivals[i].model];
        auto r = client.Post(p.path, p.headers, p.body, p.content_type);
        results[i] = {
            .sent = true,
            .status = r ? r->status : 0,
            .latency_us =
                std::chrono::duration<double, std::micro>(Clock::now() - due_time(i)).count()};
      }
    });

  LoadReport report{.url = o.url, .concurrency = o.concurrency};
  std::atomic<bool> sampling{true};
  std::thread sampler([&] {
    httplib::Client client(host, port);
    client.set_read_timeout(std::chrono::seconds(5));
    for (Clock::time_point next = start; sampling;
         next += std::chrono::duration_cast<Clock::duration>(
             std::chrono::duration<double>(o.sample_period_s))) {
      std::this_thread::sleep_until(next);
      if (!sampling) break;
      LoadSample s{.t_s = std::chrono::duration<double>(Clock::now() - start).count(),
                   .pending = read_pending(client, names)};
      std::lock_guard lock(mutex);
      report.samples.push_back(std::move(s));
    }
  });

  for (size_t i = 0; i < arrivals.size(); ++i) {
    std::this_thread::sleep_until(due_time(i));
    {
      std::lock_guard lock(mutex);
      due.push_back(i);
    }
    cv.notify_one();
  }
  // The window closes: what no sender has taken by then stays unsent (Result::sent false).
  std::this_thread::sleep_until(start + std::chrono::duration_cast<Clock::duration>(
                                            std::chrono::duration<double>(o.duration_s)));
  {
    std::lock_guard lock(mutex);
    due.clear();
    dispatched_all = true;
  }
  cv.notify_all();
  for (std::thread& t : senders) t.join();
  report.duration_s = std::chrono::duration<double>(Clock::now() - start).count();
  sampling = false;
  sampler.join();

  for (size_t m = 0; m < names.size(); ++m) {
    ModelLoad ml{.name = names[m]};
    std::vector<double> latencies;
    for (size_t i = 0; i < arrivals.size(); ++i) {
      if (arrivals[i].model != m) continue;
      ++ml.due;
      if (!results[i].sent) continue;
      ++ml.sent;
      if (results[i].status == 200) {
        ++ml.ok;
        latencies.push_back(results[i].latency_us);
      } else {
        ++ml.errors[results[i].status];
      }
    }
    ml.throughput = double(ml.ok) / std::max(o.duration_s, 1e-9);
    const Summary l = summarize(std::move(latencies));
    ml.avg_us = l.mean;
    ml.p50_us = l.p50;
    ml.p90_us = l.p90;
    ml.p95_us = l.p95;
    ml.p99_us = l.p99;
    const ServerCounters after = read_stats(control, names[m]);
    const double n = after.success - before[m].success;
    if (n > 0) {
      ml.server_queue_us = (after.queue_ns - before[m].queue_ns) / n / 1e3;
      ml.server_compute_us = (after.compute_ns - before[m].compute_ns) / n / 1e3;
      ml.server_request_us = (after.success_ns - before[m].success_ns) / n / 1e3;
    }
    report.models.push_back(std::move(ml));
  }
  return report;
}

uint64_t LoadReport::due() const {
  return total(models, &ModelLoad::due);
}
uint64_t LoadReport::sent() const {
  return total(models, &ModelLoad::sent);
}
uint64_t LoadReport::ok() const {
  return total(models, &ModelLoad::ok);
}

std::string perf_analyzer_text(const LoadReport& r) {
  std::string out = fmt::format(
      "*** Measurement Settings ***\n  Server: {}\n  Measurement window: "
      "{:.1f} s (open loop)\n\n",
      r.url, r.duration_s);
  if (const uint64_t unsent = r.unsent(), due = r.due(); unsent > 0) {
    out += fmt::format(
        "[WARNING] {} of {} requests ({:.1f}%) were still waiting for one of the {} senders when "
        "the window closed and were not sent: the server answered more slowly than the pattern "
        "asks. Latencies are of the requests sent; raise --concurrency or lower the rates.\n\n",
        unsent, due, 100.0 * double(unsent) / double(std::max<uint64_t>(due, 1)), r.concurrency);
  }
  for (const ModelLoad& m : r.models) {
    out += fmt::format(
        "Model: {}\n  Client: \n    Request count: {}\n    Throughput: {:.2f} "
        "infer/sec\n",
        m.name, m.sent, m.throughput);
    if (m.unsent() > 0) out += fmt::format("    Not sent (window closed): {}\n", m.unsent());
    out += fmt::format(
        "    p50 latency: {:.0f} usec\n    p90 latency: {:.0f} usec\n    p95 "
        "latency: {:.0f} usec\n    p99 latency: {:.0f} usec\n    Avg latency: {:.0f} "
        "usec\n",
        m.p50_us, m.p90_us, m.p95_us, m.p99_us, m.avg_us);
    for (const auto& [status, count] : m.errors)
      out += fmt::format("    Errors: {} x {}\n", count,
                         status == 0 ? std::string("no answer") : fmt::format("HTTP {}", status));
    out += fmt::format(
        "  Server: \n    Successful request count: {}\n    Avg request latency: "
        "{:.0f} usec (queue {:.0f} usec + compute {:.0f} usec)\n\n",
        m.ok, m.server_request_us, m.server_queue_us, m.server_compute_us);
  }
  return out;
}

std::string perf_analyzer_csv(const LoadReport& r) {
  // perf_analyzer's header (request-rate mode), and the model last: one row per model. The
  // request rate is the pattern's (requests due, sent or not). Client send/receive and network
  // time are not measured apart: left empty.
  std::string out =
      "Request Rate,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,Server "
      "Compute Input,Server Compute Infer,Server Compute Output,Client Recv,p50 latency,p90 "
      "latency,p95 latency,p99 latency,Model\n";
  for (const ModelLoad& m : r.models)
    out +=
        fmt::format("{:.2f},{:.2f},,,{:.0f},,{:.0f},,,{:.0f},{:.0f},{:.0f},{:.0f},{}\n",
                    double(m.due) / std::max(r.duration_s, 1e-9), m.throughput, m.server_queue_us,
                    m.server_compute_us, m.p50_us, m.p90_us, m.p95_us, m.p99_us, m.name);
  return out;
}

nlohmann::json to_json(const LoadReport& r) {
  json models = json::array();
  for (const ModelLoad& m : r.models) {
    json errors = json::object();
    for (const auto& [status, count] : m.errors) errors[std::to_string(status)] = count;
    models.push_back({{"name", m.name},
                      {"due", m.due},
                      {"sent", m.sent},
                      {"unsent", m.unsent()},
                      {"ok", m.ok},
                      {"errors", errors},
                      {"throughput", m.throughput},
                      {"latency_us",
                       {{"avg", m.avg_us},
                        {"p50", m.p50_us},
                        {"p90", m.p90_us},
                        {"p95", m.p95_us},
                        {"p99", m.p99_us}}},
                      {"server_us",
                       {{"request", m.server_request_us},
                        {"queue", m.server_queue_us},
                        {"compute", m.server_compute_us}}}});
  }
  json samples = json::array();
  for (const LoadSample& s : r.samples) samples.push_back({{"t_s", s.t_s}, {"pending", s.pending}});
  return {{"url", r.url},         {"duration_s", r.duration_s}, {"concurrency", r.concurrency},
          {"unsent", r.unsent()}, {"failed", r.failed()},       {"models", models},
          {"samples", samples}};
}

}  // namespace braid::serve
