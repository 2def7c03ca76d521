// Shapes chosen at load for ONNX inputs with dynamic dimensions (`images: [1, 3, height, width]`,
// `x: [?, 3, 48, ?]`, a batch written as -1 or 0): braid plans and runs static shapes, so every
// dynamic dim is fixed when the model is imported, as `trtexec --shapes` and ONNX Runtime's
// free-dimension overrides do. The CLI's --shape/--dim, Python's shapes=/dims= and a served
// model's config.pbtxt dims all end up here.
//
//   models::InputShapes s;
//   models::add_shape_flag(s, "x=1x3x48x320");   // every dim of input x (trtexec's spelling)
//   models::add_dim_flag(s, "width=320");        // every dim whose dim_param is "width"
//   models::load_model("ocr.onnx", {.inputs = s});
//
// How the importer fixes a graph input's dim k (onnx_import.h):
//  1. shapes[input][k], unless it is -1; a static dim must equal it;
//  2. dims[dim_param] when the dim is named, or the value --shape gave that name elsewhere;
//  3. the dim's static value (dim_value >= 1; -1 and 0 are dynamic, as exporters mean them);
//  4. for dim 0, OnnxImportOptions::batch;
//  5. otherwise an error naming the input, the dim and both flags.
// A shapes entry naming no graph input, or a dims entry naming no dim_param of the inputs, is an
// error listing what the model has.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace braid::models {

struct InputShapes {
  // Input name -> its whole shape. Values >= 1; -1 keeps the dim as the other rules fix it
  // (config.pbtxt's "still dynamic"; the flags' text never gives -1).
  std::map<std::string, std::vector<int64_t>> shapes;
  // dim_param name -> value >= 1 (ONNX Runtime's free dimension override by name).
  std::map<std::string, int64_t> dims;
  // Where `shapes` come from when not the flags (a config.pbtxt), named in messages.
  std::string origin;

  bool empty() const { return shapes.empty() && dims.empty(); }
};

// The most a flag's dim may be: the tensor limits refuse the tensor anyway, but this keeps the
// arithmetic on it from overflowing before they do.
inline constexpr int64_t kMaxFlagDim = int64_t{1} << 40;

// "NAME=1x3x320x320" -> {NAME, [1, 3, 320, 320]}. The name is what precedes the last '=' (input
// names may hold ':' or '/'); dims are whole numbers from 1 to kMaxFlagDim separated by 'x'.
// Throws Error(kInvalidArgument) with a sentence naming the text.
std::pair<std::string, std::vector<int64_t>> parse_shape_flag(std::string_view text);
// "NAME=VALUE" -> {NAME, VALUE}, VALUE from 1 to kMaxFlagDim. Throws like parse_shape_flag.
std::pair<std::string, int64_t> parse_dim_flag(std::string_view text);
// Parse and add; kInvalidArgument when the name was given already with another value.
void add_shape_flag(InputShapes& shapes, std::string_view text);
void add_dim_flag(InputShapes& shapes, std::string_view text);

// A graph input's dims as the model declares them.
struct DeclaredDim {
  int64_t value = 0;  // >= 1: static; -1, 0 (or unset): dynamic
  std::string param;  // its dim_param; "" when unnamed
};
struct DeclaredInput {
  std::string name;
  std::vector<DeclaredDim> dims;
};

// Each input's shape, in `inputs` order, fixed by the rules above (`batch` for rule 4). Throws
// Error: kInvalidArgument for an entry of `fixed` that does not fit the model (naming no input or
// dim_param, a rank or static dim that differs, a value < 1, one name given two values),
// kUnsupported for a dynamic dim left unfixed, naming the input, the dim and both flags:
//   "graph input 'x': dim 3 ('width') is dynamic; fix it with --shape x=1x3x48x<width> or
//    --dim width=<width>"
std::vector<std::vector<int64_t>> fix_input_shapes(const std::vector<DeclaredInput>& inputs,
                                                   const InputShapes& fixed, int64_t batch);

// "1x3x320x320" (-1 written as "?"): how a shape is spelled in messages and in the flags.
std::string shape_flag_text(const std::vector<int64_t>& shape);

}  // namespace braid::models
