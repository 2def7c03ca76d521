// A model's inputs from .npy files and its outputs to .npy files, for `braid run --input
// NAME=x.npy --output-dir DIR` (base/npy.h has the format).
//
//   auto inputs = read_inputs(graph, {"input=x.npy"});   // per graph input; empty: not given
//   write_outputs(graph, outputs, "out/");               // out/<output name>.npy
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "models/element_type.h"

namespace braid::tune {

// One vector per graph input, in graph order, in the executors' representation (float; float16
// arrays and int64 inputs such as token ids converted, exactly); an empty vector for an input not
// named by any spec. Each spec is NAME=PATH. Throws braid::Error(kInvalidArgument) for a spec
// without '=', an unknown or repeated name (listing the model's inputs), or an array whose dtype or
// shape is not the input's (naming the input, the expected and the given); kNotFound for a missing
// file. `declared` (models::DeclaredTypes::inputs): where input i is float16 or bfloat16 in the
// model's file, its float32 data is rounded to that type (float16 data is taken as it is).
std::vector<std::vector<float>> read_inputs(const ir::Graph& graph,
                                            std::span<const std::string> specs,
                                            std::span<const models::ElementType> declared = {});

// The file an output is written to: its name with every character other than letters, digits,
// '_', '-' and '.' replaced by '_', plus ".npy" ("fire2/concat" -> "fire2_concat.npy").
std::string output_file_name(std::string_view output_name);

// Writes outputs[i] (graph output i, computed as float32) to dir/output_file_name(name), creating
// dir, in the model's type (`declared`, models::DeclaredTypes::outputs): float16 outputs as
// float16 arrays, bfloat16 ones rounded to bfloat16 and written as float32 (NumPy has no
// bfloat16), the others as float32. Returns the paths in output order. Throws
// braid::Error(kInvalidArgument) when two outputs map to one file name or a file cannot be written.
std::vector<std::string> write_outputs(const ir::Graph& graph,
                                       const std::vector<std::vector<float>>& outputs,
                                       const std::string& dir,
                                       std::span<const models::ElementType> declared = {});

}  // namespace braid::tune
