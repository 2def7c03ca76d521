#include <fmt/core.h>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "models/onnx_import.h"

namespace braid::cli {

void add_ops_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("ops", "List the ONNX ops braid imports, with their opsets");
  static bool json = false;
  cmd->add_flag("--json", json, "Print JSON");
  cmd->callback([] {
    const std::vector<models::SupportedOnnxOp> ops = models::supported_onnx_ops();
    if (json) {
      nlohmann::json out = {{"min_opset", models::kMinOnnxOpset},
                            {"max_opset", models::kMaxOnnxOpset},
                            {"ops", nlohmann::json::array()}};
      for (const auto& op : ops)
        out["ops"].push_back({{"op_type", op.op_type},
                              {"min_opset", op.min_opset},
                              {"max_opset", op.max_opset},
                              {"runs", op.runs},
                              {"folds", op.folds}});
      fmt::print("{}\n", out.dump(2));
      return;
    }
    fmt::print("ONNX ops braid imports (default domain, model opsets {} to {}).\n",
               models::kMinOnnxOpset, models::kMaxOnnxOpset);
    fmt::print(
        "run: becomes an op of braid's graph; fold: evaluated at import when its inputs\n"
        "are constants (shape arithmetic, constant weights).\n\n");
    fmt::print("{:<20} {:>8}  {}\n", "op", "opsets", "how");
    for (const auto& op : ops) {
      const std::string how = op.runs && op.folds ? "run, fold" : op.runs ? "run" : "fold";
      fmt::print("{:<20} {:>8}  {}\n", op.op_type, fmt::format("{}-{}", op.min_opset, op.max_opset),
                 how);
    }
  });
}

}  // namespace braid::cli
