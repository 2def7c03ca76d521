// One deployment being served (serve/server.h): its models, their settings and metadata, the
// inbox and the runtime whose loop runs them on its own thread, and the gauges it reports.
#pragma once

#include <atomic>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "runtime/inbox.h"
#include "runtime/runtime.h"
#include "serve/deployment.h"
#include "serve/metrics.h"
#include "serve/protocol.h"
#include "serve/server.h"

namespace braid::serve {

// The protocol's metadata of a served model. A batching model's tensors show their leading 1 as
// -1 (a request carries 1..max_batch_size). kInvalidModel when the model's config does not fit
// it (check_model_config; max_batch_size > 0 with a tensor not leading with 1).
ModelMetadata metadata_of(const runtime::RuntimeModel& model, const ServedModel& served);

// The models being served and the runtime that runs them: made at start and, under EXPLICIT
// model control, made anew and swapped in on every load or unload. A handler holds the one it
// started with until its request is answered, so a swap never loses a request: the old one
// finishes what it accepted, then goes.
struct Generation {
  Generation(std::unique_ptr<Deployment> owned_deployment, const runtime::ModelSet& models,
             runtime::Backend& backend, runtime::Policy& policy,
             runtime::CombinedScheduler* combiner, std::vector<ServedModel> served_models,
             const ServerOptions& options)
      : owned(std::move(owned_deployment)),
        models(models),
        served(fill_versions(models.size(), std::move(served_models))),
        inbox(models.size(),
              {.queue_capacity = options.queue_capacity, .capacities = capacities_of(served)}),
        runtime(models, backend, policy, combiner,
                {.on_sample =
                     [this](const runtime::LiveStats& s) {
                       std::lock_guard lock(live_mutex);
                       live = s;
                     }}),
        pending(std::make_unique<std::atomic<size_t>[]>(models.size())) {
    for (size_t m = 0; m < models.size(); ++m) {
      metadata.push_back(metadata_of(models.model(m), served[m]));
      pending[m] = 0;
    }
  }
  ~Generation() { retire(0); }

  // Of a deployment it owns.
  static std::shared_ptr<Generation> of(std::unique_ptr<Deployment> d,
                                        const ServerOptions& options) {
    runtime::ScenarioRunner& r = *d->runner;
    runtime::Policy& policy = *d->policy;
    std::vector<ServedModel> served = d->served;
    return std::make_shared<Generation>(std::move(d), r.models(), r.backend(), policy,
                                        &r.combiner(), std::move(served), options);
  }

  static std::vector<ServedModel> fill_versions(size_t n, std::vector<ServedModel> given) {
    given.resize(n);
    for (ServedModel& m : given)
      if (m.version.empty()) m.version = "1";
    return given;
  }
  static std::vector<size_t> capacities_of(const std::vector<ServedModel>& served) {
    std::vector<size_t> capacities;
    for (const ServedModel& m : served) capacities.push_back(m.config.max_queue_size);
    return capacities;
  }

  std::optional<size_t> find(const std::string& name) const {
    for (size_t m = 0; m < models.size(); ++m)
      if (models.model(m).name == name) return m;
    return std::nullopt;
  }
  std::vector<Metrics::Listed> listed() const {
    std::vector<Metrics::Listed> out;
    for (size_t m = 0; m < models.size(); ++m)
      out.push_back({models.model(m).name, served[m].version});
    return out;
  }

  void start() {
    loop = std::thread([this] {
      runtime.serve(inbox);
      loop_done.set_value();
    });
  }
  // No new tasks; the accepted ones finish within `timeout_s` (what is left then is answered
  // cancelled); the loop ends.
  void retire(double timeout_s) {
    if (!loop.joinable()) return;
    inbox.close();
    if (done.wait_for(std::chrono::duration<double>(timeout_s)) != std::future_status::ready)
      inbox.stop();
    loop.join();
  }

  std::unique_ptr<Deployment> owned;  // null when the caller owns what runs
  const runtime::ModelSet& models;
  std::vector<ServedModel> served;  // per model
  std::vector<ModelMetadata> metadata;
  runtime::Inbox inbox;
  runtime::Runtime runtime;
  std::unique_ptr<std::atomic<size_t>[]> pending;  // per model: accepted, not yet answered
  std::mutex live_mutex;
  runtime::LiveStats live;
  std::thread loop;
  std::promise<void> loop_done;
  std::shared_future<void> done = loop_done.get_future().share();
};

}  // namespace braid::serve
