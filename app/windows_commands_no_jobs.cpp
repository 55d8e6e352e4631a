// The Windows build's commands without the job layer (-DDDP_WINDOWS_JOBS=OFF; the default is ON:
// windows_commands.cpp, the set with it).
#include "app/commands.hpp"

namespace ddp::app {

std::vector<cli::Command> add_commands(CLI::App& app) {
  return {cli::add_store_command(app),  cli::add_clean_command(app),  cli::add_run_command(app),
          cli::add_doctor_command(app), cli::add_report_command(app), cli::add_env_command(app)};
}

}  // namespace ddp::app
