// The ONNX project's backend node tests (onnx/backend/test/data/node, shipped by Debian's
// libonnx-testdata) run through braid: a conformance suite that braid's authors did not write.
// Each test directory holds a one-node model.onnx and test_data_set_*/{input,output}_N.pb
// TensorProtos computed by ONNX's numpy reference implementation.
//
// One GoogleTest case per directory and backend (backends.h: reference, CPU, simulated GPU,
// CUDA in each precision). A case braid does not claim to handle (the importer throws
// kUnsupported for the op, an attribute or a dtype; an input or output other than float32,
// int64 or bool), or that a backend cannot run (absent, no kernel for an op, kUnsupported at
// prepare), is skipped with the reason, so the skip list names what is missing; a full run ends
// with passed, skipped by reason and failed per backend. Everything a backend runs must match
// ONNX's outputs within its precision's tolerance (tests/testing/tolerance.h: ONNX's own for
// FP32). Two adaptations (see `adapt`) let braid run cases whose shape inputs are graph inputs or
// that also ask for auxiliary outputs.
//
// BRAID_ONNX_NODE_TEST_DIR overrides the data directory (e.g. a newer ONNX's test data).
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <unordered_set>
#include <vector>

#include "backends.h"
#include "base/error.h"
#include "models/element_type.h"
#include "models/onnx_import.h"
#include "tolerance.h"

