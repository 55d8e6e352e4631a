#pragma once
// The bash completion script of a command tree (`ddp-launch completion bash`; the .deb installs
// its output as /usr/share/bash-completion/completions/ddp-launch).
#include <string>
#include <string_view>

#include "app/cli_tree.hpp"

namespace ddp::cli {

// Completes subcommands, their options, an option's choices after it, and file names where a
// value, a positional or (after run's SCRIPT) the program's own arguments go.
std::string bash_completion_script(const CliCommand& root, std::string_view program, std::string_view version);

}  // namespace ddp::cli
