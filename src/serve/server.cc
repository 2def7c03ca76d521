#include "serve/server.h"

#include <httplib.h>
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <future>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "base/error.h"
#include "base/stats.h"
#include "runtime/runtime.h"
#include "serve/metrics.h"
#include "serve/protocol.h"

namespace braid::serve {
namespace {

using Clock = std::chrono::steady_clock;

// A batching model's tensors show their leading 1 as -1: a request carries 1..max_batch_size.
ModelMetadata metadata_of(const runtime::RuntimeModel& model, const ServedModel& served) {
  ModelMetadata m{.name = model.name, .versions = {served.version}, .platform = "onnxruntime_onnx"};
  const ir::Graph& g = *model.loaded.graph;
  auto spec = [&](ValueId v) {
    const ir::Value& value = g.value(v);
    TensorSpec t{value.name, datatype_of(value.type.dtype), value.type.shape};
    if (served.config.max_batch_size > 0) {
      BRAID_CHECK(!t.shape.empty() && t.shape[0] == 1, ErrorCode::kInvalidModel, "model '",
                  model.name, "': max_batch_size ", served.config.max_batch_size,
                  " needs a leading batch dimension of 1 on every input and output (load it at "
                  "batch 1); '",
                  t.name, "' has shape [", fmt::format("{}", fmt::join(t.shape, ",")), "]");
      t.shape[0] = -1;
    }
    return t;
  };
  for (ValueId v : g.inputs()) m.inputs.push_back(spec(v));
  for (ValueId v : g.outputs()) m.outputs.push_back(spec(v));
  std::vector<TensorSpec> inputs, outputs;  // as the model has them, batch dimension included
  for (ValueId v : g.inputs())
    inputs.push_back({g.value(v).name, datatype_of(g.value(v).type.dtype), g.value(v).type.shape});
  for (ValueId v : g.outputs())
    outputs.push_back({g.value(v).name, datatype_of(g.value(v).type.dtype), g.value(v).type.shape});
  check_model_config(served.config, inputs, outputs);
  return m;
}

// The samples of a batched request, answered together once the last one is done.
class SampleAnswers {
 public:
  explicit SampleAnswers(size_t samples) : outcomes_(samples), remaining_(samples) {}
  std::function<void(runtime::TaskOutcome)> callback(size_t sample,
                                                     std::shared_ptr<SampleAnswers> self) {
    return [sample, self = std::move(self)](runtime::TaskOutcome o) {
      self->outcomes_[sample] = std::move(o);
      if (--self->remaining_ == 0) self->all_done_.set_value();
    };
  }
  // Waits for every sample. The first sample that did not finish decides the status; otherwise
  // outputs are stacked sample after sample (row-major: a leading batch dimension).
  runtime::TaskOutcome wait() {
    all_done_.get_future().wait();
    runtime::TaskOutcome joined;
    for (runtime::TaskOutcome& o : outcomes_) {
      if (o.status != runtime::TaskOutcome::Status::kDone) return std::move(o);
      joined.queue_us = std::max(joined.queue_us, o.queue_us);
      joined.run_us = std::max(joined.run_us, o.run_us);
      joined.outputs.resize(o.outputs.size());
      for (size_t k = 0; k < o.outputs.size(); ++k)
        joined.outputs[k].insert(joined.outputs[k].end(), o.outputs[k].begin(), o.outputs[k].end());
    }
    return joined;
  }

