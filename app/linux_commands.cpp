// The Linux build's commands: launcher/'s, the job layer's and bash completion (jobs/ sits above launcher/, which
// never includes or links it).
#include "app/cmd_completion.hpp"
#include "app/commands.hpp"
#include "jobs/commands.hpp"

namespace ddp::app {

std::vector<cli::Command> add_commands(CLI::App& app) {
  std::vector<cli::Command> commands{cli::add_store_command(app),  cli::add_clean_command(app),
                                     cli::add_run_command(app),    cli::add_doctor_command(app),
                                     cli::add_sbatch_command(app), cli::add_report_command(app),
                                     cli::add_env_command(app)};
  for (auto& command : cli::add_job_client_commands(app)) commands.push_back(std::move(command));
  commands.push_back(cli::add_daemon_command(app));
  // Last: it describes every command registered above, when it runs (DDP_VERSION: app/CMakeLists.txt).
  commands.push_back(cli::add_completion_command(app, DDP_VERSION));
  return commands;
}

}  // namespace ddp::app
