#include <fmt/core.h>

#include <limits>
#include <sstream>

#include "base/error.h"
#include "base/parse.h"
#include "commands.h"

namespace braid::cli {

// CLI11 prefixes the flag ("--batch: "); the sentence is base/parse.h's, so a flag and a
// MODEL:RATE pattern say the same thing about the same number.
CLI::Validator whole_number_in(std::string what, int64_t min, int64_t max, std::string note) {
  return CLI::Validator(
      [what, min, max, note](std::string& text) -> std::string {
        try {
          parse_int(text, min, max, what);
          return {};
        } catch (const Error& e) {
          return e.what() + note;
        }
      },
      fmt::format("INT in [{} - {}]", min, max));
}

CLI::Validator number_in(std::string what, double min, double max, std::string note) {
  return CLI::Validator(
      [what, min, max, note](std::string& text) -> std::string {
        try {
          parse_double(text, min, max, what);
          return {};
        } catch (const Error& e) {
          return e.what() + note;
        }
      },
      fmt::format("NUMBER in [{} - {}]", format_number(min), format_number(max)));
}

CLI::Validator positive_int() {
  return whole_number_in("the value", 1, std::numeric_limits<int>::max());
}
CLI::Validator non_negative_int() {
  return whole_number_in("the value", 0, std::numeric_limits<int>::max());
}

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, sep);) out.push_back(item);
  return out;
}

std::vector<std::string> nonempty(std::vector<std::string> items) {
  std::erase(items, std::string());
  return items;
}

void add_model_flags(CLI::App& cmd, ModelFlags& flags) {
  cmd.add_option("MODEL", flags.spec, "Zoo name (braid models), a .onnx file or a .dag.json file")
      ->required();
  cmd.add_option("--name", flags.options.name,
                 "The model's name in reports and schedules (default: the zoo name or the file "
                 "name without extension)");
  auto& zoo = flags.options.zoo;
  cmd.add_option("--batch", zoo.batch, "Batch size")
      ->check(whole_number_in("the batch size", 1, kMaxBatch))
      ->each([&flags](const std::string&) { flags.options.batch_given = true; })
      ->capture_default_str();
  cmd.add_option("--image-size", zoo.image_size, "Input image size (0: the model's default)")
      ->check(whole_number_in("the image size", 0, kMaxImageSize, " (0: the model's default)"));
  cmd.add_option("--layers", zoo.layers, "bert: encoder layers")
      ->check(whole_number_in("bert's layer count", 1, kMaxLayers, " (BERT-large has 24)"))
      ->capture_default_str();
  cmd.add_option("--seq-len", zoo.seq_len, "bert: sequence length")
      ->check(whole_number_in("bert's sequence length", 1, kMaxSeqLen))
      ->capture_default_str();
  cmd.add_option(
         "--randwire-nodes", zoo.randwire_nodes,
         "randwire: nodes per stage from the seeded Watts-Strogatz generator (0: the IOS graphs)")
      ->check(whole_number_in("randwire's nodes per stage", 0, kMaxRandwireNodes));
  cmd.add_option("--randwire-k", zoo.randwire_k, "randwire: ring neighbours k")
      ->check(whole_number_in("randwire's ring neighbours k", 2, kMaxRandwireNodes,
                              " (even, below the nodes per stage)"))
      ->capture_default_str();
  cmd.add_option("--randwire-p", zoo.randwire_p, "randwire: rewiring probability p")
      ->check(number_in("randwire's rewiring probability p", 0, 1))
      ->capture_default_str();
  cmd.add_option("--randwire-seed", zoo.randwire_seed, "randwire: generator seed")
      ->capture_default_str();
  cmd.add_option("--weight-seed", flags.options.seed, "Seed of zoo models' random weights")
      ->capture_default_str();
  add_limit_flags(cmd, flags.options);
  add_shape_flags(cmd, flags.options.inputs);
}

void add_shape_flags(CLI::App& cmd, models::InputShapes& inputs) {
  // One value per flag (allow_extra_args false), so that `--shape x=1x3 model.onnx` leaves the
  // model to MODEL; the values are parsed as the flags are read, before any model loads.
  cmd.add_option_function<std::vector<std::string>>(
         "--shape",
         [&inputs](const std::vector<std::string>& texts) {
           for (const std::string& t : texts) models::add_shape_flag(inputs, t);
         },
         "ONNX: every dim of input NAME, trtexec's NAME=1x3x320x320 (fixes its dynamic dims; "
         "repeatable)")
      ->type_name("NAME=DIMS")
      ->allow_extra_args(false);
  cmd.add_option_function<std::vector<std::string>>(
         "--dim",
         [&inputs](const std::vector<std::string>& texts) {
           for (const std::string& t : texts) models::add_dim_flag(inputs, t);
         },
         "ONNX: every dynamic input dim named NAME (its dim_param), NAME=VALUE (repeatable)")
      ->type_name("NAME=VALUE")
      ->allow_extra_args(false);
}

void add_limit_flags(CLI::App& cmd, models::LoadOptions& options) {
  cmd.add_option("--max-tensor-elements", options.limits.max_tensor_elements,
                 "Refuse a model with a larger tensor (elements)")
      ->check(whole_number_in("the tensor element limit", 1, int64_t{1} << 40))
      ->capture_default_str();
  cmd.add_option("--max-activation-bytes", options.limits.max_activation_bytes,
                 "Refuse a model whose activations together need more bytes")
      ->check(whole_number_in("the activation byte limit", 1, int64_t{1} << 50))
      ->capture_default_str();
}

}  // namespace braid::cli
