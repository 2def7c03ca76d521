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
#include "serve/core.h"
#include "serve/deployment.h"
#include "serve/generation.h"
#include "serve/grpc_front.h"
#include "serve/metrics.h"
#include "serve/protocol.h"

namespace braid::serve {
namespace {

using Clock = std::chrono::steady_clock;

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

struct Server::Impl final : ServerCore {
  explicit Impl(ServerOptions options) : options(std::move(options)) { routes(); }

  std::shared_ptr<Generation> current_generation() {
    std::lock_guard lock(generation_mutex);
    return current;
  }
  // Swaps `next` in (null: nothing served) and returns the one it replaces.
  std::shared_ptr<Generation> swap_in(std::shared_ptr<Generation> next) {
    if (next) next->start();
    metrics.set_models(next ? next->listed() : std::vector<Metrics::Listed>{});
    std::lock_guard lock(generation_mutex);
    std::swap(current, next);
    return next;
  }

  struct Found {
    std::shared_ptr<Generation> generation;
    size_t model;
  };
  // The served model `name` (at `version`, when not empty), or why not (Triton's 404 message).
  std::optional<Found> lookup(const std::string& name, const std::string& version,
                              std::string* why) {
    std::shared_ptr<Generation> g = current_generation();
    const std::optional<size_t> m = g ? g->find(name) : std::nullopt;
    if (!m) {
      *why = fmt::format("Request for unknown model: '{}' is not found", name);
      return std::nullopt;
    }
    if (!version.empty() && version != g->served[*m].version) {
      *why =
          fmt::format("Request for unknown model: '{}' version {} is not found (it has version {})",
                      name, version, g->served[*m].version);
      return std::nullopt;
    }
    return Found{std::move(g), *m};
  }
  // The version a model path names ("": none).
  static std::string version_of(const httplib::Request& req) {
    return req.matches.size() > 2 ? std::string(req.matches[2]) : "";
  }
  // The served model a path names (and its version, when given), or a 404 written to `res`.
  std::optional<Found> find_model(const httplib::Request& req, httplib::Response& res) {
    std::string why;
    std::optional<Found> found = lookup(req.matches[1], version_of(req), &why);
    if (!found) reply_error(res, 404, why);
    return found;
  }

  void routes();
  // ServerCore
  bool ready() const override { return is_ready; }
  InferAnswer infer(const InferCall& call) override;
  void record_success(const std::string& model, const RequestTimes& times) override {
    metrics.record_success(model, times);
  }
  void record_failure(const std::string& model, double total_us) override {
    metrics.record_failure(model, total_us);
  }
  CallStatus metadata(const std::string& name, const std::string& version,
                      ModelMetadata* out) override {
    std::string why;
    const std::optional<Found> found = lookup(name, version, &why);
    if (!found) return {404, why};
    *out = found->generation->metadata[found->model];
    return {};
  }
  CallStatus model_ready(const std::string& name, const std::string& version) override {
    std::string why;
    if (!lookup(name, version, &why)) return {404, why};
    return is_ready ? CallStatus{} : CallStatus{503, "the server is shutting down"};
  }
  CallStatus repository_index(nlohmann::json* out) override;
  CallStatus control(const std::string& action, const std::string& name,
                     const std::vector<std::string>& parameters) override;

  void infer_http(const httplib::Request& req, httplib::Response& res);
  std::string scrape();

  ServerOptions options;
  // EXPLICIT model control: what can be loaded (null: the models are fixed, mode NONE).
  std::unique_ptr<DeploySettings> deploy_settings;
  Metrics metrics;
  std::mutex generation_mutex;
  std::shared_ptr<Generation> current;  // null: no model loaded
  std::mutex control_mutex;             // one load, unload or shutdown at a time