 private:
  std::vector<runtime::TaskOutcome> outcomes_;  // each written by one callback, read after all
  std::atomic<size_t> remaining_;
  std::promise<void> all_done_;
};

void reply_error(httplib::Response& res, int status, std::string_view message) {
  res.status = status;
  res.set_content(error_body(message), "application/json");
}

}  // namespace

struct Server::Impl {
  Impl(const runtime::ModelSet& models, runtime::Backend& backend, runtime::Policy& policy,
       runtime::CombinedScheduler* combiner, ServerOptions options)
      : models(models),
        options(std::move(options)),
        served(served_of(models.size(), this->options.models)),
        inbox(models.size(), {.queue_capacity = this->options.queue_capacity,
                              .capacities = capacities_of(served)}),
        runtime(models, backend, policy, combiner,
                {.on_sample =
                     [this](const runtime::LiveStats& s) {
                       std::lock_guard lock(live_mutex);
                       live = s;
                     }}),
        metrics(model_names(models), versions_of(served)),
        pending(std::make_unique<std::atomic<size_t>[]>(models.size())) {
    for (size_t m = 0; m < models.size(); ++m) {
      metadata.push_back(metadata_of(models.model(m), served[m]));
      pending[m] = 0;
    }
    routes();
  }

  static std::vector<ServedModel> served_of(size_t n, std::vector<ServedModel> given) {
    given.resize(n);
    for (ServedModel& m : given)
      if (m.version.empty()) m.version = "1";
    return given;
  }
  static std::vector<std::string> versions_of(const std::vector<ServedModel>& served) {
    std::vector<std::string> versions;
    for (const ServedModel& m : served) versions.push_back(m.version);
    return versions;
  }
  static std::vector<size_t> capacities_of(const std::vector<ServedModel>& served) {
    std::vector<size_t> capacities;
    for (const ServedModel& m : served) capacities.push_back(m.config.max_queue_size);
    return capacities;
  }

  static std::vector<std::string> model_names(const runtime::ModelSet& models) {
    std::vector<std::string> names;
    for (size_t m = 0; m < models.size(); ++m) names.push_back(models.model(m).name);
    return names;
  }

  // The model a path names (and its version, when given), or a 404 written to `res`.
  std::optional<size_t> find_model(const httplib::Request& req, httplib::Response& res) {
    const std::string name = req.matches[1];
    const std::string version = req.matches.size() > 2 ? std::string(req.matches[2]) : "";
    for (size_t m = 0; m < models.size(); ++m) {
      if (models.model(m).name != name) continue;
      if (!version.empty() && version != served[m].version) {
        reply_error(res, 404,
                    fmt::format("Request for unknown model: '{}' version {} is not found (it has "
                                "version {})",
                                name, version, served[m].version));
        return std::nullopt;
      }
      return m;
    }
    reply_error(res, 404, fmt::format("Request for unknown model: '{}' is not found", name));
    return std::nullopt;
  }

  void routes();
  void infer(size_t m, const httplib::Request& req, httplib::Response& res);
  std::string scrape();

  const runtime::ModelSet& models;
  ServerOptions options;
  std::vector<ServedModel> served;  // per model
  runtime::Inbox inbox;
  runtime::Runtime runtime;
  Metrics metrics;
  std::vector<ModelMetadata> metadata;
  std::unique_ptr<std::atomic<size_t>[]> pending;  // per model: accepted, not yet answered

  httplib::Server http;
  std::thread http_thread, loop_thread;
  std::promise<void> loop_done;
  int bound_port = -1;
  std::atomic<bool> is_ready{false}, running{false};
  std::mutex shutdown_mutex;

