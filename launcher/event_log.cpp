#include "launcher/event_log.hpp"

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

void EventLog::emit(const std::string& name, nlohmann::json fields) {
  if (!file_) return;
  fields["event"] = name;
  fields["time"] = now_seconds();
  // A worker's bytes (an error file's message, a node's leave reason) need not be UTF-8: replaced,
  // never a throw; NUL is escaped (\u0000) like any control character.
  auto line = fields.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  std::fwrite(line.data(), 1, line.size(), file_);
  std::fflush(file_);
}

}  // namespace ddp::launcher