  httplib::Server http;
  std::thread http_thread;
  std::unique_ptr<GrpcFront> grpc;
  int bound_port = -1;
  std::atomic<bool> is_ready{false}, running{false};

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
  http.Get("/v2", [this](const httplib::Request&, httplib::Response& res) {
    nlohmann::json extensions = {"binary_tensor_data", "statistics", "model_repository"};
    const nlohmann::json body = {
        {"name", "braid"}, {"version", "0.1.0"}, {"extensions", extensions}};
    res.set_content(body.dump(), "application/json");
  });
  // Before the model routes, which would take "stats" for a model's name.
  http.Get("/v2/models/stats", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics.stats(std::nullopt).dump(), "application/json");
  });
  const std::string model = R"(/v2/models/([^/]+)(?:/versions/([^/]+))?)";
  http.Get(model, [this](const httplib::Request& req, httplib::Response& res) {
    ModelMetadata meta;
    const CallStatus status = metadata(req.matches[1], version_of(req), &meta);
    if (!status.ok()) return reply_error(res, status.http, status.error);
    res.set_content(to_json(meta).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                    "application/json");
  });
  http.Get(model + "/ready", [this](const httplib::Request& req, httplib::Response& res) {
    const CallStatus status = model_ready(req.matches[1], version_of(req));
    if (status.http == 404) return reply_error(res, status.http, status.error);
    res.status = status.http;  // 200, or 503 while draining
  });
  http.Get(model + "/stats", [this](const httplib::Request& req, httplib::Response& res) {
    if (find_model(req, res))
      res.set_content(metrics.stats(std::string(req.matches[1])).dump(), "application/json");
  });
  http.Post(model + "/infer",
            [this](const httplib::Request& req, httplib::Response& res) { infer_http(req, res); });
  http.Post("/v2/repository/index", [this](const httplib::Request&, httplib::Response& res) {
    nlohmann::json index;
    const CallStatus status = repository_index(&index);
    if (!status.ok()) return reply_error(res, status.http, status.error);
    res.set_content(index.dump(), "application/json");
  });
  http.Post(R"(/v2/repository/models/([^/]+)/(load|unload))",
            [this](const httplib::Request& req, httplib::Response& res) {
              const std::string action = req.matches[2], name = req.matches[1];
              std::vector<std::string> parameters;
              if (!req.body.empty()) {
                const nlohmann::json j = nlohmann::json::parse(req.body, nullptr, false);
                if (!j.is_object())
                  return reply_error(res, 400,
                                     fmt::format("failed to {} '{}': the body is not a JSON object",
                                                 action, name));
                if (j.contains("parameters") && j["parameters"].is_object())
                  for (const auto& [key, value] : j["parameters"].items())
                    parameters.push_back(key);
              }
              const CallStatus status = control(action, name, parameters);
              if (!status.ok()) return reply_error(res, status.http, status.error);
              res.set_content("{}", "application/json");
            });
  http.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(scrape(), "text/plain; version=0.0.4");
  });
}

CallStatus Server::Impl::repository_index(nlohmann::json* out) try {
  std::shared_ptr<Generation> g = current_generation();
  nlohmann::json& index = *out;
  index = nlohmann::json::array();
  if (!deploy_settings) {  // mode NONE with the caller's models: what is served
    for (size_t m = 0; g && m < g->models.size(); ++m)
      index.push_back({{"name", g->models.model(m).name},
                       {"version", g->served[m].version},
                       {"state", is_ready ? "READY" : "UNAVAILABLE"}});
    return {};
  }
  // Every model the server knows now (the repository scanned again), loaded or not.
  for (const KnownModel& k : known_models(*deploy_settings)) {
    const std::optional<size_t> m = g ? g->find(k.name) : std::nullopt;
    if (m && is_ready)
      index.push_back({{"name", k.name}, {"version", g->served[*m].version}, {"state", "READY"}});
    else
      index.push_back({{"name", k.name},
                       {"version", k.served.version},
                       {"state", "UNAVAILABLE"},
                       {"reason", m ? "the server is shutting down" : "unloaded"}});
  }
  return {};
} catch (const Error& e) {
  return {http_status(e.code()), e.what()};
}