  std::mutex live_mutex;
  runtime::LiveStats live;
  std::mutex scrape_mutex;
  double last_cpu = 0;
  Clock::time_point last_scrape = Clock::now();
};

void Server::Impl::routes() {
  http.set_payload_max_length(options.max_request_bytes);
  // An idle kept-alive connection holds a handler thread (cpp-httplib): give it back soon.
  http.set_keep_alive_timeout(2);
  const int threads = std::max(1, options.http_threads);
  http.new_task_queue = [threads] { return new httplib::ThreadPool(size_t(threads)); };
  // httplib answers some errors itself (413 for a body over the limit, 404 for an unknown
  // path, 400 for a malformed request line) with an empty body: give them the protocol's.
  http.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    std::string message = fmt::format("HTTP {}", res.status);
    if (res.status == 404) message = fmt::format("no such endpoint: {} {}", req.method, req.path);
    if (res.status == 413) message = "request body too large (--max-request-bytes)";
    res.set_content(error_body(message), "application/json");
  });

  http.Get("/v2/health/live",
           [](const httplib::Request&, httplib::Response& res) { res.status = 200; });
  http.Get("/v2/health/ready", [this](const httplib::Request&, httplib::Response& res) {
    res.status = is_ready ? 200 : 503;
  });
  http.Get("/v2", [](const httplib::Request&, httplib::Response& res) {
    const nlohmann::json body = {{"name", "braid"},
                                 {"version", "0.1.0"},
                                 {"extensions", {"binary_tensor_data", "statistics"}}};
    res.set_content(body.dump(), "application/json");
  });
  // Before the model routes, which would take "stats" for a model's name.
  http.Get("/v2/models/stats", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics.stats(std::nullopt).dump(), "application/json");
  });
  const std::string model = R"(/v2/models/([^/]+)(?:/versions/([^/]+))?)";
  http.Get(model, [this](const httplib::Request& req, httplib::Response& res) {
    if (auto m = find_model(req, res))
      res.set_content(
          to_json(metadata[*m]).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
          "application/json");
  });
  http.Get(model + "/ready", [this](const httplib::Request& req, httplib::Response& res) {
    if (find_model(req, res)) res.status = is_ready ? 200 : 503;
  });
  http.Get(model + "/stats", [this](const httplib::Request& req, httplib::Response& res) {
    if (auto m = find_model(req, res))
      res.set_content(metrics.stats(*m).dump(), "application/json");
  });
  http.Post(model + "/infer", [this](const httplib::Request& req, httplib::Response& res) {
    if (auto m = find_model(req, res)) infer(*m, req, res);
  });
  http.Post("/v2/repository/index", [this](const httplib::Request&, httplib::Response& res) {
    nlohmann::json index = nlohmann::json::array();
    for (size_t m = 0; m < models.size(); ++m)
      index.push_back({{"name", models.model(m).name},
                       {"version", served[m].version},
                       {"state", is_ready ? "READY" : "UNAVAILABLE"}});
    res.set_content(index.dump(), "application/json");
  });
  // Triton's model control mode NONE (its default): the repository is loaded at start, and load
  // and unload requests have no effect and get an error.
  http.Post(R"(/v2/repository/models/([^/]+)/(load|unload))",
            [](const httplib::Request& req, httplib::Response& res) {
              reply_error(res, 400,
                          fmt::format("failed to {} '{}': braid serves in model control mode NONE "
                                      "(Triton's default): the repository is loaded at start and "
                                      "load/unload requests have no effect",
                                      std::string(req.matches[2]), std::string(req.matches[1])));
            });
  http.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(scrape(), "text/plain; version=0.0.4");
  });
}