namespace braid {
namespace {

namespace fs = std::filesystem;
using conformance::Backend;
using conformance::kBackends;
using conformance::label;
using conformance::selected_backends;
using testing::Agreement;
using testing::Tolerance;

fs::path node_test_dir() {
  const char* dir = std::getenv("BRAID_ONNX_NODE_TEST_DIR");
  return dir ? dir : "/usr/share/libonnx-testdata/data/node";
}
// A tensor read from a .pb file as float values: float32 as is, int64 and bool converted (as
// braid's executors take and return them). `dtype` is set (and `data` empty) for other types.
struct FloatTensor {
  std::string name;
  std::vector<int64_t> dims;
  std::vector<float> data;
  std::string dtype;  // empty for float32, int64 and bool
  bool is_float = true;
};

FloatTensor read_tensor_file(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  BRAID_CHECK(f.good(), ErrorCode::kNotFound, path.string(), ": cannot open");
  onnx::TensorProto t;
  BRAID_CHECK(t.ParseFromIstream(&f), ErrorCode::kInvalidModel, path.string(),
              ": not a TensorProto");
  FloatTensor out;
  out.name = t.name();
  out.dims.assign(t.dims().begin(), t.dims().end());
  // A sequence or optional .pb parses as a TensorProto with nonsense dims ("option" as bytes).
  int64_t elements = 1;
  for (int64_t d : out.dims)
    BRAID_CHECK(d >= 0 && !__builtin_mul_overflow(elements, d, &elements), ErrorCode::kInvalidModel,
                path.string(), ": dims past int64 (not a tensor)");
  if (t.data_type() == onnx::TensorProto::INT64 || t.data_type() == onnx::TensorProto::BOOL) {
    out.is_float = false;
    const bool is_int64 = t.data_type() == onnx::TensorProto::INT64;
    if (t.has_raw_data()) {
      const size_t size = is_int64 ? sizeof(int64_t) : 1;
      BRAID_CHECK(t.raw_data().size() == static_cast<size_t>(elements) * size,
                  ErrorCode::kInvalidModel, path.string(), ": raw_data size does not fit the dims");
      for (int64_t i = 0; i < elements; ++i) {
        int64_t v = 0;
        std::memcpy(&v, t.raw_data().data() + i * size, size);
        out.data.push_back(is_int64 ? static_cast<float>(v) : (v & 0xff) != 0 ? 1.0f : 0.0f);
      }
    } else if (is_int64) {
      for (int64_t v : t.int64_data()) out.data.push_back(static_cast<float>(v));
    } else {
      for (int32_t v : t.int32_data()) out.data.push_back(v != 0 ? 1.0f : 0.0f);
    }
    BRAID_CHECK(static_cast<int64_t>(out.data.size()) == elements, ErrorCode::kInvalidModel,
                path.string(), ": data size does not fit the dims");
    return out;
  }
  if (t.data_type() != onnx::TensorProto::FLOAT) {
    out.dtype = onnx::TensorProto_DataType_IsValid(t.data_type())
                    ? onnx::TensorProto_DataType_Name(
                          static_cast<onnx::TensorProto_DataType>(t.data_type()))
                    : "#" + std::to_string(t.data_type());
    return out;
  }
  if (t.has_raw_data()) {
    BRAID_CHECK(t.raw_data().size() == static_cast<size_t>(elements) * sizeof(float),
                ErrorCode::kInvalidModel, path.string(), ": raw_data size does not fit the dims");
    out.data.resize(elements);
    if (elements > 0)  // an empty tensor's pointers may be null, which memcpy must not get
      std::memcpy(out.data.data(), t.raw_data().data(), t.raw_data().size());
  } else {
    BRAID_CHECK(t.float_data_size() == elements, ErrorCode::kInvalidModel, path.string(),
                ": float_data size does not fit the dims");
    out.data.assign(t.float_data().begin(), t.float_data().end());
  }
  return out;
}

std::optional<FloatTensor> try_read_tensor_file(const fs::path& path) {
  try {
    return read_tensor_file(path);
  } catch (const Error&) {
    return std::nullopt;
  }
}

// input_N.pb or output_N.pb.
fs::path tensor_file(const fs::path& dir, const std::string& prefix, size_t i) {
  return dir / (prefix + "_" + std::to_string(i) + ".pb");
}

// How many of input_0.pb, input_1.pb, ... (or output_N.pb) exist, up to the first missing one.
size_t count_tensor_files(const fs::path& dir, const std::string& prefix) {
  size_t n = 0;
  while (fs::exists(tensor_file(dir, prefix, n))) ++n;
  return n;
}

std::vector<std::string> discover_cases() {
  std::vector<std::string> cases;
  std::error_code ec;
  if (!fs::is_directory(node_test_dir(), ec)) return cases;
  for (const auto& entry : fs::directory_iterator(node_test_dir(), ec))
    if (entry.is_directory() && fs::exists(entry.path() / "model.onnx"))
      cases.push_back(entry.path().filename().string());
  std::sort(cases.begin(), cases.end());
  return cases;
}

std::string shape_string(const std::vector<int64_t>& dims) {
  std::ostringstream s;
  s << "[";
  for (size_t i = 0; i < dims.size(); ++i) s << (i ? "," : "") << dims[i];
  s << "]";
  return s.str();
}

onnx::ModelProto load_model(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  onnx::ModelProto model;
  BRAID_CHECK(f.good() && model.ParseFromIstream(&f), ErrorCode::kInvalidModel, path.string(),
              ": not a ModelProto");
  return model;
}

// The graph inputs that input_N.pb feed, in order: those that are not initializers.
std::vector<std::string> runtime_input_names(const onnx::GraphProto& g) {
  std::unordered_set<std::string> initializers;
  for (const auto& t : g.initializer()) initializers.insert(t.name());
  std::vector<std::string> names;
  for (const auto& in : g.input())
    if (!initializers.count(in.name())) names.push_back(in.name());
  return names;
}

// A node test adapted to what braid runs, for one data set.
struct AdaptedCase {
  onnx::ModelProto model;
  std::vector<size_t> fed;         // braid's graph inputs, as input_N.pb indices
  std::vector<size_t> compared;    // the kept graph outputs, as output_N.pb indices
  std::vector<std::string> notes;  // what was adapted, for the log
};

// Two adaptations, neither of which changes what the node computes:
//  1. Graph inputs that braid takes only as constants become initializers holding this data
//     set's values: float scalars (Pad's constant_value, Dropout's ratio) and Resize's and
//     Upsample's roi and scales always, int64 and
//     bool inputs (Reshape shapes, Split sizes, Pad pads, Slice bounds, Dropout's
//     training_mode) when `freeze_typed` (the test tries without first: Gather's indices,
//     Where's condition and Equal's operands are runtime inputs to braid). braid plans shapes
//     and memory at import time, so it has no runtime shape inputs.
//  2. Auxiliary outputs braid does not compute (LayerNormalization's Mean and InvStdDev,
//     Dropout's mask, MaxPool's Indices, BatchNormalization's running statistics) are dropped
//     from the graph outputs when nothing else reads them; the other outputs are still compared.
AdaptedCase adapt(const onnx::ModelProto& original, const fs::path& data_set, bool freeze_typed) {
  AdaptedCase c{original, {}, {}, {}};
  onnx::GraphProto* g = c.model.mutable_graph();
  const std::vector<std::string> fed_names = runtime_input_names(original.graph());
  std::unordered_set<std::string> frozen, resize_operands;
  for (const auto& n : g->node())
    if (n.op_type() == "Resize" || n.op_type() == "Upsample")
      for (int i = 1; i < n.input_size(); ++i) resize_operands.insert(n.input(i));
  for (size_t k = 0; k < fed_names.size(); ++k) {
    const onnx::ValueInfoProto* in = nullptr;  // found: fed_names come from g->input()
    for (const auto& i : g->input())
      if (i.name() == fed_names[k]) in = &i;
    // Sequence, optional and shapeless inputs stay: the importer rejects them.
    if (!in->type().has_tensor_type() || !in->type().tensor_type().has_shape()) continue;
    const auto& tt = in->type().tensor_type();
    const bool flag_or_sizes = freeze_typed && (tt.elem_type() == onnx::TensorProto::INT64 ||
                                                tt.elem_type() == onnx::TensorProto::BOOL);
    const bool float_scalar =
        tt.elem_type() == onnx::TensorProto::FLOAT &&
        (tt.shape().dim_size() == 0 || resize_operands.count(fed_names[k]) != 0);
    // Other types (uint8 data, ...) stay inputs, which the importer names as unsupported.
    if (!flag_or_sizes && !float_scalar) continue;
    const fs::path file = tensor_file(data_set, "input", k);
    std::ifstream f(file, std::ios::binary);
    onnx::TensorProto value;
    BRAID_CHECK(f.good() && value.ParseFromIstream(&f), ErrorCode::kInvalidModel, file.string(),
                ": not a TensorProto");
    value.set_name(fed_names[k]);
    *g->add_initializer() = std::move(value);
    frozen.insert(fed_names[k]);
    c.notes.push_back("input '" + fed_names[k] + "' frozen into an initializer");
  }
  for (int i = g->input_size() - 1; i >= 0; --i)
    if (frozen.count(g->input(i).name())) g->mutable_input()->DeleteSubrange(i, 1);

  static const std::unordered_set<std::string> kAuxiliary = {"LayerNormalization", "Dropout",
                                                             "MaxPool", "BatchNormalization"};
  std::unordered_set<std::string> consumed, auxiliary;
  for (const auto& n : g->node())
    for (const auto& in : n.input()) consumed.insert(in);
  for (const auto& n : g->node())
    if (kAuxiliary.count(n.op_type()))
      for (int k = 1; k < n.output_size(); ++k)
        if (!consumed.count(n.output(k))) auxiliary.insert(n.output(k));
  for (int i = 0; i < original.graph().output_size(); ++i) {
    const std::string& name = original.graph().output(i).name();
    if (auxiliary.count(name)) {
      c.notes.push_back("auxiliary output '" + name + "' not compared");
    } else {
      c.compared.push_back(static_cast<size_t>(i));
    }
  }
  for (int i = g->output_size() - 1; i >= 0; --i)
    if (auxiliary.count(g->output(i).name())) g->mutable_output()->DeleteSubrange(i, 1);

  for (size_t k = 0; k < fed_names.size(); ++k)
    if (!frozen.count(fed_names[k])) c.fed.push_back(k);
  return c;
}

// One data set of a case, imported and read: what every backend runs and compares.
struct DataSet {
  std::string name;   // "test_data_set_0"
  std::string notes;  // the adaptations made, "" for none
  std::shared_ptr<const ir::Graph> graph;
  std::shared_ptr<const ir::Weights> weights;
  std::vector<std::vector<float>> fed;  // braid's graph inputs, in order
  std::vector<FloatTensor> outputs;     // the compared outputs, in braid's graph output order
};

// A case's data sets up to the first that braid skips (`skip`) or that is broken (`failure`);
// both empty when every data set loaded.
struct LoadedCase {
  std::vector<DataSet> sets;
  std::string skip;
  std::string failure;
};

LoadedCase load_uncached(const std::string& name) {
  LoadedCase loaded;
  const fs::path dir = node_test_dir() / name;
  std::vector<fs::path> data_sets;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.is_directory() && entry.path().filename().string().starts_with("test_data_set_"))
      data_sets.push_back(entry.path());
  std::sort(data_sets.begin(), data_sets.end());
  if (data_sets.empty()) {
    loaded.failure = dir.string() + " has no test_data_set_*";
    return loaded;
  }
  const onnx::ModelProto original = load_model(dir / "model.onnx");
  auto broken = [&](const fs::path& set, const std::string& what) {
    loaded.failure = set.filename().string() + ": " + what;
    return loaded;
  };

