// A model repository in Triton's layout: DIR/NAME/VERSION/model.onnx, VERSION a positive
// integer; the highest version of each model is served (Triton's default version policy,
// "latest 1"). A config.pbtxt beside the versions gives the model's own settings
// (serve/model_config.h).
//
//   for (const serve::RepositoryModel& m : serve::scan_repository("models/"))
//     ...m.name, m.version, m.path
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "serve/model_config.h"

namespace braid::serve {

struct RepositoryModel {
  std::string name;
  std::string version;
  std::filesystem::path path;  // .../NAME/VERSION/model.onnx
  ModelConfig config;          // from NAME/config.pbtxt; defaults where there is none
};

// Sorted by name. kNotFound for a missing directory; kInvalidModel naming a model directory
// with no VERSION/model.onnx; entries that are not directories are ignored, as Triton does.
// Throws what read_model_config throws for a config.pbtxt braid cannot take.
std::vector<RepositoryModel> scan_repository(const std::filesystem::path& dir);

}  // namespace braid::serve
