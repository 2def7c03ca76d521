#include "commands.h"

namespace braid::cli {

void add_model_flags(CLI::App& cmd, ModelFlags& flags) {
  cmd.add_option("MODEL", flags.spec, "Zoo name (braid models), a .onnx file or a .dag.json file")
      ->required();
  auto& zoo = flags.options.zoo;
  cmd.add_option("--batch", zoo.batch, "Batch size")->check(CLI::PositiveNumber)->capture_default_str();
  cmd.add_option("--image-size", zoo.image_size, "Input image size (0: the model's default)")
      ->check(CLI::NonNegativeNumber);
  cmd.add_option("--layers", zoo.layers, "bert: encoder layers")->check(CLI::PositiveNumber)->capture_default_str();
  cmd.add_option("--seq-len", zoo.seq_len, "bert: sequence length")->check(CLI::PositiveNumber)->capture_default_str();
  cmd.add_option("--seed", flags.options.seed, "Seed of zoo models' random weights")->capture_default_str();
}

}  // namespace braid::cli
