// `ddp-launch env`: the exports one rank needs for a manual init_process_group("env://") against
// a store that already runs (`ddp-launch store`), printed for `eval "$(ddp-launch env ...)"` (sh),
// a cmd.exe `for /f` or a batch file (cmd), or `Invoke-Expression` (powershell); the default is the
// build's platform: sh on Linux, cmd on Windows.
#include <fmt/format.h>

#include <iostream>
#include <memory>

#include "launcher/commands/commands.hpp"
#include "launcher/workers/env_exports.hpp"
#include "platform/host.hpp"

namespace ddp::cli {

Command add_env_command(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "env",
      "Print the environment one rank needs for init_process_group(init_method=\"env://\") against a "
      "running `ddp-launch store` (shell exports)");
  const bool windows = platform::this_os() == platform::Os::Windows;
  struct Args {
    std::string store;
    std::string shell;
    launcher::EnvExportsInput in;
  };
  auto a = std::make_shared<Args>();
  a->shell = windows ? "cmd" : "sh";
  sub->add_option("--store", a->store, "HOST:PORT of the running store (what `ddp-launch store` listens on)")
      ->required();
  sub->add_option("--rank", a->in.rank, "This process's global rank, 0..WORLD_SIZE-1")->required();
  sub->add_option("--world-size", a->in.world_size, "Number of ranks in the job")->required();
  sub->add_option("--local-rank", a->in.local_rank, "Rank on this machine (default: --rank, i.e. one machine)");
  sub->add_option("--local-world-size", a->in.local_world_size,
                  "Ranks on this machine (default: --world-size, i.e. one machine)");
  sub->add_option("--restart-count", a->in.restart_count,
                  "Attempt number (TORCHELASTIC_RESTART_COUNT); every rank of an attempt must agree")
      ->capture_default_str();
  sub->add_option("--shell", a->shell,
                  "How to print them: sh (export lines for eval), cmd (set lines for cmd.exe), powershell "
                  "($env: lines for Invoke-Expression)")
      ->check(CLI::IsMember({"sh", "cmd", "powershell"}))
      ->capture_default_str();
  if (windows) {
    sub->footer(
        "Example (two ranks on one machine, cmd.exe):\n"
        "  start ddp-launch store --port 29500\n"
        "  for /f \"delims=\" %l in ('ddp-launch env --store 127.0.0.1:29500 --rank 0 --world-size 2') do %l\n"
        "  start python train.py\n"
        "and the same with --rank 1 in a second cmd.exe; in a batch file write %%l. PowerShell:\n"
        "  ddp-launch env --shell powershell --store 127.0.0.1:29500 --rank 0 --world-size 2 | Out-String | "
        "Invoke-Expression\n"
        "train.py calls torch.distributed.init_process_group(\"gloo\", init_method=\"env://\").");
  } else {
    sub->footer(
        "Example (two ranks on one machine):\n"
        "  ddp-launch store --port 29500 &\n"
        "  (eval \"$(ddp-launch env --store 127.0.0.1:29500 --rank 0 --world-size 2)\"; python3 train.py) &\n"
        "  (eval \"$(ddp-launch env --store 127.0.0.1:29500 --rank 1 --world-size 2)\"; python3 train.py)\n"
        "where train.py calls torch.distributed.init_process_group(\"gloo\", init_method=\"env://\").");
  }
  auto run = [a]() -> int {
    launcher::set_store_address(a->in, a->store);
    auto exports = launcher::env_exports(a->in);
    if (a->shell == "cmd") {
      std::cout << launcher::render_cmd_exports(exports);
    } else if (a->shell == "powershell") {
      std::cout << launcher::render_powershell_exports(exports);
    } else {
      std::cout << launcher::render_sh_exports(exports);
    }
    return 0;
  };
  return {sub, run};
}

}  // namespace ddp::cli