void Server::Impl::infer(size_t m, const httplib::Request& req, httplib::Response& res) {
  const Clock::time_point begin = Clock::now();
  auto elapsed_us = [&] {
    return std::chrono::duration<double, std::micro>(Clock::now() - begin).count();
  };
  if (!is_ready) {
    res.set_header("Retry-After", "1");
    return reply_error(res, 503, "the server is shutting down");
  }
  std::optional<size_t> header_length;
  if (req.has_header("Inference-Header-Content-Length")) {
    const std::string value = req.get_header_value("Inference-Header-Content-Length");
    size_t n = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
    if (ec != std::errc() || end != value.data() + value.size()) {
      metrics.record_failure(m, elapsed_us());
      return reply_error(res, 400,
                         fmt::format("Inference-Header-Content-Length '{}' is not a size", value));
    }
    header_length = n;
  }
  InferRequest request;
  try {
    request = parse_infer_request(req.body, header_length, metadata[m]);
  } catch (const Error& e) {
    metrics.record_failure(m, elapsed_us());
    return reply_error(res, http_status(e.code()), e.what());
  }

  const ServedModel& model = served[m];
  // A batching model: every input leads with the same b in 1..max_batch_size; sample i of every
  // input is task i.
  size_t samples = 1;
  if (model.config.max_batch_size > 0 && !request.inputs.empty()) {
    const InputTensor& first = request.inputs.front();
    samples = size_t(first.shape.at(0));
    for (const InputTensor& input : request.inputs)
      if (input.shape.at(0) != first.shape[0] || input.shape[0] < 1 ||
          input.shape[0] > model.config.max_batch_size) {
        metrics.record_failure(m, elapsed_us());
        return reply_error(res, 400,
                           fmt::format("input '{}': batch size {} {}", input.name, input.shape[0],
                                       input.shape[0] != first.shape[0]
                                           ? fmt::format("differs from input '{}''s {}", first.name,
                                                         first.shape[0])
                                           : fmt::format("is outside 1..{} (max_batch_size)",
                                                         model.config.max_batch_size)));
      }
  }
  const double timeout_us =
      request.timeout_us && model.config.allow_timeout_override ? double(*request.timeout_us)
      : model.config.default_timeout_us > 0 ? double(model.config.default_timeout_us)
                                            : options.default_timeout_us;
  auto answers = std::make_shared<SampleAnswers>(samples);
  std::vector<runtime::Submission> tasks(samples);
  for (size_t i = 0; i < samples; ++i) {
    tasks[i] = {
        .model = uint32_t(m), .timeout_us = timeout_us, .done = answers->callback(i, answers)};
    for (InputTensor& input : request.inputs) {
      if (samples == 1) {
        tasks[i].inputs.push_back(std::move(input.values));
        continue;
      }
      const size_t per_sample = input.values.size() / samples;
      const auto from = input.values.begin() + ptrdiff_t(i * per_sample);
      tasks[i].inputs.emplace_back(from, from + ptrdiff_t(per_sample));
    }
  }
  request.inputs.clear();  // the tasks hold the values now
  ++pending[m];
  const runtime::SubmitStatus status = inbox.submit_all(std::move(tasks));
  if (status != runtime::SubmitStatus::kAccepted) {
    --pending[m];
    metrics.record_failure(m, elapsed_us());
    res.set_header("Retry-After", "1");
    if (status == runtime::SubmitStatus::kQueueFull)
      return reply_error(res, options.overload_status,
                         fmt::format("model '{}': queue full ({} of {} places taken, {} asked)",
                                     models.model(m).name, inbox.waiting(uint32_t(m)),
                                     inbox.capacity(uint32_t(m)), samples));
    return reply_error(res, 503, "the server is shutting down");
  }
  runtime::TaskOutcome outcome = answers->wait();
  --pending[m];
  switch (outcome.status) {
    case runtime::TaskOutcome::Status::kDone:
      break;
    case runtime::TaskOutcome::Status::kTimedOut:
      metrics.record_failure(m, elapsed_us());
      res.set_header("Retry-After", "1");
      return reply_error(res, 503,
                         fmt::format("model '{}': request timed out before it ran: {}",
                                     models.model(m).name, outcome.error));
    case runtime::TaskOutcome::Status::kCancelled:
      metrics.record_failure(m, elapsed_us());
      return reply_error(res, 503, "the server shut down before the request ran");
    case runtime::TaskOutcome::Status::kFailed:
      metrics.record_failure(m, elapsed_us());
      return reply_error(res, 500, outcome.error);
  }
  std::vector<OutputTensor> outputs;
  const ModelMetadata& meta = metadata[m];
  for (size_t o = 0; o < meta.outputs.size() && o < outcome.outputs.size(); ++o) {
    std::vector<int64_t> shape = meta.outputs[o].shape;
    if (model.config.max_batch_size > 0) shape[0] = int64_t(samples);
    outputs.push_back(
        {meta.outputs[o].name, meta.outputs[o].datatype, shape, std::move(outcome.outputs[o])});
  }
  EncodedResponse encoded;
  try {
    encoded = encode_infer_response(meta.name, served[m].version, request, outputs);
  } catch (const Error& e) {
    metrics.record_failure(m, elapsed_us());
    return reply_error(res, http_status(e.code()), e.what());
  }
  if (encoded.header_length)
    res.set_header("Inference-Header-Content-Length", std::to_string(*encoded.header_length));
  res.set_content(std::move(encoded.body), encoded.content_type);
  metrics.record_success(m, {.queue_us = outcome.queue_us,
                             .compute_us = outcome.run_us,
                             .total_us = elapsed_us(),
                             .inferences = samples});
}