// Triton's model repository extension. Mode NONE: no effect, an error. EXPLICIT: the models
// wanted after the request are deployed (the repository read again, so a load also reloads a
// changed model or config), then swapped in; the old deployment finishes what it accepted.
// A load that fails leaves what is served unchanged.
CallStatus Server::Impl::control(const std::string& action, const std::string& name,
                                 const std::vector<std::string>& parameters) {
  if (!deploy_settings)
    return {400, fmt::format("failed to {} '{}': braid serves in model control mode NONE "
                             "(Triton's default): the repository is loaded at start and "
                             "load/unload requests have no effect",
                             action, name)};
  // unload_dependents (tritonclient sends it) means nothing without ensembles.
  for (const std::string& key : parameters)
    if (key != "unload_dependents")
      return {501, fmt::format("failed to {} '{}': parameter '{}' is not supported (no config "
                               "override or model files in a request)",
                               action, name, key)};
  std::lock_guard lock(control_mutex);
  if (!is_ready) return {503, "the server is shutting down"};
  std::shared_ptr<Generation> g = current_generation();
  std::vector<std::string> wanted;
  for (size_t m = 0; g && m < g->models.size(); ++m)
    if (g->models.model(m).name != name) wanted.push_back(g->models.model(m).name);
  if (action == "unload" && wanted.size() == (g ? g->models.size() : 0))
    return {};  // not loaded: nothing to do, as in Triton
  if (action == "load") wanted.push_back(name);
  try {
    const std::vector<KnownModel> chosen = select_models(known_models(*deploy_settings), wanted);
    std::shared_ptr<Generation> next =
        chosen.empty() ? nullptr : Generation::of(deploy(*deploy_settings, chosen), options);
    std::shared_ptr<Generation> old = swap_in(std::move(next));
    if (old) old->retire(options.exit_timeout_s);
  } catch (const Error& e) {
    return {e.code() == ErrorCode::kNotFound ? 400 : http_status(e.code()),
            fmt::format("failed to {} '{}': {}", action, name, e.what())};
  }
  return {};
}

