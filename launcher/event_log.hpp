#pragma once
// EventLog: the --events file, one JSON object per line ({"event": name, "time": …, fields…}),
// flushed per event so a reader (the daemon, `tail -f`) sees each at once.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

namespace ddp::launcher {

class EventLog {
 public:
  // Appends to `path`; an empty path writes nothing. Throws Error when the file cannot be opened.
  explicit EventLog(const std::string& path);
  ~EventLog();
  EventLog(const EventLog&) = delete;
  EventLog& operator=(const EventLog&) = delete;

  void emit(const std::string& name, nlohmann::json fields = nlohmann::json::object());

 private:
  FILE* file_ = nullptr;
};

}  // namespace ddp::launcher
