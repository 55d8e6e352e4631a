// ddp-launch: one binary, subcommands. The entry point sits above every layer: it registers
// launcher/'s commands and the job layer's.
#include <CLI/CLI.hpp>

#include <iostream>
#include <map>

#include "app/cmd_completion.hpp"
#include "common/error.hpp"
#include "common/log.hpp"
#include "jobs/commands.hpp"
#include "launcher/commands.hpp"

int main(int argc, char** argv) {
  CLI::App app{"ddp-launch: launcher and job daemon for PyTorch DistributedDataParallel training"};
  app.require_subcommand(1);
  // DDP_VERSION is the top-level CMakeLists' project(VERSION), which also names the .deb.
  app.set_version_flag("--version", "ddp-launch " DDP_VERSION);
  std::string log_level;
  app.add_option("--log-level", log_level, "trace, debug, info, warn or error (default: $DDP_LOG_LEVEL or info)")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}));

  std::map<CLI::App*, ddp::cli::Runner> runners;
  for (auto command : {ddp::cli::add_store_command(app), ddp::cli::add_clean_command(app),
                        ddp::cli::add_run_command(app), ddp::cli::add_doctor_command(app),
                        ddp::cli::add_sbatch_command(app),
                        ddp::cli::add_report_command(app), ddp::cli::add_env_command(app)}) {
    runners[command.sub] = std::move(command.run);
  }
  // The job daemon and its clients (jobs/, the layer above the launcher, linked by this executable only).
  auto job_commands = ddp::cli::add_job_client_commands(app);
  job_commands.push_back(ddp::cli::add_daemon_command(app));
  for (auto& command : job_commands) runners[command.sub] = std::move(command.run);
  auto completion = ddp::cli::add_completion_command(app, DDP_VERSION);  // describes every command, when run
  runners[completion.sub] = std::move(completion.run);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help exits 0; any other parse error is a usage error, which every command documents as 2.
    return app.exit(e) == 0 ? 0 : 2;
  }
  ddp::init_logging(log_level);
  try {
    for (auto* sub : app.get_subcommands()) return runners.at(sub)();
  } catch (const ddp::UsageError& e) {
    spdlog::error("{}", e.what());
    return 2;
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return 1;
  }
  return 0;
}
