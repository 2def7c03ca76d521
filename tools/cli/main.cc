// braid: inter-operator scheduling for DNN inference. `braid --help` lists the commands.
#include <fmt/core.h>
#include <spdlog/cfg/env.h>
#include <spdlog/sinks/stdout_color_sinks.h>  // stderr_color_mt too
#include <spdlog/spdlog.h>

#include <cstdio>
#include <exception>

#include "base/error.h"
#include "commands.h"
#include "git_commit.h"
#include "progress.h"

int main(int argc, char** argv) {
  // The library logs through spdlog, whose default logger writes to stdout: there a warning
  // would land inside --json output. On stderr, worded like the CLI's own warnings.
  auto log = spdlog::stderr_color_mt("braid");
  log->set_pattern("braid: %l: %v");
  spdlog::set_default_logger(std::move(log));
  spdlog::cfg::load_env_levels();  // SPDLOG_LEVEL=debug: the library's debug lines too
  CLI::App app{"braid: inter-operator scheduling for DNN inference"};
  app.require_subcommand(1);
  app.fallthrough();  // --quiet after the subcommand too
  app.set_help_all_flag("--help-all", "Help for every command");
  app.set_version_flag(
      "--version",
      fmt::format("braid {}{}", BRAID_VERSION,
                  std::string_view(BRAID_GIT_COMMIT).empty() ? "" : " (git " BRAID_GIT_COMMIT ")"),
      "Print braid's version and the git commit it was built from");
  app.add_flag("-q,--quiet", braid::cli::quiet,
               "No progress on stderr (shown only when stderr is a terminal)");
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
  braid::cli::add_top_command(app);
  braid::cli::add_serve_command(app);
  braid::cli::add_load_command(app);
  braid::cli::add_train_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11 prints help (exit 0) or the parse error; a bad flag is bad input: exit 2.
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  } catch (const braid::Error& e) {
    braid::cli::Progress::clear_line();
    std::fprintf(stderr, "braid: error: %s\n", e.what());
    return braid::exit_code(e.code());
  } catch (const std::exception& e) {
    braid::cli::Progress::clear_line();
    std::fprintf(stderr, "braid: internal error: %s\n", e.what());
    return 1;
  }
  return braid::cli::exit_status;
}