InferAnswer Server::Impl::infer(const InferCall& call) {
  const Clock::time_point begin = Clock::now();
  auto elapsed_us = [&] {
    return std::chrono::duration<double, std::micro>(Clock::now() - begin).count();
  };
  InferAnswer answer;
  auto fail = [&](int status, std::string error) {
    answer.status = status;
    answer.error = std::move(error);
    answer.retry_after = status == 503 || status == 429;
    return std::move(answer);
  };
  if (!is_ready) return fail(503, "the server is shutting down");
  // A load or unload may swap the served models between finding this one and queueing the
  // request: then it is queued again where the model is served now.
  for (int attempt = 0;; ++attempt) {
    std::string why;
    const std::optional<Found> found = lookup(call.model, call.version, &why);
    if (!found) return fail(404, why);
    const std::shared_ptr<Generation>& g = found->generation;
    const size_t m = found->model;
    const std::string& name = g->models.model(m).name;
    const ServedModel& model = g->served[m];
    InferRequest& request = answer.request;
    try {
      request = call.parse(g->metadata[m]);
    } catch (const Error& e) {
      metrics.record_failure(name, elapsed_us());
      return fail(http_status(e.code()), e.what());
    }
    // A batching model: every input leads with the same b in 1..max_batch_size; sample i of
    // every input is task i.
    size_t samples = 1;
    if (model.config.max_batch_size > 0 && !request.inputs.empty()) {
      const InputTensor& first = request.inputs.front();
      samples = size_t(first.shape.at(0));
      for (const InputTensor& input : request.inputs)
        if (input.shape.at(0) != first.shape[0] || input.shape[0] < 1 ||
            input.shape[0] > model.config.max_batch_size) {
          metrics.record_failure(name, elapsed_us());
          return fail(400, fmt::format("input '{}': batch size {} {}", input.name, input.shape[0],
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
    ++g->pending[m];
    const runtime::SubmitStatus status = g->inbox.submit_all(std::move(tasks));
    if (status != runtime::SubmitStatus::kAccepted) {
      --g->pending[m];
      if (status == runtime::SubmitStatus::kClosed && attempt == 0 && is_ready &&
          current_generation() != g)
        continue;
      metrics.record_failure(name, elapsed_us());
      if (status == runtime::SubmitStatus::kQueueFull)
        return fail(
            options.overload_status,
            fmt::format("model '{}': queue full ({} of {} places taken, {} asked)", name,
                        g->inbox.waiting(uint32_t(m)), g->inbox.capacity(uint32_t(m)), samples));
      return fail(503, "the server is shutting down");
    }
    runtime::TaskOutcome outcome = answers->wait();
    --g->pending[m];
    switch (outcome.status) {
      case runtime::TaskOutcome::Status::kDone:
        break;
      case runtime::TaskOutcome::Status::kTimedOut:
        metrics.record_failure(name, elapsed_us());
        return fail(503, fmt::format("model '{}': request timed out before it ran: {}", name,
                                     outcome.error));
      case runtime::TaskOutcome::Status::kCancelled: {
        metrics.record_failure(name, elapsed_us());
        InferAnswer cancelled = fail(503, "the server shut down before the request ran");
        cancelled.retry_after = false;  // it will not come back
        return cancelled;
      }
      case runtime::TaskOutcome::Status::kFailed:
        metrics.record_failure(name, elapsed_us());
        return fail(500, outcome.error);
    }
    const ModelMetadata& meta = g->metadata[m];
    answer.model_name = meta.name;
    answer.model_version = model.version;
    for (size_t o = 0; o < meta.outputs.size() && o < outcome.outputs.size(); ++o) {
      std::vector<int64_t> shape = meta.outputs[o].shape;
      if (model.config.max_batch_size > 0) shape[0] = int64_t(samples);
      answer.outputs.push_back(
          {meta.outputs[o].name, meta.outputs[o].datatype, shape, std::move(outcome.outputs[o])});
    }
    answer.times = {.queue_us = outcome.queue_us,
                    .compute_us = outcome.run_us,
                    .total_us = elapsed_us(),
                    .inferences = samples};
    return answer;
  }
}

// The transport records success once the response is encoded (an output that cannot be
// encoded is a failure).
void Server::Impl::infer_http(const httplib::Request& req, httplib::Response& res) {
  InferAnswer a =
      infer({.model = req.matches[1],
             .version = version_of(req),
             .parse = [&](const ModelMetadata& meta) {
               std::optional<size_t> header_length;
               if (req.has_header("Inference-Header-Content-Length")) {
                 const std::string value = req.get_header_value("Inference-Header-Content-Length");
                 size_t n = 0;
                 const auto [end, ec] =
                     std::from_chars(value.data(), value.data() + value.size(), n);
                 BRAID_CHECK(ec == std::errc() && end == value.data() + value.size(),
                             ErrorCode::kInvalidArgument, "Inference-Header-Content-Length '",
                             value, "' is not a size");
                 header_length = n;
               }
               return parse_infer_request(req.body, header_length, meta);
             }});
  if (a.retry_after) res.set_header("Retry-After", "1");
  if (a.status != 200) return reply_error(res, a.status, a.error);
  EncodedResponse encoded;
  try {
    encoded = encode_infer_response(a.model_name, a.model_version, a.request, a.outputs);
  } catch (const Error& e) {
    metrics.record_failure(a.model_name, a.times.total_us);
    return reply_error(res, http_status(e.code()), e.what());
  }
  if (encoded.header_length)
    res.set_header("Inference-Header-Content-Length", std::to_string(*encoded.header_length));
  res.set_content(std::move(encoded.body), encoded.content_type);
  metrics.record_success(a.model_name, a.times);
}

std::string Server::Impl::scrape() {
  Gauges g;
  const std::shared_ptr<Generation> served = current_generation();
  for (size_t m = 0; served && m < served->models.size(); ++m)
    g.pending.push_back(served->pending[m].load());
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
  if (served) {
    std::lock_guard lock(served->live_mutex);
    const runtime::LiveStats& live = served->live;
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
    : impl_(std::make_unique<Impl>(std::move(options))) {
  check_options();
  impl_->current = std::make_shared<Generation>(nullptr, models, backend, policy, combiner,
                                                impl_->options.models, impl_->options);
}

Server::Server(DeploySettings settings, ModelControl mode,
               const std::vector<std::string>& startup_models, ServerOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {
  check_options();
  std::vector<KnownModel> known = known_models(settings), chosen;
  if (mode == ModelControl::kNone) {
    BRAID_CHECK(startup_models.empty(), ErrorCode::kInvalidArgument,
                "models to load at start (--load-model) need model control mode explicit");
    chosen = known;
    BRAID_CHECK(!chosen.empty(), ErrorCode::kInvalidArgument,
                "no models: give --models or --model-repository");
  } else {
    const bool all =
        std::find(startup_models.begin(), startup_models.end(), "*") != startup_models.end();
    std::vector<std::string> named;
    for (const std::string& name : startup_models)
      if (name != "*") named.push_back(name);
    chosen = select_models(known, named);  // unknown names fail even beside "*"
    if (all) chosen = known;
    impl_->deploy_settings = std::make_unique<DeploySettings>(settings);
  }
  if (!chosen.empty()) impl_->current = Generation::of(deploy(settings, chosen), impl_->options);
}

void Server::check_options() const {
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
  if (s.options.grpc_port >= 0)
    s.grpc = std::make_unique<GrpcFront>(s, s.options.host, s.options.grpc_port,
                                         s.options.max_request_bytes);
  s.running = true;
  // The first generation's loop starts (and the metrics list its models).
  s.swap_in(std::exchange(s.current, nullptr));
  s.http_thread = std::thread([&s] { s.http.listen_after_bind(); });
  s.is_ready = true;
}

int Server::port() const {
  return impl_->bound_port;
}
int Server::grpc_port() const {
  return impl_->grpc ? impl_->grpc->port() : -1;
}
bool Server::ready() const {
  return impl_->is_ready;
}

std::vector<std::string> Server::models() const {
  std::vector<std::string> names;
  if (auto g = impl_->current_generation())
    for (size_t m = 0; m < g->models.size(); ++m) names.push_back(g->models.model(m).name);
  return names;
}

std::vector<std::string> Server::describe_models() const {
  std::vector<std::string> lines;
  if (auto g = impl_->current_generation())
    for (size_t m = 0; m < g->models.size(); ++m) {
      const runtime::RuntimeModel& model = g->models.model(m);
      std::string line =
          fmt::format("model {} (version {}): {} units, {} blocks", model.name,
                      g->served[m].version, model.units().num_units(), model.blocks.size());
      if (g->served[m].config.max_batch_size > 0)
        line += fmt::format(", max_batch_size {}", g->served[m].config.max_batch_size);
      lines.push_back(std::move(line));
    }
  return lines;
}

void Server::shutdown() {
  Impl& s = *impl_;
  std::lock_guard lock(s.control_mutex);  // after a load or unload under way
  if (!s.running) return;
  s.is_ready = false;
  // New requests: 503; the loop finishes the accepted ones, within exit_timeout_s.
  if (std::shared_ptr<Generation> g = s.current_generation()) g->retire(s.options.exit_timeout_s);
  s.http.stop();
  s.http_thread.join();
  if (s.grpc) s.grpc->shutdown();
  s.running = false;
}

}  // namespace braid::serve
