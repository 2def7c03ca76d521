// What `braid serve` serves, as library code: the models it knows (named on the command line,
// or found in a repository in Triton's layout with their config.pbtxt) and a deployment of some
// of them — loaded, scheduled and prepared on the device, with the runtime's policy — that a
// Server runs. Under EXPLICIT model control the server deploys again on every load and unload.
//
//   serve::DeploySettings settings{.models = {{.model = "squeezenet"}}, .repository = "models/",
//                                  .scenario = {.device = Device::cpu(), .scheduler =
//                                  "sequential"}};
//   std::vector<serve::KnownModel> known = serve::known_models(settings);  // rescans the
//   repository std::unique_ptr<serve::Deployment> d = serve::deploy(settings, known);  // seconds
//   d->runner->models(), d->runner->backend(), *d->policy, d->served[m].config
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/scenario.h"
#include "serve/model_config.h"

namespace braid::serve {

// One model's own settings.
struct ServedModel {
  std::string version = "1";  // its one version (a repository's directory name)
  // Its config.pbtxt (serve/model_config.h). max_batch_size > 0: the model was loaded at batch 1
  // (every input and output leads with 1, shown as -1); a request of b samples runs as b tasks
  // and is answered with their outputs stacked. max_queue_size and default_timeout_us of 0 take
  // the server's queue_capacity and default_timeout_us.
  ModelConfig config;
};

struct DeploySettings {
  std::vector<runtime::ScenarioModel> models;  // zoo names or .onnx files, each version "1"
  std::string repository;                      // DIR/NAME/VERSION/model.onnx; "" for none
  // Device, scheduler and cost, H, batch and image size of zoo models; its `models`, rates and
  // policies are not used.
  runtime::Scenario scenario;
  std::string policy = "top-heuristic";
};

struct KnownModel {
  std::string name;
  runtime::ScenarioModel model;  // how to load it
  ServedModel served;
};

// The command line's models, then the repository's (scanned now: new models, versions and
// configs are seen). kInvalidArgument for two models of one name; what scan_repository throws.
std::vector<KnownModel> known_models(const DeploySettings& settings);

// The known models named in `names`, in `known`'s order. kNotFound naming the first name that is
// not known, and listing the known ones.
std::vector<KnownModel> select_models(const std::vector<KnownModel>& known,
                                      const std::vector<std::string>& names);

struct Deployment {
  std::unique_ptr<runtime::ScenarioRunner> runner;  // models, backend, combiner
  std::unique_ptr<runtime::Policy> policy;
  std::vector<ServedModel> served;  // per model of runner->models()
};

// Loads, schedules and prepares `models` (not empty). Throws what loading and scheduling throw.
std::unique_ptr<Deployment> deploy(const DeploySettings& settings,
                                   const std::vector<KnownModel>& models);

}  // namespace braid::serve
