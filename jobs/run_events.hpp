#pragma once
// RunEventReader: a local run's supervisor event stream (run-<n>/events.jsonl) as the daemon takes
// it in: watched (platform/file_watch.hpp, no polling), read past the offset the job's record
// keeps and parsed (common/events.hpp: complete lines only; an unreadable line is logged and
// skipped). The lifecycle records their rows with the new offset (job_persistence.cpp: at once, or
// rebuilt from the file once a full state directory takes writes again) and applies them. A
// restarted daemon replays the part it had applied.
#include <filesystem>
#include <functional>
#include <optional>
#include <vector>

#include "common/events.hpp"
#include "jobs/job_db.hpp"
#include "platform/file_watch.hpp"

namespace ddp::jobs {

class RunEventReader {
 public:
  explicit RunEventReader(platform::FileWatch& files) : files_(files) {}

  static std::filesystem::path events_file(const std::filesystem::path& run_dir) { return run_dir / "events.jsonl"; }

  // on_change runs on the loop whenever the run's event file is written; nullopt when it cannot be
  // watched (missing).
  std::optional<int> watch(const std::filesystem::path& run_dir, std::function<void()> on_change);
  void unwatch(int token);

  // The complete lines past rec.events_offset, in order, and the bytes [from, to) they took;
  // rec.events_offset advanced to `to` (the caller writes the record and the rows). nullopt when
  // there is no new complete line.
  struct NewEvents {
    std::vector<events::Event> events;
    std::int64_t from = 0, to = 0;
  };
  std::optional<NewEvents> read_new(JobRecord& rec);

  // The events before rec.events_offset: what a daemon had applied before it stopped.
  static std::vector<events::Event> replay(const JobRecord& rec);

 private:
  platform::FileWatch& files_;
};

}  // namespace ddp::jobs
