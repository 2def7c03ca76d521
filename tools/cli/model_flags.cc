#include "commands.h"

namespace braid::cli {

void add_model_flags(CLI::App& cmd, ModelFlags& flags) {
  cmd.add_option("MODEL", flags.spec, "Zoo name (braid models), a .onnx file or a .dag.json file")
      ->required();
  auto& zoo = flags.options.zoo;
  cmd.add_option("--batch", zoo.batch, "Batch size")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd.add_option("--image-size", zoo.image_size, "Input image size (0: the model's default)")
      ->check(CLI::NonNegativeNumber);
  cmd.add_option("--layers", zoo.layers, "bert: encoder layers")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd.add_option("--seq-len", zoo.seq_len, "bert: sequence length")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd.add_option(
         "--randwire-nodes", zoo.randwire_nodes,
         "randwire: nodes per stage from the seeded Watts-Strogatz generator (0: the IOS graphs)")
      ->check(CLI::NonNegativeNumber);
  cmd.add_option("--randwire-k", zoo.randwire_k, "randwire: ring neighbours k")
      ->capture_default_str();
  cmd.add_option("--randwire-p", zoo.randwire_p, "randwire: rewiring probability p")
      ->capture_default_str();
  cmd.add_option("--randwire-seed", zoo.randwire_seed, "randwire: generator seed")
      ->capture_default_str();
  cmd.add_option("--weight-seed", flags.options.seed, "Seed of zoo models' random weights")
      ->capture_default_str();
  cmd.add_option("--max-tensor-elements", flags.options.limits.max_tensor_elements,
                 "Refuse a model with a tensor of more elements")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd.add_option("--max-activation-bytes", flags.options.limits.max_activation_bytes,
                 "Refuse a model whose activations (summed, before buffer reuse) need more bytes")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
}

}  // namespace braid::cli
