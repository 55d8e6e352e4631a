#include "common/log.hpp"

#include "common/env_contract.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <cstdlib>
#include <string>

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

}  // namespace ddp
