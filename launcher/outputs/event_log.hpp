#pragma once
// EventLog: the --events file, one JSON object per line (common/events.hpp: the structs and their
// JSON, docs/events.md), flushed per event so a reader (the daemon, `tail -f`) sees each at once.
#include <cstddef>
#include <cstdio>
#include <string>

#include "common/events.hpp"

namespace ddp::launcher {

class EventLog {
 public:
  // Appends to `path`; an empty path writes nothing. Throws Error when the file cannot be opened.
  explicit EventLog(const std::string& path);
  ~EventLog();
  EventLog(const EventLog&) = delete;
  EventLog& operator=(const EventLog&) = delete;

  // Stamped with the current time. A line that cannot be written (a full disk) is said on stderr,
  // once until a write succeeds again, and counted; the run goes on.
  void emit(events::Payload event);
  std::size_t lost() const { return lost_; }

 private:
  FILE* file_ = nullptr;
  std::string path_;
  std::size_t lost_ = 0;
  bool failing_ = false;
};

}  // namespace ddp::launcher
