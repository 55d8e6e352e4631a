#pragma once
// The commands this build of ddp-launch has: linux_commands.cpp (every layer) or
// windows_commands.cpp (the Windows build's: docs/windows.md), chosen by CMake.
#include <CLI/CLI.hpp>
#include <vector>

#include "launcher/commands/commands.hpp"

namespace ddp::app {

std::vector<cli::Command> add_commands(CLI::App& app);

}  // namespace ddp::app
