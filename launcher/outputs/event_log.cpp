#include "launcher/outputs/event_log.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>

#include "common/clock.hpp"
#include "common/error.hpp"

namespace ddp::launcher {

EventLog::EventLog(const std::string& path) : path_(path) {
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
  errno = 0;
  const bool written = std::fwrite(line.data(), 1, line.size(), file_) == line.size();
  if (std::fflush(file_) == 0 && written) {
    failing_ = false;
    return;
  }
  const int error = errno;
  std::clearerr(file_);
  ++lost_;
  if (!failing_) {
    spdlog::error(
        "cannot write the event file {} ({}): its readers (the daemon) miss this event and the next ones "
        "until it can be written again; free space there",
        path_, std::strerror(error ? error : EIO));
  }
  failing_ = true;
}

}  // namespace ddp::launcher
