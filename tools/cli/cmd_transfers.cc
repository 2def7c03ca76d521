// braid transfers: the cost of moving a tensor between two MPI ranks on this machine, for
// --transfers (cost/transfer_cost.h). Run as `mpirun -np 2 build/braid transfers -o t.json`.
#include <fmt/core.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "commands.h"
#include "measure.h"
#ifdef BRAID_WITH_MPI
#include "exec/mpi/mpi_executor.h"
#endif

namespace braid::cli {

void add_transfers_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "transfers", "Measure tensor transfers between two MPI ranks (mpirun -np 2 braid transfers)");
  static std::string output;
  cmd->add_option("-o,--output", output, "Write braid.transfers/1 JSON here (for --transfers)");
  cmd->callback([] {
#ifdef BRAID_WITH_MPI
    BRAID_CHECK(launched_by_mpi(), ErrorCode::kInvalidArgument,
                "run under mpirun with two ranks: mpirun -np 2 braid transfers -o t.json");
    const exec::LinkMeasurement m = exec::measure_link();
    if (process_rank() != 0) return;
    nlohmann::json samples = nlohmann::json::array();
    for (auto [bytes, us] : m.samples) samples.push_back({{"bytes", bytes}, {"one_way_us", us}});
    const nlohmann::json j = {{"format", "braid.transfers/1"},
                              {"latency_us", m.latency_us},
                              {"gbps", m.gbps},
                              {"between", "MPI ranks 0 and 1 on this machine"},
                              {"samples", samples}};
    fmt::print("transfers between ranks 0 and 1: {:.2f} us + bytes / {:.2f} GB/s\n", m.latency_us,
               m.gbps);
    if (!output.empty()) {
      std::ofstream out(output);
      BRAID_CHECK(out.good(), ErrorCode::kInvalidArgument, "cannot write '", output, "'");
      out << j.dump(2) << "\n";
    }
#else
    BRAID_THROW(ErrorCode::kNotFound, "braid was built without MPI");
#endif
  });
}

}  // namespace braid::cli
