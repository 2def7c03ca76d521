// The braid CLI: one file per subcommand. Each `add_*` registers its subcommand on the app and
// sets the callback that runs it; errors travel as braid::Error to main(), which maps them to
// exit codes (2 bad input, 1 internal).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "models/loader.h"
#include "sched/registry.h"

namespace braid::cli {

// --batch, --image-size, --layers, --seq-len, --weight-seed: shared by every command that loads a
// model.
struct ModelFlags {
  std::string spec;
  models::LoadOptions options;
};
void add_model_flags(CLI::App& cmd, ModelFlags& flags);

// --ios-search auto|dp|best-first and --ios-tolerance: shared by schedule and bench.
void add_ios_search_flags(CLI::App& cmd, sched::ScheduleOptions& options);
// --devices M and --window w (HIOS).
void add_multi_device_flags(CLI::App& cmd, sched::ScheduleOptions& options);

void add_models_command(CLI::App& app);
void add_ops_command(CLI::App& app);
void add_inspect_command(CLI::App& app);
void add_export_command(CLI::App& app);
void add_schedule_command(CLI::App& app);
void add_validate_command(CLI::App& app);
void add_run_command(CLI::App& app);
void add_profile_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_calibrate_command(CLI::App& app);
void add_transfers_command(CLI::App& app);

}  // namespace braid::cli
