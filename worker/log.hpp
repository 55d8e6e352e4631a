#pragma once
// Logging for worker programs: spdlog (stderr, set up by ddp::init_logging), and the primary-rank
// variant that keeps N ranks from printing the same progress line N times.
#include <spdlog/spdlog.h>

#include <utility>

#include "worker/context.hpp"

namespace ddp::worker {

// spdlog::info on rank 0 only.
template <typename... Args>
void log_primary(const WorkerContext& ctx, spdlog::format_string_t<Args...> format, Args&&... args) {
  if (ctx.is_primary()) spdlog::info(format, std::forward<Args>(args)...);
}

}  // namespace ddp::worker
