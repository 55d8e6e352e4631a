#pragma once
// EventLog: the --events file, one JSON object per line (common/events.hpp: the structs and their
// JSON, docs/events.md), flushed per event so a reader (the daemon, `tail -f`) sees each at once.
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

  void emit(events::Payload event);  // stamped with the current time

 private:
  FILE* file_ = nullptr;
};

}  // namespace ddp::launcher
