#include "tune/tensor_files.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <set>

#include "base/error.h"
#include "base/float16.h"
#include "base/npy.h"
#include "models/element_type.h"

namespace braid::tune {
namespace {

std::string input_list(const ir::Graph& graph) {
  std::string list;
  for (ValueId id : graph.inputs()) {
    const ir::Value& v = graph.value(id);
    list += (list.empty() ? "" : ", ") + v.name + " " + std::string(ir::to_string(v.type.dtype)) +
            " " + ir::to_string(v.type.shape);
  }
  return list;
}

template <typename T>
std::vector<T> as_values(const npy::Array& a) {
  std::vector<T> v(a.data.size() / sizeof(T));
  std::memcpy(v.data(), a.data.data(), a.data.size());
  return v;
}

template <typename T>
std::vector<float> as_floats(const npy::Array& a) {
  const std::vector<T> v = as_values<T>(a);
  return std::vector<float>(v.begin(), v.end());
}

}  // namespace

std::vector<std::vector<float>> read_inputs(const ir::Graph& graph,
                                            std::span<const std::string> specs,
                                            std::span<const models::ElementType> declared) {
  std::vector<std::vector<float>> inputs(graph.inputs().size());
  for (const std::string& spec : specs) {
    const size_t eq = spec.find('=');
    BRAID_CHECK(eq != std::string::npos && eq > 0 && eq + 1 < spec.size(),
                ErrorCode::kInvalidArgument, "--input '", spec,
                "': expected NAME=FILE.npy (the model's inputs: ", input_list(graph), ")");
    const std::string name = spec.substr(0, eq), path = spec.substr(eq + 1);
    size_t index = graph.inputs().size();
    for (size_t i = 0; i < graph.inputs().size(); ++i)
      if (graph.value(graph.inputs()[i]).name == name) index = i;
    BRAID_CHECK(index < graph.inputs().size(), ErrorCode::kInvalidArgument, "--input ", name,
                ": the model has no input '", name, "' (its inputs: ", input_list(graph), ")");
    BRAID_CHECK(inputs[index].empty(), ErrorCode::kInvalidArgument, "--input ", name,
                " is given twice");
    const ir::TensorType& type = graph.value(graph.inputs()[index]).type;
    const npy::Array a = npy::read_file(path);
    // numpy's name of the dtype the input takes: float32 data for float32 (or float16, widened
    // exactly: an FP16 model's own input type), int64 or int32 ids.
    const bool float_input = type.dtype == ir::DType::kFloat32;
    const bool dtype_ok = float_input
                              ? a.dtype == npy::DType::kFloat32 || a.dtype == npy::DType::kFloat16
                              : a.dtype == npy::DType::kInt64 || a.dtype == npy::DType::kInt32;
    auto given = [&] {
      std::string shape = "[";
      for (size_t i = 0; i < a.shape.size(); ++i)
        shape += (i ? "," : "") + std::to_string(a.shape[i]);
      return std::string(npy::to_string(a.dtype)) + " " + shape + "]";
    };
    BRAID_CHECK(dtype_ok && a.shape == type.shape, ErrorCode::kInvalidArgument, "--input ", name,
                ": expected ", ir::to_string(type.dtype), " ", ir::to_string(type.shape), ", ",
                path, " holds ", given(),
                dtype_ok      ? ""
                : float_input ? " (numpy: a.astype(np.float32))"
                              : "");
    if (float_input && a.dtype == npy::DType::kFloat16) {
      for (uint16_t h : as_values<uint16_t>(a)) inputs[index].push_back(float16_to_float(h));
    } else if (float_input) {
      inputs[index] = as_floats<float>(a);
    } else {
      const std::vector<float> ids =
          a.dtype == npy::DType::kInt64 ? as_floats<int64_t>(a) : as_floats<int32_t>(a);
      for (float id : ids)  // floats hold integers below 2^24 exactly
        BRAID_CHECK(std::abs(id) < float(ir::kMaxExactFloatInteger), ErrorCode::kInvalidArgument,
                    "--input ", name, ": a value of ", path,
                    " is 2^24 or beyond, which braid's executors cannot hold exactly");
      inputs[index] = ids;
    }
    // An FP16 or BF16 model's input holds values of its type: float32 data rounds to it.
    const models::ElementType want =
        index < declared.size() ? declared[index] : models::ElementType::kFloat32;
    if (float_input) models::round_floats(want, inputs[index]);
  }
  return inputs;
}

std::string output_file_name(std::string_view output_name) {
  std::string file(output_name);
  for (char& c : file)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') c = '_';
  if (file.empty() || file == "." || file == "..") file = "output" + file;
  return file + ".npy";
}

std::vector<std::string> write_outputs(const ir::Graph& graph,
                                       const std::vector<std::vector<float>>& outputs,
                                       const std::string& dir,
                                       std::span<const models::ElementType> declared) {
  BRAID_ASSERT(outputs.size() == graph.outputs().size());
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  BRAID_CHECK(!ec, ErrorCode::kInvalidArgument, "--output-dir ", dir, ": ", ec.message());
  std::vector<std::string> paths;
  std::set<std::string> taken;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const ir::Value& v = graph.value(graph.outputs()[i]);
    const std::string file = output_file_name(v.name);
    BRAID_CHECK(taken.insert(file).second, ErrorCode::kInvalidArgument, "outputs '", v.name,
                "' and another both map to ", file, " in ", dir);
    BRAID_ASSERT(static_cast<int64_t>(outputs[i].size()) == v.type.elements());
    paths.push_back((std::filesystem::path(dir) / file).string());
    const models::ElementType type =
        i < declared.size() ? declared[i] : models::ElementType::kFloat32;
    if (type == models::ElementType::kFloat16) {
      std::vector<std::byte> bytes(outputs[i].size() * 2);
      models::store_floats(type, outputs[i], bytes.data());
      npy::write_file(paths.back(), npy::DType::kFloat16, v.type.shape, bytes);
      continue;
    }
    if (type == models::ElementType::kBFloat16) {  // NumPy has no bfloat16: float32 values of it
      std::vector<float> rounded = outputs[i];
      models::round_floats(type, rounded);
      npy::write_file(paths.back(), npy::DType::kFloat32, v.type.shape,
                      std::as_bytes(std::span(rounded)));
      continue;
    }
    npy::write_file(paths.back(), npy::DType::kFloat32, v.type.shape,
                    std::as_bytes(std::span(outputs[i])));
  }
  return paths;
}

}  // namespace braid::tune
