#pragma once
// The job layer's subcommands of `ddp-launch`: `daemon` and its clients `submit`, `list`,
// `status`, `logs`, `cancel`. jobs/ sits above launcher/: the executable links both and
// registers these next to launcher's commands.
#include <vector>

#include "launcher/commands/commands.hpp"

namespace ddp::cli {

Command add_daemon_command(CLI::App& app);
std::vector<Command> add_job_client_commands(CLI::App& app);

}  // namespace ddp::cli
