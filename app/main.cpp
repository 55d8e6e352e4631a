// ddp-launch: one binary, subcommands. The entry point sits above every layer: it registers the
// commands of this build (app/commands.hpp: launcher/'s and the job layer's on Linux).
#include <CLI/CLI.hpp>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "app/commands.hpp"
#include "common/error.hpp"
#include "common/log.hpp"
#include "platform/arguments.hpp"

int main(int argc, char** argv) {
  CLI::App app{"ddp-launch: launcher and job daemon for PyTorch DistributedDataParallel training"};
  app.require_subcommand(1);
  // DDP_VERSION is the top-level CMakeLists' project(VERSION), which also names the .deb.
  app.set_version_flag("--version", "ddp-launch " DDP_VERSION);
  std::string log_level;
  app.add_option("--log-level", log_level, "trace, debug, info, warn or error (default: $DDP_LOG_LEVEL or info)")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}));

  std::map<CLI::App*, ddp::cli::Runner> runners;
  for (auto& command : ddp::app::add_commands(app)) runners[command.sub] = std::move(command.run);

  // UTF-8 arguments (Windows: from the UTF-16 command line, not the code page's argv) and console.
  ddp::platform::use_utf8_console();
  const auto args = ddp::platform::utf8_arguments(argc, argv);
  std::vector<const char*> arg_ptrs;
  for (const auto& a : args) arg_ptrs.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(arg_ptrs.size()), arg_ptrs.data());
  } catch (const CLI::ParseError& e) {
    // --help exits 0; any other parse error is a usage error, which every command documents as 2.
    return app.exit(e) == 0 ? 0 : 2;
  }
  ddp::init_logging(log_level);
  try {
    for (auto* sub : app.get_subcommands()) return runners.at(sub)();
  } catch (const ddp::UsageError& e) {
    spdlog::error("{}", e.what());
    return 2;
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return 1;
  }
  return 0;
}
