// braid: inter-operator scheduling for DNN inference. `braid --help` lists the commands.
#include <cstdio>
#include <exception>

#include "base/error.h"
#include "commands.h"

int main(int argc, char** argv) {
  CLI::App app{"braid: inter-operator scheduling for DNN inference"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Help for every command");
  braid::cli::add_models_command(app);
  braid::cli::add_ops_command(app);
  braid::cli::add_inspect_command(app);
  braid::cli::add_export_command(app);
  braid::cli::add_schedule_command(app);
  braid::cli::add_validate_command(app);
  braid::cli::add_run_command(app);
  braid::cli::add_profile_command(app);
  braid::cli::add_bench_command(app);
  braid::cli::add_calibrate_command(app);
  braid::cli::add_transfers_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11 prints help (exit 0) or the parse error; a bad flag is bad input: exit 2.
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  } catch (const braid::Error& e) {
    std::fprintf(stderr, "braid: error: %s\n", e.what());
    return braid::exit_code(e.code());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "braid: internal error: %s\n", e.what());
    return 1;
  }
  return 0;
}
