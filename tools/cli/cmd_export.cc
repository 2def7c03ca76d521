#include <fmt/core.h>

#include "base/error.h"
#include "commands.h"
#include "models/onnx_export.h"

namespace braid::cli {

void add_export_command(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("export", "Write a model (zoo models with seeded random weights) to ONNX");
  static ModelFlags flags;
  static std::string output;
  add_model_flags(*cmd, flags);
  cmd->add_option("-o,--output", output, "Output .onnx file")->required();
  cmd->callback([] {
    models::LoadedModel m = models::load_model(flags.spec, flags.options);
    BRAID_CHECK(m.graph != nullptr, ErrorCode::kInvalidArgument, "'", flags.spec,
                "' is a weighted DAG: it has no operators to export");
    models::export_onnx_file(*m.graph, m.weights, output);
    fmt::print("wrote {} ({} ops, {} units)\n", output, m.graph->num_nodes(), m.units.num_units());
  });
}

}  // namespace braid::cli