std::string Server::Impl::scrape() {
  Gauges g;
  for (size_t m = 0; m < models.size(); ++m) g.pending.push_back(pending[m].load());
  {
    std::lock_guard lock(scrape_mutex);
    const double cpu = process_cpu_seconds();
    const Clock::time_point now = Clock::now();
    const double wall = std::chrono::duration<double>(now - last_scrape).count();
    g.cpu_utilization =
        wall > 0 ? std::clamp((cpu - last_cpu) / (wall * double(allowed_cpu_count())), 0.0, 1.0)
                 : 0.0;
    last_cpu = cpu;
    last_scrape = now;
  }
  {
    std::lock_guard lock(live_mutex);
    g.in_flight_instances = live.in_flight;
    g.queue_variance = live.variance;
    g.steps = live.steps;
    g.combined_steps = live.combined_steps;
    g.stage_dict_hits = live.stage_dict_hits;
  }
  return metrics.prometheus(g);
}

Server::Server(const runtime::ModelSet& models, runtime::Backend& backend, runtime::Policy& policy,
               runtime::CombinedScheduler* combiner, ServerOptions options)
    : impl_(std::make_unique<Impl>(models, backend, policy, combiner, std::move(options))) {
  BRAID_CHECK(impl_->options.overload_status == 503 || impl_->options.overload_status == 429,
              ErrorCode::kInvalidArgument, "overload status must be 503 or 429, got ",
              impl_->options.overload_status);
  BRAID_CHECK(impl_->options.port >= 0 && impl_->options.port <= 65535, ErrorCode::kInvalidArgument,
              "port ", impl_->options.port, " is out of range");
}

Server::~Server() {
  shutdown();
}

void Server::start() {
  Impl& s = *impl_;
  BRAID_CHECK(!s.running, ErrorCode::kInvalidArgument, "the server is already running");
  s.bound_port = s.options.port == 0
                     ? s.http.bind_to_any_port(s.options.host)
                     : (s.http.bind_to_port(s.options.host, s.options.port) ? s.options.port : -1);
  BRAID_CHECK(s.bound_port > 0, ErrorCode::kInvalidArgument, "cannot listen on ", s.options.host,
              ":", s.options.port, " (in use, or not an address of this machine)");
  s.running = true;
  s.loop_thread = std::thread([&s] {
    s.runtime.serve(s.inbox);
    s.loop_done.set_value();
  });
  s.http_thread = std::thread([&s] { s.http.listen_after_bind(); });
  s.is_ready = true;
}

int Server::port() const {
  return impl_->bound_port;
}
bool Server::ready() const {
  return impl_->is_ready;
}

void Server::shutdown() {
  Impl& s = *impl_;
  std::lock_guard lock(s.shutdown_mutex);
  if (!s.running) return;
  s.is_ready = false;
  s.inbox.close();  // new requests: 503; the loop finishes the accepted ones
  auto done = s.loop_done.get_future();
  if (done.wait_for(std::chrono::duration<double>(s.options.exit_timeout_s)) !=
      std::future_status::ready)
    s.inbox.stop();  // what is left is answered cancelled (503)
  s.loop_thread.join();
  s.http.stop();
  s.http_thread.join();
  s.running = false;
}

}  // namespace braid::serve