  for (const fs::path& set : data_sets) {
    if (count_tensor_files(set, "input") != runtime_input_names(original.graph()).size())
      return broken(set, "input_N.pb files do not match the graph inputs");
    if (count_tensor_files(set, "output") != static_cast<size_t>(original.graph().output_size()))
      return broken(set, "output_N.pb files do not match the graph outputs");
    AdaptedCase c;
    models::ImportedModel m;
    std::string first_reason;  // why the import without frozen inputs failed
    for (bool freeze_typed : {false, true}) {
      c = adapt(original, set, freeze_typed);
      // The node tests have static shapes; the first input's dim 0 is the batch the importer
      // gives to any symbolic dim 0.
      models::OnnxImportOptions options;
      if (!c.fed.empty()) {
        if (auto first = try_read_tensor_file(tensor_file(set, "input", c.fed[0]));
            first && !first->dims.empty() && first->dims[0] > 0)
          options.batch = first->dims[0];
      }
      try {
        m = models::import_onnx_bytes(c.model.SerializeAsString(), name, options);
        break;
      } catch (const Error& e) {
        if (e.code() != ErrorCode::kUnsupported) throw;
        std::string reason = e.what();
        if (reason.starts_with(name + ": ")) reason = reason.substr(name.size() + 2);
        if (!freeze_typed) {  // try again with int64/bool inputs as constants
          first_reason = reason;
          continue;
        }
        if (reason != first_reason) reason = first_reason + " (as constants: " + reason + ")";
        loaded.skip = reason;
        return loaded;
      }
    }
    DataSet d;
    d.name = set.filename().string();
    for (const std::string& n : c.notes) d.notes += (d.notes.empty() ? "" : "; ") + n;
    const ir::Graph& g = *m.graph;

    // Read after the import: sequence and optional inputs (rejected there) are no TensorProtos.
    for (size_t i : c.fed) {
      FloatTensor t = read_tensor_file(tensor_file(set, "input", i));
      if (!t.dtype.empty()) {
        loaded.skip = "dtype: input is " + t.dtype;
        return loaded;
      }
      const ir::Value& v = g.value(g.inputs()[d.fed.size()]);
      if (t.dims != v.type.shape)
        return broken(set, "input '" + v.name + "': test data " + shape_string(t.dims) +
                               ", braid " + ir::to_string(v.type));
      d.fed.push_back(std::move(t.data));
    }
    for (size_t i : c.compared) {
      d.outputs.push_back(read_tensor_file(tensor_file(set, "output", i)));
      if (!d.outputs.back().dtype.empty()) {
        loaded.skip = "dtype: output is " + d.outputs.back().dtype;
        return loaded;
      }
    }
    if (g.inputs().size() != c.fed.size())
      return broken(set, "braid's graph inputs do not match the fed inputs");
    if (g.outputs().size() != c.compared.size())
      return broken(set, "braid's graph outputs do not match the kept outputs");
    for (size_t i = 0; i < d.outputs.size(); ++i) {
      const FloatTensor& want = d.outputs[i];
      const ir::TensorType& type = g.value(g.outputs()[i]).type;
      if (type.shape != want.dims)
        return broken(set, "output '" + want.name + "': braid infers " + ir::to_string(type.shape) +
                               ", ONNX gives " + shape_string(want.dims));
      if ((type.dtype == ir::DType::kFloat32) != want.is_float)
        return broken(set, "output '" + want.name + "': braid's dtype is " +
                               std::string(ir::to_string(type.dtype)));
    }
    d.graph = m.graph;
    d.weights = std::make_shared<const ir::Weights>(std::move(m.weights));
    loaded.sets.push_back(std::move(d));
  }
  return loaded;
}

// The suite runs case-major (a case on every backend, then the next case), so one slot keeps
// the import to once per case.
const LoadedCase& load_case(const std::string& name) {
  static std::string cached_name;
  static LoadedCase cached;
  if (name != cached_name) {
    cached_name.clear();  // an exception below leaves the slot empty
    cached = load_uncached(name);
    cached_name = name;
  }
  return cached;
}

// What one backend did over the run, for the summary printed at the end.
struct Tally {
  int passed = 0, failed = 0, skipped = 0;
  std::map<std::string, int> skip_reasons;
};
std::vector<Tally>& tallies() {  // indexed as kBackends
  static std::vector<Tally> t(std::size(kBackends));
  return t;
}
size_t row(const Backend& b) {
  for (size_t i = 0; i < std::size(kBackends); ++i)
    if (kBackends[i].id == b.id) return i;
  return 0;  // unreachable: every Backend comes from kBackends
}

class SummaryPrinter : public ::testing::Environment {
 public:
  void TearDown() override {
    std::vector<size_t> ran;
    for (size_t i = 0; i < tallies().size(); ++i) {
      const Tally& t = tallies()[i];
      if (t.passed + t.failed + t.skipped > 0) ran.push_back(i);
    }
    if (ran.empty()) return;
    std::printf("ONNX node tests per backend (%zu cases):\n  %-16s %7s %7s %7s\n",
                discover_cases().size(), "backend", "passed", "skipped", "failed");
    for (size_t i : ran) {
      const Tally& t = tallies()[i];
      std::printf("  %-16s %7d %7d %7d\n", label(kBackends[i]).c_str(), t.passed, t.skipped,
                  t.failed);
    }
    // A reason with the same count on every backend (braid does not import the case) once;
    // the others under their backend.
    auto on_every_backend = [&](const std::string& reason, int n) {
      for (size_t i : ran) {
        const auto& r = tallies()[i].skip_reasons;
        if (auto it = r.find(reason); it == r.end() || it->second != n) return false;
      }
      return true;
    };
    auto print_sorted = [](const std::vector<std::pair<int, std::string>>& reasons) {
      std::vector<std::pair<int, std::string>> sorted = reasons;
      std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
        return a.first > b.first || (a.first == b.first && a.second < b.second);
      });
      for (const auto& [n, reason] : sorted) std::printf("  %5d  %s\n", n, reason.c_str());
    };
    std::vector<std::pair<int, std::string>> common;
    for (const auto& [reason, n] : tallies()[ran[0]].skip_reasons)
      if (on_every_backend(reason, n)) common.emplace_back(n, reason);
    if (!common.empty()) {
      std::printf("Skipped on %s, by reason:\n",
                  ran.size() == 1 ? label(kBackends[ran[0]]).c_str() : "every backend");
      print_sorted(common);
    }
    // Rows with the same reasons (the CUDA precisions without a GPU) listed once.
    std::vector<std::pair<std::string, std::vector<std::pair<int, std::string>>>> groups;
    for (size_t i : ran) {
      std::vector<std::pair<int, std::string>> own;
      for (const auto& [reason, n] : tallies()[i].skip_reasons)
        if (!on_every_backend(reason, n)) own.emplace_back(n, reason);
      if (own.empty()) continue;
      auto same = std::find_if(groups.begin(), groups.end(),
                               [&](const auto& g) { return g.second == own; });
      if (same == groups.end()) {
        groups.emplace_back(label(kBackends[i]), std::move(own));
      } else {
        same->first += ", " + label(kBackends[i]);
      }
    }
    for (const auto& [labels, own] : groups) {
      std::printf("Skipped on %s only, by reason:\n", labels.c_str());
      print_sorted(own);
    }
    // CTest marks a row whose every case skipped (no GPU) as skipped (CMakeLists.txt).
    for (size_t i : ran) {
      const Tally& t = tallies()[i];
      if (t.passed == 0 && t.failed == 0)
        std::printf("Every case skipped on %s\n", label(kBackends[i]).c_str());
    }
  }
};
const auto* const kSummary = ::testing::AddGlobalTestEnvironment(new SummaryPrinter);

