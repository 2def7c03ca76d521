#include "runtime/policy_files.h"

#include <algorithm>
#include <cmath>
#include <fstream>

#include "base/error.h"
#include "exec/ref/ref_executor.h"
#include "models/onnx_import.h"

namespace braid::runtime {

using nlohmann::json;

json read_policy_manifest(const std::filesystem::path& dir, std::string_view kind,
                          std::string_view train_hint) {
  const std::filesystem::path path = dir / "policy.json";
  const std::string where = path.string();
  std::ifstream in(path);
  BRAID_CHECK(in.good(), ErrorCode::kNotFound, "policy ", dir.string(), ": no ", where, " (",
              train_hint, ")");
  json j;
  try {
    j = json::parse(in);
  } catch (const json::exception& e) {
    BRAID_THROW(ErrorCode::kInvalidArgument, where, ": malformed JSON: ", e.what());
  }
  BRAID_CHECK(j.is_object() && j.contains("format") && j.at("format") == "braid.policy/1",
              ErrorCode::kInvalidArgument, where, ": not a braid.policy/1 manifest");
  const std::string got = manifest_field(j, "kind", json::value_t::string, where);
  BRAID_CHECK(got == kind, ErrorCode::kInvalidArgument, where, ": a \"", got,
              "\" policy cannot run as a ", kind, " policy");
  return j;
}

const json& manifest_field(const json& j, const char* key, json::value_t type,
                           const std::string& where) {
  auto it = j.find(key);
  BRAID_CHECK(it != j.end(), ErrorCode::kInvalidArgument, where, ": no \"", key, "\"");
  const bool number = type == json::value_t::number_float;
  BRAID_CHECK(number ? it->is_number() : it->type() == type, ErrorCode::kInvalidArgument, where,
              ": \"", key, "\" has the wrong type (", it->type_name(), ")");
  return *it;
}

size_t manifest_size(const json& j, const char* key, const std::string& where) {
  const json& v = manifest_field(j, key, json::value_t::number_float, where);
  BRAID_CHECK(v.is_number_integer() && v.get<int64_t>() >= 1 && v.get<int64_t>() <= 1'000'000,
              ErrorCode::kInvalidArgument, where, ": \"", key,
              "\" must be an integer in [1, 1000000], got ", v.dump());
  return v.get<size_t>();
}

double manifest_positive(const json& j, const char* key, const std::string& where) {
  const double v = manifest_field(j, key, json::value_t::number_float, where).get<double>();
  BRAID_CHECK(std::isfinite(v) && v > 0, ErrorCode::kInvalidArgument, where, ": \"", key,
              "\" must be > 0, got ", v);
  return v;
}

std::filesystem::path manifest_file(const json& j, const char* key,
                                    const std::filesystem::path& dir, const std::string& where) {
  const std::string file = manifest_field(j, key, json::value_t::string, where);
  BRAID_CHECK(!file.empty() && std::filesystem::path(file).filename() == file,
              ErrorCode::kInvalidArgument, where, ": file '", file,
              "' must be a file name inside the policy's directory");
  return dir / file;
}

PolicyNetwork::PolicyNetwork(const std::filesystem::path& path, size_t in, size_t out, size_t batch)
    : in_(in), out_(out), batch_(batch) {
  models::OnnxImportOptions options;
  options.batch = static_cast<int64_t>(batch);
  models::ImportedModel model = models::import_onnx_file(path.string(), options);
  const ir::Graph& g = *model.graph;
  const std::string at = path.string();
  BRAID_CHECK(g.inputs().size() == 1 && g.outputs().size() == 1, ErrorCode::kInvalidArgument, at,
              ": a policy network has one input and one output, this has ", g.inputs().size(),
              " and ", g.outputs().size());
  const auto given_in = static_cast<size_t>(g.value(g.inputs()[0]).type.elements());
  const auto given_out = static_cast<size_t>(g.value(g.outputs()[0]).type.elements());
  BRAID_CHECK(given_in == batch * in, ErrorCode::kInvalidArgument, at, ": input of ", given_in,
              " values, expected ", batch, " x ", in);
  BRAID_CHECK(given_out == batch * out, ErrorCode::kInvalidArgument, at, ": output of ", given_out,
              " values, expected ", batch, " x ", out);
  graph_ = std::move(model.graph);
  weights_ = std::move(model.weights);
}

std::vector<float> PolicyNetwork::apply(std::span<const float> x) const {
  BRAID_CHECK(x.size() % in_ == 0, ErrorCode::kInvalidArgument, "policy network: ", x.size(),
              " values are not rows of ", in_);
  const size_t rows = x.size() / in_;
  std::vector<float> out(rows * out_);
  std::vector<std::vector<float>> chunk(1, std::vector<float>(batch_ * in_));
  for (size_t r = 0; r < rows; r += batch_) {
    const size_t n = std::min(batch_, rows - r);
    std::fill(chunk[0].begin(), chunk[0].end(), 0.0f);
    std::copy_n(x.begin() + static_cast<ptrdiff_t>(r * in_), n * in_, chunk[0].begin());
    const std::vector<std::vector<float>> y = exec::ref::run_reference(*graph_, weights_, chunk);
    std::copy_n(y[0].begin(), n * out_, out.begin() + static_cast<ptrdiff_t>(r * out_));
  }
  return out;
}

}  // namespace braid::runtime
