#include "app/cmd_completion.hpp"

#include <iostream>
#include <memory>

#include "app/bash_completion.hpp"
#include "app/cli_tree.hpp"

namespace ddp::cli {

Command add_completion_command(CLI::App& app, std::string version) {
  auto* sub = app.add_subcommand("completion",
                                 "Print the shell completion script (the .deb installs it; else: "
                                 "source <(ddp-launch completion bash))");
  auto shell = std::make_shared<std::string>();
  sub->add_option("SHELL", *shell, "The shell: bash")->required()->check(CLI::IsMember({"bash"}));
  return {sub, [&app, shell, version = std::move(version)] {  // shell: CLI11 writes through it
            std::cout << bash_completion_script(describe_cli(app), "ddp-launch", version);
            return 0;
          }};
}

}  // namespace ddp::cli
