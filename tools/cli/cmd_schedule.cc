#include "commands.h"

namespace braid::cli {
void add_schedule_command(CLI::App& app) { app.add_subcommand("schedule", "Schedule a model (coming)"); }
void add_validate_command(CLI::App& app) { app.add_subcommand("validate", "Validate a schedule (coming)"); }
}  // namespace braid::cli
