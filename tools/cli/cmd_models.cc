#include <fmt/core.h>

#include "commands.h"
#include "models/zoo.h"
#include "summary.h"

namespace braid::cli {

void add_models_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("models", "List the built-in model zoo");
  static bool stats = false;
  static int64_t batch = 1;
  cmd->add_flag("--stats", stats,
                "Build every zoo model and print its units, edges, blocks, width, GFLOPs");
  cmd->add_option("--batch", batch, "Batch size for --stats")
      ->check(whole_number_in("the batch size", 1, kMaxBatch));
  cmd->callback([] {
    if (!stats) {
      for (const models::ZooEntry& e : models::zoo())
        fmt::print("{:<18} {}\n", e.name, e.description);
      return;
    }
    fmt::print("{:<18} {:>6} {:>6} {:>9} {:>6} {:>6} {:>8} {:>9}\n", "model", "units", "edges",
               "distinct", "blocks", "width", "GFLOPs", "params(M)");
    for (const models::ZooEntry& e : models::zoo()) {
      if (e.description.starts_with("alias")) continue;
      models::LoadOptions options;
      options.zoo.batch = batch;
      options.with_weights = false;
      nlohmann::json s = summarize(models::load_model(e.name, options));
      fmt::print("{:<18} {:>6} {:>6} {:>9} {:>6} {:>6} {:>8.2f} {:>9.2f}\n", std::string(e.name),
                 s["units"].get<size_t>(), s["edges"].get<size_t>(),
                 s["distinct_edges"].get<size_t>(), s["blocks"].get<size_t>(),
                 s["width"].get<size_t>(), s["flops"].get<double>() / 1e9,
                 s["params"].get<double>() / 1e6);
    }
  });
}

}  // namespace braid::cli
