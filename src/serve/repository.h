// A model repository in Triton's layout: DIR/NAME/VERSION/model.onnx, VERSION a positive
// integer; the highest version of each model is served (Triton's default version policy,
// "latest 1"). A config.pbtxt beside the versions is not read yet.
//
//   for (const serve::RepositoryModel& m : serve::scan_repository("models/"))
//     ...m.name, m.version, m.path
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace braid::serve {

struct RepositoryModel {
  std::string name;
  std::string version;
  std::filesystem::path path;  // .../NAME/VERSION/model.onnx
};

// Sorted by name. kNotFound for a missing directory; kInvalidModel naming a model directory
// with no VERSION/model.onnx; entries that are not directories are ignored, as Triton does.
std::vector<RepositoryModel> scan_repository(const std::filesystem::path& dir);

}  // namespace braid::serve