class OnnxNodeTest : public ::testing::TestWithParam<std::tuple<std::string, Backend>> {
 protected:
  // Keeps the reason for the summary; returns it for GTEST_SKIP.
  std::string skip(std::string reason) {
    // "node #0 (Abs): unsupported op type 'Abs'" -> "unsupported op type 'Abs'": the node's
    // description differs between cases, the reason does not.
    if (reason.starts_with("node ")) {
      const size_t colon =
          reason.find("): ") != std::string::npos ? reason.find("): ") + 1 : reason.find("': ") + 1;
      if (colon > 0 && colon < reason.size()) reason = reason.substr(colon + 2);
    }
    skip_reason_ = reason;
    return reason;
  }
  void TearDown() override {
    Tally& t = tallies()[row(std::get<1>(GetParam()))];
    if (IsSkipped()) {
      ++t.skipped;
      ++t.skip_reasons[skip_reason_.empty() ? "(no reason given)" : skip_reason_];
    } else if (HasFailure()) {
      ++t.failed;
    } else {
      ++t.passed;
    }
  }

 private:
  std::string skip_reason_;
};

// A 16-bit row computes on its inputs rounded to 16 bits. Where that rounding alone moves a
// case's outputs past the precision's tolerance (softmax over 10000..10003, which round to one
// FP16 and one BF16 value), no executor could pass: the reference executor on the rounded inputs
// says so, and the row is skipped with the reason, as out_of_range skips an overflow. Weights
// are not rounded here (the node tests' parameters are few and small).
std::string rounding_moves_outputs(const DataSet& set, const Backend& b, const Tolerance& t) {
  if (b.precision != Precision::kFp16 && b.precision != Precision::kBf16) return {};
  const auto type = b.precision == Precision::kFp16 ? models::ElementType::kFloat16
                                                    : models::ElementType::kBFloat16;
  std::vector<std::vector<float>> rounded = set.fed;
  for (size_t i = 0; i < rounded.size(); ++i)
    if (set.graph->value(set.graph->inputs()[i]).type.dtype == ir::DType::kFloat32)
      models::round_floats(type, rounded[i]);
  if (rounded == set.fed) return {};
  std::vector<std::optional<std::vector<float>>> exact;
  try {
    exact = conformance::run(kBackends[0], set.graph, set.weights, rounded);  // the reference
  } catch (const Error&) {
    return {};
  }
  for (size_t i = 0; i < exact.size() && i < set.outputs.size(); ++i) {
    const FloatTensor& want = set.outputs[i];
    if (!exact[i] || !want.is_float) continue;
    if (Agreement a = testing::compare(*exact[i], want.data, t, want.dims); !a.ok)
      return label(b) + ": its inputs rounded to " + std::string(models::to_string(type)) +
             " move the exact output '" + want.name + "' past the tolerance (" + a.failure + ")";
  }
  return {};
}

