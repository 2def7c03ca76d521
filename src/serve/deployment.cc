#include "serve/deployment.h"

#include <algorithm>
#include <set>

#include "base/error.h"
#include "serve/repository.h"

namespace braid::serve {

std::vector<KnownModel> known_models(const DeploySettings& settings) {
  std::vector<KnownModel> known;
  for (const runtime::ScenarioModel& m : settings.models) {
    // The loader's name: the zoo name, or the file's stem.
    std::string name = m.name;
    if (name.empty()) name = std::filesystem::path(m.model).stem().string();
    known.push_back({name, m, {}});
  }
  if (!settings.repository.empty())
    for (const RepositoryModel& r : scan_repository(settings.repository))
      // A batching model runs sample by sample: loaded at batch 1.
      known.push_back({r.name,
                       {.model = r.path.string(),
                        .name = r.name,
                        .batch = r.config.max_batch_size > 0 ? 1 : 0,
                        .inputs = input_shapes(r.config)},  // its dims fix the model's dynamic ones
                       {.version = r.version, .config = r.config}});
  std::set<std::string> names;
  for (const KnownModel& k : known)
    BRAID_CHECK(names.insert(k.name).second, ErrorCode::kInvalidArgument, "two models named '",
                k.name, "' (--models and --model-repository)");
  return known;
}

std::vector<KnownModel> select_models(const std::vector<KnownModel>& known,
                                      const std::vector<std::string>& names) {
  for (const std::string& name : names)
    if (std::none_of(known.begin(), known.end(),
                     [&](const KnownModel& k) { return k.name == name; })) {
      std::string listed;
      for (const KnownModel& k : known) listed += (listed.empty() ? "" : ", ") + k.name;
      BRAID_THROW(ErrorCode::kNotFound, "no model '", name,
                  "' in the model repository (known: ", listed.empty() ? "none" : listed, ")");
    }
  std::vector<KnownModel> chosen;
  for (const KnownModel& k : known)
    if (std::find(names.begin(), names.end(), k.name) != names.end()) chosen.push_back(k);
  return chosen;
}

std::unique_ptr<Deployment> deploy(const DeploySettings& settings,
                                   const std::vector<KnownModel>& models) {
  BRAID_CHECK(!models.empty(), ErrorCode::kInvalidArgument, "no models to deploy");
  runtime::Scenario scenario = settings.scenario;
  scenario.models.clear();
  scenario.policies = {settings.policy};
  auto d = std::make_unique<Deployment>();
  for (const KnownModel& k : models) {
    scenario.models.push_back(k.model);
    d->served.push_back(k.served);
  }
  d->runner = std::make_unique<runtime::ScenarioRunner>(std::move(scenario));
  d->policy = d->runner->make_policy(settings.policy);
  return d;
}

}  // namespace braid::serve
