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

namespace braid::tune {

// One vector per graph input, in graph order, in the executors' representation (float; float16
// arrays and int64 inputs such as token ids converted, exactly); an empty vector for an input not
// named by any spec. Each spec is NAME=PATH. Throws braid::Error(kInvalidArgument) for a spec
// without '=', an unknown or repeated name (listing the model's inputs), or an array whose dtype or
// shape is not the input's (naming the input, the expected and the given); kNotFound for a missing
// file.
std::vector<std::vector<float>> read_inputs(const ir::Graph& graph,
                                            std::span<const std::string> specs);

// The file an output is written to: its name with every character other than letters, digits,
// '_', '-' and '.' replaced by '_', plus ".npy" ("fire2/concat" -> "fire2_concat.npy").
std::string output_file_name(std::string_view output_name);

// Writes outputs[i] (graph output i, float32) to dir/output_file_name(name), creating dir;
// returns the paths in output order. Throws braid::Error(kInvalidArgument) when two outputs
// map to one file name or a file cannot be written.
std::vector<std::string> write_outputs(const ir::Graph& graph,
                                       const std::vector<std::vector<float>>& outputs,
                                       const std::string& dir);

}  // namespace braid::tune
