// The Windows build's commands (docs/windows.md). The daemon, Slurm and the C++ worker SDK stay
// Linux-only (the README's platform table).
#include "app/commands.hpp"

namespace ddp::app {

std::vector<cli::Command> add_commands(CLI::App& app) {
  return {cli::add_store_command(app),  cli::add_clean_command(app),  cli::add_run_command(app),
          cli::add_doctor_command(app), cli::add_report_command(app), cli::add_env_command(app)};
}

}  // namespace ddp::app
