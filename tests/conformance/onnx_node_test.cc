// The ONNX project's backend node tests (onnx/backend/test/data/node, shipped by Debian's
// libonnx-testdata) run through braid: a conformance suite that braid's authors did not write.
// Each test directory holds a one-node model.onnx and test_data_set_*/{input,output}_N.pb
// TensorProtos computed by ONNX's numpy reference implementation.
//
// One GoogleTest case per directory. A case braid does not claim to handle (the importer
// throws kUnsupported for the op, an attribute or a dtype; an input or output other than
// float32, int64 or bool) is
// skipped with the reason, so the skip list names what is missing; a full run ends with the
// skip reasons counted. Everything braid accepts must match ONNX's outputs, within ONNX's own
// tolerances, on the CPU executor (sequential schedule) and on the reference executor, the
// oracle the other executors are tested against. Two adaptations (see `adapt`) let braid run
// cases whose shape inputs are graph inputs or that also ask for auxiliary outputs.
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

#include "base/error.h"
#include "exec/cpu/cpu_executor.h"
#include "exec/ref/ref_executor.h"
#include "ir/unit_graph.h"
#include "models/onnx_import.h"
#include "sched/lower.h"
#include "sched/registry.h"

namespace braid {
namespace {

namespace fs = std::filesystem;

fs::path node_test_dir() {
  const char* dir = std::getenv("BRAID_ONNX_NODE_TEST_DIR");
  return dir ? dir : "/usr/share/libonnx-testdata/data/node";
}
// The tolerances of ONNX's own backend test runner (onnx/backend/test/runner).
constexpr double kRtol = 1e-4;
constexpr double kAtol = 1e-5;

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
  int64_t elements = 1;
  for (int64_t d : out.dims) elements *= d;
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
  int64_t n = 1;
  for (int64_t d : out.dims) n *= d;
  if (t.has_raw_data()) {
    BRAID_CHECK(t.raw_data().size() == static_cast<size_t>(n) * sizeof(float),
                ErrorCode::kInvalidModel, path.string(), ": raw_data size does not fit the dims");
    out.data.resize(n);
    std::memcpy(out.data.data(), t.raw_data().data(), t.raw_data().size());
  } else {
    BRAID_CHECK(t.float_data_size() == n, ErrorCode::kInvalidModel, path.string(),
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

// Row-major coordinates of flat index `i`, for messages.
std::string coords(int64_t i, const std::vector<int64_t>& dims) {
  std::vector<int64_t> c(dims.size());
  for (size_t k = dims.size(); k-- > 0;) {
    c[k] = dims[k] ? i % dims[k] : 0;
    i = dims[k] ? i / dims[k] : 0;
  }
  return shape_string(c);
}

// Empty when `got` matches `want` within max |a-b| <= atol + rtol*|b| (NaN and Inf must match
// exactly); otherwise a description of the worst element.
std::string compare(std::span<const float> got, const FloatTensor& want) {
  if (got.size() != want.data.size())
    return "has " + std::to_string(got.size()) + " elements, expected " +
           std::to_string(want.data.size());
  int64_t worst = -1, mismatches = 0;
  double worst_excess = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double a = got[i], b = want.data[i];
    double excess;
    if (std::isnan(b) || std::isnan(a) || std::isinf(b) || std::isinf(a)) {
      const bool same = (std::isnan(a) && std::isnan(b)) || a == b;
      excess = same ? 0 : INFINITY;
    } else {
      excess = std::abs(a - b) - (kAtol + kRtol * std::abs(b));
    }
    if (excess <= 0) continue;
    ++mismatches;
    if (worst < 0 || excess > worst_excess) {
      worst = static_cast<int64_t>(i);
      worst_excess = excess;
    }
  }
  if (worst < 0) return {};
  std::ostringstream s;
  s.precision(9);
  s << mismatches << " of " << got.size() << " elements differ; worst at " << worst << " "
    << coords(worst, want.dims) << ": got " << got[worst] << ", expected " << want.data[worst]
    << " (|diff| " << std::abs(double(got[worst]) - double(want.data[worst])) << ")";
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

// Skip reasons, grouped, for the summary printed at the end of a full run.
std::map<std::string, int>& skip_reasons() {
  static std::map<std::string, int> reasons;
  return reasons;
}

// "node #0 (Abs): unsupported op type 'Abs'" -> "unsupported op type 'Abs'": the node's
// description differs between cases, the reason does not.
std::string note_skip(std::string reason) {
  if (reason.starts_with("node ")) {
    const size_t colon =
        reason.find("): ") != std::string::npos ? reason.find("): ") + 1 : reason.find("': ") + 1;
    if (colon > 0 && colon < reason.size()) reason = reason.substr(colon + 2);
  }
  ++skip_reasons()[reason];
  return reason;
}

class SummaryPrinter : public ::testing::Environment {
 public:
  void TearDown() override {
    const auto& unit = *::testing::UnitTest::GetInstance();
    if (skip_reasons().empty()) return;
    std::vector<std::pair<int, std::string>> sorted;
    for (const auto& [reason, n] : skip_reasons()) sorted.emplace_back(-n, reason);
    std::sort(sorted.begin(), sorted.end());
    std::printf("ONNX node tests: %d passed, %d skipped, %d failed. Skip reasons:\n",
                unit.successful_test_count(), unit.skipped_test_count(), unit.failed_test_count());
    for (const auto& [n, reason] : sorted) std::printf("  %4d  %s\n", -n, reason.c_str());
  }
};
const auto* const kSummary = ::testing::AddGlobalTestEnvironment(new SummaryPrinter);

class OnnxNodeTest : public ::testing::TestWithParam<std::string> {};

TEST_P(OnnxNodeTest, MatchesOnnxReferenceOutputs) {
  const std::string name = GetParam();
  const fs::path dir = node_test_dir() / name;
  std::vector<fs::path> data_sets;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.is_directory() && entry.path().filename().string().starts_with("test_data_set_"))
      data_sets.push_back(entry.path());
  std::sort(data_sets.begin(), data_sets.end());
  ASSERT_FALSE(data_sets.empty()) << dir << " has no test_data_set_*";
  const onnx::ModelProto original = load_model(dir / "model.onnx");

  for (const fs::path& set : data_sets) {
    SCOPED_TRACE(name + "/" + set.filename().string());
    ASSERT_EQ(count_tensor_files(set, "input"), runtime_input_names(original.graph()).size())
        << "input_N.pb files vs graph inputs";
    ASSERT_EQ(count_tensor_files(set, "output"),
              static_cast<size_t>(original.graph().output_size()))
        << "output_N.pb files vs graph outputs";
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
        GTEST_SKIP() << note_skip(reason);
      }
    }
    std::string notes;
    for (const std::string& n : c.notes) notes += (notes.empty() ? "" : "; ") + n;
    if (!notes.empty()) RecordProperty("adapted", notes);
    SCOPED_TRACE("adapted: " + (notes.empty() ? "no" : notes));
    const ir::Graph& g = *m.graph;

    // Read after the import: sequence and optional inputs (rejected there) are no TensorProtos.
    std::vector<FloatTensor> inputs, outputs;

    for (size_t i : c.fed) {
      inputs.push_back(read_tensor_file(tensor_file(set, "input", i)));
      if (!inputs.back().dtype.empty())
        GTEST_SKIP() << note_skip("dtype: input is " + inputs.back().dtype);
    }
    for (size_t i : c.compared) {
      outputs.push_back(read_tensor_file(tensor_file(set, "output", i)));
      if (!outputs.back().dtype.empty())
        GTEST_SKIP() << note_skip("dtype: output is " + outputs.back().dtype);
    }
    ASSERT_EQ(g.inputs().size(), c.fed.size()) << "braid's graph inputs vs fed inputs";
    ASSERT_EQ(g.outputs().size(), c.compared.size()) << "braid's graph outputs vs kept outputs";

    std::vector<std::vector<float>> fed;
    for (size_t i = 0; i < c.fed.size(); ++i) {
      const FloatTensor& t = inputs[i];
      const ir::Value& v = g.value(g.inputs()[i]);
      ASSERT_EQ(t.dims, v.type.shape)
          << "input '" << v.name << "': test data " << shape_string(t.dims) << ", braid "
          << ir::to_string(v.type);
      fed.push_back(t.data);
    }

    auto weights = std::make_shared<const ir::Weights>(std::move(m.weights));
    ir::UnitGraph units = ir::fuse(m.graph);
    sched::ExecutionPlan plan =
        sched::lower(units, sched::make_scheduler("sequential")->schedule(units));
    std::unique_ptr<exec::PreparedModel> model;
    try {
      model = exec::make_cpu_executor()->prepare({m.graph, weights, &units, &plan});
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kUnsupported) throw;
      GTEST_SKIP() << note_skip(std::string("CPU executor: ") + e.what());
    }
    auto request = model->new_request();
    for (size_t i = 0; i < fed.size(); ++i) model->set_input(*request, i, fed[i]);
    model->run(*request);
    const std::vector<std::vector<float>> reference = exec::ref::run_reference(g, *weights, fed);

