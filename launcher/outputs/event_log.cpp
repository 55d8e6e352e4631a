#include "launcher/outputs/event_log.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

#include "common/clock.hpp"
#include "common/error.hpp"

namespace ddp::launcher {

EventLog::EventLog(const std::string& path) {
  if (path.empty()) return;
  file_ = std::fopen(path.c_str(), "a");
  if (!file_) throw Error(fmt::format("cannot open the event file {}: {}", path, std::strerror(errno)));
}

EventLog::~EventLog() {
  if (file_) std::fclose(file_);
}

void EventLog::emit(events::Payload event) {
  if (!file_) return;
  auto line = events::to_line({std::move(event), now_seconds()});  // common/events.hpp: the one mapping
  std::fwrite(line.data(), 1, line.size(), file_);
  std::fflush(file_);
}

}  // namespace ddp::launcher
