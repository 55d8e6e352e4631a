// The Windows build's commands (docs/windows.md): launcher/'s that run there and the job layer's
// (the daemon on loopback TCP with its token). Slurm's sbatch and bash completion stay Linux-only
// (docs/windows.md's table says why).
#include "app/commands.hpp"
#include "jobs/commands.hpp"

namespace ddp::app {

std::vector<cli::Command> add_commands(CLI::App& app) {
  std::vector<cli::Command> commands{cli::add_store_command(app),  cli::add_clean_command(app),
                                     cli::add_run_command(app),    cli::add_doctor_command(app),
                                     cli::add_report_command(app), cli::add_env_command(app)};
  for (auto& command : cli::add_job_client_commands(app)) commands.push_back(std::move(command));
  commands.push_back(cli::add_daemon_command(app));
  return commands;
}

}  // namespace ddp::app