// "cuda: op 'conv_1' (Conv) ..." -> "cuda: op (Conv) ...": an executor's refusal names the
// node, which differs between cases; the reason does not.
std::string without_node_names(std::string reason, const ir::Graph& g) {
  for (size_t i = 0; i < g.num_nodes(); ++i) {
    const std::string quoted = "'" + g.node(NodeId(i)).name + "' ";
    for (size_t at; (at = reason.find(quoted)) != std::string::npos;)
      reason.erase(at, quoted.size());
  }
  return reason;
}

TEST_P(OnnxNodeTest, MatchesOnnxReferenceOutputs) {
  const auto& [name, backend] = GetParam();
  const Tolerance& tolerance = testing::tolerance(backend.precision);
  const LoadedCase& loaded = load_case(name);
  for (const DataSet& set : loaded.sets) {
    SCOPED_TRACE(name + "/" + set.name + " on " + label(backend));
    if (!set.notes.empty()) RecordProperty("adapted", set.notes);
    SCOPED_TRACE("adapted: " + (set.notes.empty() ? "no" : set.notes));
    for (const auto& data : set.fed)  // the executors take FP32 and convert on the device
      if (std::string why = testing::out_of_range(data, backend.precision); !why.empty())
        GTEST_SKIP() << skip(why);
    for (const FloatTensor& want : set.outputs)
      if (std::string why = testing::out_of_range(want.data, backend.precision); !why.empty())
        GTEST_SKIP() << skip(why);
    if (std::string why = rounding_moves_outputs(set, backend, tolerance); !why.empty())
      GTEST_SKIP() << skip(why);
    if (std::string why = conformance::unavailable_reason(backend, *set.graph); !why.empty())
      GTEST_SKIP() << skip(why);

    std::vector<std::optional<std::vector<float>>> got;
    try {
      got = conformance::run(backend, set.graph, set.weights, set.fed);
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kUnsupported) throw;
      GTEST_SKIP() << skip(label(backend) + ": " + without_node_names(e.what(), *set.graph));
    }
    ASSERT_EQ(got.size(), set.outputs.size());
    size_t compared = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      if (!got[i]) continue;  // an int64/bool output of an executor: compared on the reference
      ++compared;
      const FloatTensor& want = set.outputs[i];
      // An int64 or bool output is exact in every precision (CUDA stores it so): FP32's check.
      const Tolerance& t = want.is_float ? tolerance : testing::tolerance(Precision::kFp32);
      if (Agreement a = testing::compare(*got[i], want.data, t, want.dims); !a.ok)
        ADD_FAILURE() << name << ": output '" << want.name << "' on " << label(backend) << ": "
                      << a.failure;
    }
    if (compared == 0)
      GTEST_SKIP() << skip(label(backend) +
                           ": returns float32 outputs only; int64/bool ones are compared on ref "
                           "and cuda");
  }
  if (!loaded.failure.empty()) FAIL() << name << "/" << loaded.failure;
  if (!loaded.skip.empty()) GTEST_SKIP() << skip(loaded.skip);
}

