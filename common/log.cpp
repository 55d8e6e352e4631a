#include "common/log.hpp"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>

#include <cstdlib>
#include <string>

#include "common/env_contract.hpp"

namespace ddp {

void init_logging(std::string_view level) {
  std::string chosen(level);
  if (chosen.empty()) {
    if (const char* from_env = std::getenv(std::string(env::kLogLevel).c_str())) chosen = from_env;
  }
  if (chosen.empty()) chosen = "info";
  auto logger = spdlog::get("ddp-launch");
  if (!logger) {
    logger = spdlog::stderr_color_mt("ddp-launch");
    spdlog::set_default_logger(logger);
  }
  logger->set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%^%l%$] %v");
  logger->set_level(spdlog::level::from_str(chosen));
}

void log_to_file(const std::filesystem::path& file) {
  auto logger = spdlog::default_logger();
  auto sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(file.string(), false);
  sink->set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%l] %v");
  logger->sinks().push_back(std::move(sink));
  logger->flush_on(spdlog::level::trace);
}

}  // namespace ddp
