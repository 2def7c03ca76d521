#include "serve/repository.h"

#include <algorithm>
#include <charconv>

#include "base/error.h"

namespace braid::serve {

std::vector<RepositoryModel> scan_repository(const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  BRAID_CHECK(fs::is_directory(dir, ec), ErrorCode::kNotFound, "model repository '", dir.string(),
              "' is not a directory");
  std::vector<RepositoryModel> models;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir)) {
    if (!entry.is_directory()) continue;
    uint64_t best = 0;
    fs::path best_path;
    for (const fs::directory_entry& v : fs::directory_iterator(entry.path())) {
      const std::string name = v.path().filename().string();
      uint64_t version = 0;
      const auto [end, err] = std::from_chars(name.data(), name.data() + name.size(), version);
      if (!v.is_directory() || err != std::errc() || end != name.data() + name.size() ||
          version == 0)
        continue;
      const fs::path model = v.path() / "model.onnx";
      if (version > best && fs::is_regular_file(model, ec)) {
        best = version;
        best_path = model;
      }
    }
    BRAID_CHECK(best > 0, ErrorCode::kInvalidModel, "model repository '", dir.string(),
                "': model '", entry.path().filename().string(),
                "' has no VERSION/model.onnx (VERSION a positive integer)");
    RepositoryModel model{entry.path().filename().string(), std::to_string(best), best_path};
    const fs::path config = entry.path() / "config.pbtxt";
    if (fs::exists(config, ec)) model.config = read_model_config(config, model.name);
    models.push_back(std::move(model));
  }
  std::sort(models.begin(), models.end(),
            [](const RepositoryModel& a, const RepositoryModel& b) { return a.name < b.name; });
  return models;
}

}  // namespace braid::serve