    for (size_t i = 0; i < c.compared.size(); ++i) {
      const FloatTensor& want = outputs[i];
      const ir::TensorType& type = g.value(g.outputs()[i]).type;
      EXPECT_EQ(type.shape, want.dims)
          << "output '" << want.name << "': braid infers " << ir::to_string(type.shape)
          << ", ONNX gives " << shape_string(want.dims);
      // The CPU executor returns float32 outputs only; int64/bool ones are checked on the
      // reference executor.
      if (type.dtype == ir::DType::kFloat32)
        if (std::string d = compare(model->output(*request, i), want); !d.empty())
          ADD_FAILURE() << name << ": output '" << want.name << "' on the CPU executor: " << d;
      EXPECT_EQ(type.dtype == ir::DType::kFloat32, want.is_float)
          << "output '" << want.name << "': braid's dtype is " << ir::to_string(type.dtype);
      if (std::string d = compare(reference[i], want); !d.empty())
        ADD_FAILURE() << name << ": output '" << want.name << "' on the reference executor: " << d;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Node, OnnxNodeTest, ::testing::ValuesIn(discover_cases()),
                         [](const auto& info) { return info.param; });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(OnnxNodeTest);

// Stands in for the suite where the test data is not installed, so the absence is visible.
TEST(OnnxNodeTestData, Installed) {
  if (!fs::is_directory(node_test_dir()))
    GTEST_SKIP() << "install libonnx-testdata (make deps): " << node_test_dir() << " is missing";
  EXPECT_FALSE(discover_cases().empty()) << node_test_dir() << " holds no test_*/model.onnx";
}

}  // namespace
}  // namespace braid
