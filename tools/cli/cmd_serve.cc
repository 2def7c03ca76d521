// braid serve: the Open Inference Protocol v2 over HTTP in front of TOP's runtime (serve/server.h).
// Loads and schedules the models, prints where it listens, and serves until SIGINT or SIGTERM,
// then drains (readiness false, new requests 503, accepted ones finish within
// --exit-timeout-secs) and exits 0.
#include <fmt/core.h>
#include <pthread.h>
#include <signal.h>

#include <iostream>
#include <sstream>

#include "base/device.h"
#include "base/error.h"
#include "commands.h"
#include "cost_flags.h"
#include "runtime/scenario.h"
#include "serve/deployment.h"
#include "serve/server.h"
#include "tune/measure.h"

namespace braid::cli {
void add_serve_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "serve", "Serve models over HTTP (KServe v2 / Triton protocol) on TOP's runtime");
  static std::string models_flag, repository, device = "cpu", policy = "top-heuristic",
                                              scheduler = "ios";
  static std::string host = "127.0.0.1", cost, control_mode = "none", intra = "dp";
  static std::vector<std::string> load_models;
  static models::InputShapes inputs;  // --shape/--dim of the --models models
  static int port = 8000, grpc_port = 8001, overload_status = 503, http_threads = 64,
             max_sub_blocks = 4;
  static size_t queue_capacity = 64, max_request_bytes = 64u << 20;
  static double exit_timeout = 30;
  static int64_t image_size = 224, batch = 1;
  cmd->add_option(
      "--models", models_flag,
      "Models to serve, comma-separated: zoo names or .onnx files, each NAME[:ir|stages]");
  cmd->add_option("--model-repository", repository,
                  "Serve DIR/NAME/VERSION/model.onnx (Triton's layout; the highest VERSION)");
  cmd->add_option("--device", device, "cpu or cuda:N")->capture_default_str();
  cmd->add_option("--policy", policy,
                  "The runtime's policy (static, static-serial, sync, top-heuristic, learned:DIR)")
      ->capture_default_str();
  cmd->add_option("--scheduler", scheduler, "Each model's own schedule")->capture_default_str();
  cmd->add_option("--cost", cost, "Its cost model (default: roofline on cpu, cuda:N on a GPU)");
  cmd->add_option("--intra", intra,
                  "Inside combined blocks: dp (IOS's DP) or gpg:DIR (a GPG `braid train gpg` "
                  "wrote)")
      ->capture_default_str();
  cmd->add_option("-H", max_sub_blocks, "Most sub-blocks in a combined block")
      ->check(whole_number_in("H", 1, runtime::kMaxSubBlocksLimit))
      ->capture_default_str();
  cmd->add_option("--host", host, "Address to listen on")->capture_default_str();
  cmd->add_option("--port", port, "Port (0: an ephemeral one, printed)")
      ->check(whole_number_in("the port", 0, kMaxPort, " (0: an ephemeral one)"))
      ->capture_default_str();
  cmd->add_option("--grpc-port", grpc_port,
                  "Port of the same protocol over gRPC (0: an ephemeral one, printed; -1: no gRPC)")
      ->check(whole_number_in("the gRPC port", -1, kMaxPort, " (0: an ephemeral one; -1: no gRPC)"))
      ->capture_default_str();
  cmd->add_option("--queue-capacity", queue_capacity, "Requests waiting per model before overload")
      ->check(whole_number_in("the queue capacity", 1, int64_t(runtime::kMaxQueueCapacity)))
      ->capture_default_str();
  cmd->add_option("--overload-status", overload_status, "Status of an overload answer: 503 or 429")
      ->capture_default_str();
  cmd->add_option("--max-request-bytes", max_request_bytes, "Larger request bodies get 413")
      ->check(whole_number_in("the request size limit in bytes", 1, kMaxRequestBytes))
      ->capture_default_str();
  cmd->add_option("--exit-timeout-secs", exit_timeout,
                  "On SIGTERM/SIGINT, how long accepted requests may take to finish")
      ->check(number_in("the exit timeout in seconds", 0, kMaxTimeoutS))
      ->capture_default_str();
  cmd->add_option(
         "--http-threads", http_threads,
         "HTTP handler threads: one per open connection (keep >= the clients' connections)")
      ->check(whole_number_in("the number of HTTP threads", 1, kMaxThreads))
      ->capture_default_str();
  cmd->add_option("--image-size", image_size, "Input size of zoo CNNs")
      ->check(whole_number_in("the image size", 1, kMaxImageSize))
      ->capture_default_str();
  cmd->add_option("--batch", batch, "Batch of zoo models")
      ->check(whole_number_in("the batch size", 1, kMaxBatch))
      ->capture_default_str();
  cmd->add_option("--model-control-mode", control_mode,
                  "none: every model loaded at start; explicit: --load-model at start, then "
                  "load/unload requests (Triton's modes)")
      ->check(CLI::IsMember({"none", "explicit"}))
      ->capture_default_str();
  add_shape_flags(*cmd, inputs);  // a repository model's come from its config.pbtxt dims
  static PrecisionFlags precision;
  add_precision_flags(*cmd, precision);
  cmd->add_option("--load-model", load_models,
                  "With --model-control-mode explicit: a model to load at start (repeatable; * "
                  "for all)");
  cmd->callback([] {
    serve::DeploySettings settings{.repository = repository,
                                   .scenario = {.device = parse_device(device),
                                                .max_sub_blocks = max_sub_blocks,
                                                .batch = batch,
                                                .image_size = image_size,
                                                .scheduler = scheduler,
                                                .cost = tune::parse_cost_option(cost),
                                                .intra = intra,
                                                .precision = precision_of(precision)},
                                   .policy = policy};
    for (const std::string& spec : nonempty(split(models_flag, ','))) {
      const std::vector<std::string> parts = split(spec, ':');
      runtime::ScenarioModel m{.model = parts[0], .inputs = inputs};
      if (parts.size() > 1) {
        BRAID_CHECK(parts.size() == 2 && (parts[1] == "ir" || parts[1] == "stages"),
                    ErrorCode::kInvalidArgument, "--models '", spec,
                    "': expected NAME or NAME:ir|stages");
        m.blocks =
            parts[1] == "stages" ? runtime::BlockGrouping::kStages : runtime::BlockGrouping::kIr;
      }
      settings.models.push_back(m);
    }
    const serve::ModelControl mode =
        control_mode == "explicit" ? serve::ModelControl::kExplicit : serve::ModelControl::kNone;
    BRAID_CHECK(
        mode == serve::ModelControl::kExplicit || !settings.models.empty() || !repository.empty(),
        ErrorCode::kInvalidArgument, "no models: give --models or --model-repository");
    for (const serve::KnownModel& k : serve::known_models(settings))
      for (const std::string& ignored : k.served.config.ignored)
        std::cerr << fmt::format("braid serve: warning: {} (not applied)\n", ignored);

    // SIGINT/SIGTERM are taken by sigwait below: blocked before any thread starts, so every
    // thread inherits the mask and none is interrupted.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);

    std::cerr << fmt::format("braid serve: loading on {} ...\n", device);
    serve::Server server(settings, mode, load_models,
                         {.host = host,
                          .port = port,
                          .grpc_port = grpc_port,
                          .max_request_bytes = max_request_bytes,
                          .queue_capacity = queue_capacity,
                          .overload_status = overload_status,
                          .exit_timeout_s = exit_timeout,
                          .http_threads = http_threads});
    server.start();
    for (const std::string& line : server.describe_models()) std::cout << line << "\n";
    std::cout << fmt::format("policy {} on {} ({}), model control mode {}", policy, device,
                             to_string(settings.scenario.precision), control_mode);
    if (server.grpc_port() > 0)
      std::cout << fmt::format("; gRPC on {}:{}", host, server.grpc_port());
    std::cout << fmt::format("; listening on http://{}:{}\n", host, server.port()) << std::flush;
    int received = 0;
    sigwait(&signals, &received);
    std::cout << fmt::format("braid serve: {} received: draining (up to {} s)\n",
                             received == SIGINT ? "SIGINT" : "SIGTERM", exit_timeout)
              << std::flush;
    server.shutdown();
    std::cout << "braid serve: stopped\n";
  });
}

}  // namespace braid::cli
