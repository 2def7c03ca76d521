// braid's inference server: the Open Inference Protocol v2 (KServe v2, what Triton's clients
// speak) over HTTP, in front of TOP's runtime (runtime/runtime.h, online). Each model's requests
// become tasks in its bounded queue; the runtime's policy pipelines them block by block on the
// device; every accepted request gets exactly one response.
//
//   serve::Server server(models, backend, *policy, &dict, {.port = 0});
//   server.start();                 // binds; the runtime's loop and the HTTP threads run
//   server.port();                  // the port bound (0 asks for an ephemeral one)
//   server.shutdown();              // readiness false, new requests 503, accepted ones finish
//
// Endpoints: /v2/health/live|ready, /v2, /v2/models/{m}[/versions/{v}][/ready|/infer|/stats],
// /v2/models/stats, /v2/repository/index, /v2/repository/models/{m}/load|unload (refused: model
// control mode NONE, Triton's default), /metrics (Prometheus text). HTTP is cpp-httplib
// (Debian's libcpp-httplib-dev): a thread per connection from a pool; a handler waits for its
// task's answer.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/combined.h"
#include "runtime/model_set.h"
#include "runtime/policy.h"
#include "runtime/step.h"
#include "serve/deployment.h"

namespace braid::serve {

// Triton's model control modes: NONE (its default) loads every model at start, and load/unload
// requests have no effect and get an error; EXPLICIT loads the models named at start, then loads
// and unloads on request (POST /v2/repository/models/{m}/load|unload).
enum class ModelControl : uint8_t { kNone, kExplicit };

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8000;     // Triton's HTTP port; 0: an ephemeral one
  int grpc_port = -1;  // the same protocol over gRPC (Triton's is 8001); 0: ephemeral; -1: none
  size_t max_request_bytes = 64u << 20;  // larger bodies get 413
  size_t queue_capacity = 64;            // per model; more waiting gets the overload status
  int overload_status = 503;             // or 429, for clients that expect it
  double exit_timeout_s = 30;            // shutdown: how long accepted requests may take
  // Handler threads. cpp-httplib serves one connection per thread for as long as it is kept
  // alive: connections beyond this many wait for a thread (seconds), so it should exceed the
  // connections clients keep open.
  int http_threads = 64;
  double default_timeout_us = 0;  // per request, unless it gives parameters.timeout
  // Per model, in the model set's order (a repository model's config.pbtxt; missing: defaults).
  std::vector<ServedModel> models;
};

class Server {
 public:
  // `models` (with their schedules), `backend` (real time), `policy` and `combiner` (may be
  // null for policies that do not combine) must outlive the server. kInvalidModel naming the
  // tensor for a model whose config does not fit it (check_model_config; max_batch_size > 0 with
  // an input or output not leading with 1).
  Server(const runtime::ModelSet& models, runtime::Backend& backend, runtime::Policy& policy,
         runtime::CombinedScheduler* combiner, ServerOptions options);
  // Serves what `settings` names (the command line's models and the repository's), deployed by
  // the server itself: in mode NONE all of them; in mode EXPLICIT those in `startup_models`
  // ("*": all; none at all is allowed), then what load and unload requests ask for: each deploys
  // the new set while the old one serves, swaps it in, and lets the old one finish what it
  // accepted. kNotFound naming an unknown startup model, and what deploy() throws.
  Server(DeploySettings settings, ModelControl mode, const std::vector<std::string>& startup_models,
         ServerOptions options);
  ~Server();  // shutdown() if running

  // Binds host:port (kInvalidArgument naming them when it cannot) and starts serving.
  void start();
  int port() const;
  int grpc_port() const;  // -1 without gRPC
  bool ready() const;
  // Graceful: readiness turns false, new requests get 503, accepted ones finish within
  // exit_timeout_s (what is left then is answered 503, cancelled), then the listener closes.
  void shutdown();
  // The models served now, by name.
  std::vector<std::string> models() const;
  // One line per model served: "model NAME (version V): U units, B blocks[, max_batch_size N]".
  std::vector<std::string> describe_models() const;

 private:
  void check_options() const;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace braid::serve
