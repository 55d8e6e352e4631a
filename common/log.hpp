#pragma once
// Logging is spdlog, configured once per process here; everything else just calls spdlog::info(...).
#include <spdlog/spdlog.h>

#include <filesystem>
#include <string_view>

namespace ddp {

// Sets up the default logger: stderr, "[time] [level] message", level from `level` if non-empty,
// otherwise from $DDP_LOG_LEVEL, otherwise "info". Safe to call more than once.
void init_logging(std::string_view level = {});

// The default logger also appends to `file`, each line flushed (a Windows service has no stderr:
// `daemon --service` logs to <state-dir>/daemon.log). Call before other threads log.
void log_to_file(const std::filesystem::path& file);

}  // namespace ddp
