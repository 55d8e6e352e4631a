#pragma once
// Each subcommand of `ddp-launch` registers itself on the CLI11 app and returns the function
// that runs it once the command line has been parsed.
#include <CLI/CLI.hpp>

#include <functional>

namespace ddp::cli {

using Runner = std::function<int()>;

struct Command {
  CLI::App* sub = nullptr;
  Runner run;
};

Command add_store_command(CLI::App& app);
Command add_clean_command(CLI::App& app);
Command add_run_command(CLI::App& app);
Command add_doctor_command(CLI::App& app);
Command add_sbatch_command(CLI::App& app);
Command add_report_command(CLI::App& app);
Command add_env_command(CLI::App& app);

}  // namespace ddp::cli
