#pragma once
// `ddp-launch completion bash`: prints the completion script of the whole command line.
#include <string>

#include "launcher/commands/commands.hpp"

namespace ddp::cli {

// `app` is the program's root; the script describes it as it stands when the command runs.
Command add_completion_command(CLI::App& app, std::string version);

}  // namespace ddp::cli
