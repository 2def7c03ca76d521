#include "models/input_shapes.h"

#include <algorithm>
#include <optional>

#include "base/error.h"
#include "base/parse.h"

namespace braid::models {
namespace {

constexpr auto kBad = ErrorCode::kInvalidArgument;

// Splits "NAME=REST" at the last '='; both sides must be non-empty.
std::pair<std::string_view, std::string_view> split_flag(std::string_view text,
                                                         std::string_view flag,
                                                         std::string_view form) {
  const size_t eq = text.rfind('=');
  BRAID_CHECK(eq != std::string_view::npos && eq > 0 && eq + 1 < text.size(), kBad, flag, " '",
              text, "': expected ", form);
  return {text.substr(0, eq), text.substr(eq + 1)};
}

// A whole number from 1 to kMaxFlagDim (base/parse.h's sentences, prefixed by the flag).
int64_t parse_dim_value(std::string_view number, std::string_view flag, std::string_view text) {
  return parse_int(number, 1, kMaxFlagDim, "a dimension",
                   std::string(flag) + " '" + std::string(text) + "'");
}

}  // namespace

std::pair<std::string, std::vector<int64_t>> parse_shape_flag(std::string_view text) {
  constexpr std::string_view kFlag = "--shape";
  const auto [name, dims] = split_flag(text, kFlag, "NAME=DIMS, e.g. x=1x3x320x320");
  std::vector<int64_t> shape;
  for (size_t begin = 0;;) {
    const size_t x = dims.find('x', begin);
    shape.push_back(parse_dim_value(dims.substr(begin, x - begin), kFlag, text));
    if (x == std::string_view::npos) break;
    begin = x + 1;
  }
  return {std::string(name), std::move(shape)};
}

std::pair<std::string, int64_t> parse_dim_flag(std::string_view text) {
  constexpr std::string_view kFlag = "--dim";
  const auto [name, value] = split_flag(text, kFlag, "NAME=VALUE, e.g. width=320");
  return {std::string(name), parse_dim_value(value, kFlag, text)};
}

void add_shape_flag(InputShapes& shapes, std::string_view text) {
  auto [name, shape] = parse_shape_flag(text);
  auto [it, inserted] = shapes.shapes.emplace(name, shape);
  BRAID_CHECK(inserted || it->second == shape, kBad, "--shape '", text, "': input '", name,
              "' was given the shape ", shape_flag_text(it->second), " already");
}

void add_dim_flag(InputShapes& shapes, std::string_view text) {
  auto [name, value] = parse_dim_flag(text);
  auto [it, inserted] = shapes.dims.emplace(name, value);
  BRAID_CHECK(inserted || it->second == value, kBad, "--dim '", text, "': dim '", name,
              "' was given ", it->second, " already");
}

namespace {

bool is_static(const DeclaredDim& d) {
  return d.value >= 1;
}

// "[?,3,48,width]"
std::string declared_shape(const DeclaredInput& in) {
  std::string out = "[";
  for (size_t k = 0; k < in.dims.size(); ++k) {
    const DeclaredDim& d = in.dims[k];
    out += (k ? "," : "") + (is_static(d)      ? std::to_string(d.value)
                             : d.param.empty() ? std::string("?")
                                               : d.param);
  }
  return out + "]";
}

std::string listed(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "'" : ", '") + n + "'";
  return s;
}

// Where a shapes entry comes from, for messages: "--shape x=1x3x48x320", or
// "models/ocr/config.pbtxt: input 'x' dims 1x3x48x?".
std::string shape_source(const InputShapes& fixed, const std::string& name,
                         const std::vector<int64_t>& shape) {
  if (fixed.origin.empty()) return "--shape " + name + "=" + shape_flag_text(shape);
  return fixed.origin + ": input '" + name + "' dims " + shape_flag_text(shape);
}

// A named dim's value and the flag that gave it (for messages).
using NamedDims = std::map<std::string, std::pair<int64_t, std::string>>;
constexpr int64_t kAmbiguous = -1;  // --shape gave the name different values

// Checks every entry of `fixed` against the model and returns the values of named dims: --dim,
// then what --shape gives a named dim (one name is one size everywhere, so it fixes the name's
// other uses too).
NamedDims named_dims(const std::vector<DeclaredInput>& inputs, const InputShapes& fixed) {
  std::vector<std::string> input_names, dim_names;
  for (const DeclaredInput& in : inputs) {
    input_names.push_back(in.name);
    for (const DeclaredDim& d : in.dims)
      if (!is_static(d) && !d.param.empty() &&
          std::find(dim_names.begin(), dim_names.end(), d.param) == dim_names.end())
        dim_names.push_back(d.param);
  }
  for (const auto& [name, shape] : fixed.shapes)
    BRAID_CHECK(std::find(input_names.begin(), input_names.end(), name) != input_names.end(), kBad,
                shape_source(fixed, name, shape), ": the model has no input '", name,
                "' (its inputs: ", listed(input_names), ")");
  NamedDims named;
  for (const auto& [name, value] : fixed.dims) {
    BRAID_CHECK(value >= 1, kBad, "--dim ", name, "=", value, ": a dimension must be >= 1");
    BRAID_CHECK(std::find(dim_names.begin(), dim_names.end(), name) != dim_names.end(), kBad,
                "--dim ", name, "=", value, ": no dynamic dim of the model's inputs is named '",
                name, "' (",
                dim_names.empty() ? std::string("its inputs have no named dynamic dims")
                                  : "its named dims: " + listed(dim_names),
                ")");
    named[name] = {value, "--dim " + name + "=" + std::to_string(value)};
  }
  for (const DeclaredInput& in : inputs) {
    auto it = fixed.shapes.find(in.name);
    if (it == fixed.shapes.end()) continue;
    const std::string flag = shape_source(fixed, in.name, it->second);
    BRAID_CHECK(in.dims.size() == it->second.size(), kBad, flag, ": input '", in.name, "' has ",
                in.dims.size(), " dims ", declared_shape(in), ", not ", it->second.size());
    for (size_t k = 0; k < in.dims.size(); ++k) {
      const int64_t v = it->second[k];
      const DeclaredDim& d = in.dims[k];
      BRAID_CHECK(v >= 1 || v == -1, kBad, flag, ": dim ", k, " is ", v,
                  "; a dimension must be >= 1 (-1: left dynamic)");
      if (v == -1) continue;
      BRAID_CHECK(!is_static(d) || d.value == v, kBad, flag, ": input '", in.name, "' has dim ", k,
                  " fixed at ", d.value, " ", declared_shape(in));
      if (is_static(d) || d.param.empty()) continue;
      auto [n, inserted] = named.emplace(d.param, std::pair{v, flag});
      if (inserted || n->second.first == v) continue;
      BRAID_CHECK(!n->second.second.starts_with("--dim"), kBad, flag, ": dim ", k, " ('", d.param,
                  "') is ", v, " but ", n->second.second, " makes it ", n->second.first);
      // Two --shape values for one name: exporters reuse placeholders ('?') for unrelated
      // dims. Each --shape holds for its own input; the name fixes no other dim.
      n->second = {kAmbiguous, flag};
    }
  }
  return named;
}

}  // namespace

