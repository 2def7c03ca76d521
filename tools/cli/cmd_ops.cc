#include <fmt/core.h>

#include <nlohmann/json.hpp>

#include "base/device.h"
#include "commands.h"
#include "exec/cuda/cuda_executor.h"
#include "models/onnx_import.h"

namespace braid::cli {
namespace {

// Whether op runs on CUDA: "yes" when every braid op it may become has a CUDA kernel, "no" when
// none has, "partly" otherwise (an op braid lowers to several kinds, some without a CUDA
// kernel), "-" when it only folds at import.
std::string cuda_column(const models::SupportedOnnxOp& op) {
  if (!op.runs) return "-";
  size_t runs = 0;
  for (ir::OpKind k : op.kinds) runs += exec::cuda_runs(k) ? 1 : 0;
  return runs == op.kinds.size() ? "yes" : runs == 0 ? "no" : "partly";
}

}  // namespace

void add_ops_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("ops", "List the ONNX ops braid imports, with their opsets");
  static bool json = false;
  static std::string device_text = "cpu";
  cmd->add_flag("--json", json, "Print JSON");
  cmd->add_option("--device", device_text,
                  "Also say which ops run on this device: cuda:N (a column; on float tensors, "
                  "as CudaExecutor::prepare checks), cpu (every op that runs)")
      ->capture_default_str();
  cmd->callback([] {
    const bool cuda = parse_device(device_text).is_cuda();
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
      if (cuda)
        for (size_t i = 0; i < ops.size(); ++i) out["ops"][i]["cuda"] = cuda_column(ops[i]);
      fmt::print("{}\n", out.dump(2));
      return;
    }
    fmt::print("ONNX ops braid imports (default domain, model opsets {} to {}).\n",
               models::kMinOnnxOpset, models::kMaxOnnxOpset);
    fmt::print(
        "run: becomes an op of braid's graph; fold: evaluated at import when its inputs\n"
        "are constants (shape arithmetic, constant weights).\n\n");
    if (cuda)
      fmt::print(
          "cuda: yes, no, or partly (some of the kinds it lowers to); prepare refuses the rest "
          "by node.\n\n");
    fmt::print("{:<20} {:>8}  {:<10}{}\n", "op", "opsets", "how", cuda ? "  cuda" : "");
    for (const auto& op : ops) {
      const std::string how = op.runs && op.folds ? "run, fold" : op.runs ? "run" : "fold";
      fmt::print("{:<20} {:>8}  {:<10}{}\n", op.op_type,
                 fmt::format("{}-{}", op.min_opset, op.max_opset), how,
                 cuda ? "  " + cuda_column(op) : "");
    }
  });
}

}  // namespace braid::cli