std::string test_name(const ::testing::TestParamInfo<OnnxNodeTest::ParamType>& info) {
  return std::string(std::get<1>(info.param).id) + "_" + std::get<0>(info.param);
}

// Case-major: a case's backends run one after another.
INSTANTIATE_TEST_SUITE_P(Node, OnnxNodeTest,
                         ::testing::Combine(::testing::ValuesIn(discover_cases()),
                                            ::testing::ValuesIn(selected_backends())),
                         test_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(OnnxNodeTest);

// Stands in for the suite where the test data is not installed, so the absence is visible.
TEST(OnnxNodeTestData, Installed) {
  if (!fs::is_directory(node_test_dir()))
    GTEST_SKIP() << "install libonnx-testdata (make deps): " << node_test_dir() << " is missing";
  EXPECT_FALSE(discover_cases().empty()) << node_test_dir() << " holds no test_*/model.onnx";
}

// A misspelt BRAID_CONFORMANCE_BACKENDS would otherwise run nothing and pass.
TEST(OnnxNodeTestData, SelectedBackendsExist) {
  std::vector<std::string> unknown;
  EXPECT_FALSE(selected_backends(&unknown).empty()) << "BRAID_CONFORMANCE_BACKENDS selects none";
  for (const std::string& id : unknown) {
    std::string known;
    for (const Backend& b : kBackends) known += (known.empty() ? "" : ", ") + std::string(b.id);
    ADD_FAILURE() << "BRAID_CONFORMANCE_BACKENDS names '" << id << "', no backend (" << known
                  << ")";
  }
}

}  // namespace
}  // namespace braid
