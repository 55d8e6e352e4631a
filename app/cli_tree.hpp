#pragma once
// The command line as data: every subcommand, option and choice that CLI11 knows, read from the
// same CLI::App that parses argv and prints --help. Shell completion is generated from it, so
// it cannot drift from the options the binary accepts.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace ddp::cli {

struct CliOption {
  std::vector<std::string> names;    // "-f", "--follow"
  bool takes_value = false;          // false for a flag
  std::vector<std::string> choices;  // an IsMember set ({trace,debug,...}); empty when free
};

struct CliCommand {
  std::string name;  // empty for the program itself
  std::vector<CliOption> options;
  std::vector<CliCommand> subcommands;
  // prefix_command(): from the first positional on, the words belong to the program it starts
  // (run's SCRIPT and its arguments), not to us.
  bool rest_is_command = false;
};

// Hidden options and subcommands (an empty group) are left out; so are positionals.
CliCommand describe_cli(const CLI::App& app);

// "TEXT:{a,b,c}" (the type name CLI11 prints, with an IsMember validator) → {a, b, c}.
std::vector<std::string> choices_in_type_name(const std::string& type_name);

}  // namespace ddp::cli
