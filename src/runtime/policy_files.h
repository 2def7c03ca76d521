// The files of a trained policy (braid.policy/1, written by python/braid/*.py): the manifest's
// fields, read with errors that name the field and the file, and its small ONNX networks,
// evaluated by braid's reference executor (no PyTorch at run time).
#pragma once

#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ir/graph.h"
#include "ir/weights.h"

namespace braid::runtime {

// DIR/policy.json of `kind` ("maddpg", "gpg"). kNotFound without it (naming `train_hint`, how to
// make one); kInvalidArgument for malformed JSON, another format or another kind.
nlohmann::json read_policy_manifest(const std::filesystem::path& dir, std::string_view kind,
                                    std::string_view train_hint);

// A manifest field of the given JSON type (number_float: any number), or kInvalidArgument
// naming it and `where`.
const nlohmann::json& manifest_field(const nlohmann::json& j, const char* key,
                                     nlohmann::json::value_t type, const std::string& where);
size_t manifest_size(const nlohmann::json& j, const char* key, const std::string& where);  // >= 1
double manifest_positive(const nlohmann::json& j, const char* key, const std::string& where);
// A file name inside the policy's directory (no path), from field `key`.
std::filesystem::path manifest_file(const nlohmann::json& j, const char* key,
                                    const std::filesystem::path& dir, const std::string& where);

// A feed-forward network of one input [batch, in] and one output [batch, out], applied to any
// number of rows (in chunks of its batch, the last padded).
class PolicyNetwork {
 public:
  // Imports `path` with its dynamic batch dim set to `batch`. kInvalidArgument when it does not
  // have one input and one output of the expected widths.
  PolicyNetwork(const std::filesystem::path& path, size_t in, size_t out, size_t batch = 1);
  // rows × in values, row by row -> rows × out.
  std::vector<float> apply(std::span<const float> x) const;
  size_t in() const { return in_; }
  size_t out() const { return out_; }

 private:
  std::shared_ptr<const ir::Graph> graph_;
  ir::Weights weights_;
  size_t in_ = 0, out_ = 0, batch_ = 1;
};

}  // namespace braid::runtime