std::vector<std::vector<int64_t>> fix_input_shapes(const std::vector<DeclaredInput>& inputs,
                                                   const InputShapes& fixed, int64_t batch) {
  const NamedDims named = named_dims(inputs, fixed);
  std::vector<std::vector<int64_t>> shapes;
  for (const DeclaredInput& in : inputs) {
    auto given = fixed.shapes.find(in.name);
    // Each dim's value, or nullopt where nothing fixes it.
    std::vector<std::optional<int64_t>> dims(in.dims.size());
    for (size_t k = 0; k < in.dims.size(); ++k) {
      const DeclaredDim& d = in.dims[k];
      auto n = named.find(d.param);
      if (given != fixed.shapes.end() && given->second[k] >= 1)
        dims[k] = given->second[k];
      else if (is_static(d))
        dims[k] = d.value;
      else if (!d.param.empty() && n != named.end() && n->second.first != kAmbiguous)
        dims[k] = n->second.first;
      else if (k == 0)
        dims[k] = batch;
    }
    // "<width>" for what the user must choose, the dims fixed so far as they are.
    auto placeholder = [&](size_t j) {
      return "<" + (in.dims[j].param.empty() ? "dim" + std::to_string(j) : in.dims[j].param) + ">";
    };
    for (size_t k = 0; k < in.dims.size(); ++k) {
      if (dims[k]) continue;
      std::string example;
      for (size_t j = 0; j < in.dims.size(); ++j)
        example += (j ? "x" : "") + (dims[j] ? std::to_string(*dims[j]) : placeholder(j));
      const std::string& param = in.dims[k].param;
      BRAID_THROW(ErrorCode::kUnsupported, "graph input '", in.name, "': dim ", k, " (",
                  param.empty() ? std::string("unnamed") : "'" + param + "'",
                  ") is dynamic; fix it with --shape ", in.name, "=", example,
                  param.empty() ? std::string() : " or --dim " + param + "=" + placeholder(k),
                  fixed.origin.empty() ? std::string() : " (" + fixed.origin + ": give its dims)");
    }
    std::vector<int64_t>& shape = shapes.emplace_back();
    for (const std::optional<int64_t>& v : dims) shape.push_back(*v);
  }
  return shapes;
}

std::string shape_flag_text(const std::vector<int64_t>& shape) {
  std::string s;
  for (size_t k = 0; k < shape.size(); ++k)
    s += (k ? "x" : "") + (shape[k] < 0 ? std::string("?") : std::to_string(shape[k]));
  return s;
}

}  // namespace braid::models
